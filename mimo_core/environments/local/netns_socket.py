"""A listening TCP socket on 127.0.0.1 inside a sandbox's own network namespace, held by the runner.

A CLI agent in a bwrap sandbox reaches its model through the runner's recording proxy, but the
sandbox's loopback is its own: the host's 127.0.0.1 is not there, by design. So the proxy listens in the
sandbox's namespace instead: a short helper process enters that namespace (`nsenter`), makes the
listening socket and hands its descriptor back over a unix socket pair (SCM_RIGHTS), then exits. The
runner serves on it; nothing of the host's loopback becomes reachable, and nothing keeps running in the
sandbox.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

from mimo_core.errors import SandboxError

_HELPER = (
    "import socket, sys; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(64); "
    "socket.send_fds(socket.socket(fileno=int(sys.argv[1])), [b'x'], [s.fileno()])"
)


def listen_in_netns(pid: int) -> socket.socket:
    """A listening socket on 127.0.0.1:<free port> in the network namespace of process `pid`."""
    if shutil.which("nsenter") is None:
        raise SandboxError("nsenter (util-linux) is needed to reach a CLI agent inside its bwrap sandbox")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    # Root enters the namespace directly; anyone else first joins the user namespace that owns it.
    enter = ["--net"] if os.geteuid() == 0 else ["--user", "--net", "--preserve-credentials"]
    try:
        res = subprocess.run(
            ["nsenter", "--target", str(pid), *enter, sys.executable, "-c", _HELPER, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            capture_output=True,
            timeout=60,
        )
        theirs.close()
        if res.returncode != 0:
            raise SandboxError(
                f"could not open the recording proxy's port inside the sandbox: "
                f"{res.stderr.decode(errors='replace').strip()[-300:]}"
            )
        ours.settimeout(10)
        _, fds, _, _ = socket.recv_fds(ours, 1, 1)
    finally:
        ours.close()
        theirs.close()
    if not fds:
        raise SandboxError("could not open the recording proxy's port inside the sandbox: no descriptor came back")
    return socket.socket(fileno=fds[0])
