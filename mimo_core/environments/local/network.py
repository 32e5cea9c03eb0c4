"""Outbound network for a bubblewrap sandbox, without the host's loopback.

A sandbox always has its own network namespace (so no abstract unix socket and no 127.0.0.1 service of
the host is reachable). A row that allows network gets `slirp4netns` on that namespace: user-mode
networking with outbound TCP/UDP through the host's stack, and `--disable-host-loopback`, so the
gateway address does not lead to the host's 127.0.0.1. DNS goes to slirp's forwarder (10.0.2.3).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess

from mimo_core.errors import SandboxError

RESOLV_CONF = "nameserver 10.0.2.3\noptions edns0\n"  # slirp4netns' built-in DNS forwarder
_READY_TIMEOUT = 30.0


class Slirp:
    """One slirp4netns process serving one sandbox's network namespace."""

    def __init__(self, child_pid: int, log_path: str) -> None:
        self.child_pid = child_pid
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self._exit_w = -1  # the write end of slirp4netns' --exit-fd pipe, held only by this process

    def start(self) -> None:
        if shutil.which("slirp4netns") is None:
            raise SandboxError(
                "the task allows network, and a bwrap sandbox gets it through slirp4netns, which "
                "is not installed: apt-get install slirp4netns"
            )
        ready_r, ready_w = os.pipe()
        # slirp4netns ends when this pipe has no writer left: when stop() closes it, or when the runner
        # dies, even by SIGKILL. (Its own session, so a Ctrl-C meant for the runner does not reach it.)
        exit_r, self._exit_w = os.pipe()
        try:
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    [
                        "slirp4netns",
                        "--configure",
                        "--mtu=65520",
                        "--disable-host-loopback",
                        "--ready-fd",
                        str(ready_w),
                        "--exit-fd",
                        str(exit_r),
                        str(self.child_pid),
                        "tap0",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    pass_fds=(ready_w, exit_r),
                    close_fds=True,
                    start_new_session=True,
                )
            os.close(ready_w)
            ready_w = -1
            import select

            readable, _, _ = select.select([ready_r], [], [], _READY_TIMEOUT)
            got = os.read(ready_r, 1) if readable else b""
        finally:
            os.close(ready_r)
            os.close(exit_r)
            if ready_w >= 0:
                os.close(ready_w)
        if got != b"1":
            self.stop()
            raise SandboxError(f"slirp4netns did not bring up the sandbox's network: {self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-400:].decode(errors="replace").strip() or "no message"
        except OSError:
            return "no message"

    def stop(self) -> None:
        if self._exit_w >= 0:
            os.close(self._exit_w)
            self._exit_w = -1
        proc, self.proc = self.proc, None
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()
