"""Commands in an E2B sandbox through the SDK: one envd process per command, its output streamed back.

Each command is the argv it is given (`sh -c`, never a login shell: see `start`). The SDK hands output
over as text (UTF-8, undecodable bytes replaced), so what must come back byte for byte (`exec_bytes`: tar
archives, file reads) travels as base64. The SDK's own command timeout is off: ours
kills by marker (container/base.py) and the process' stream then ends.
"""

from __future__ import annotations

import base64
import queue
import secrets
import threading
from collections.abc import Callable
from typing import Any

from mimo_core.errors import SandboxError

# Every process of the sandbox but PID 1, envd (and its helpers of the same name), this script and its
# ancestors: what the agent (or code under test) left. `kill -9 -1` as on docker would end envd itself.
_SCAN = (
    'spare=" 1 $$ "; q=$$; while [ -n "$q" ] && [ "$q" != 0 ] && [ "$q" != 1 ]; do '
    'read -r l < /proc/$q/stat 2>/dev/null || break; r=${l##*) }; set -- $r; q=$2; spare="$spare$q "; done; '
    'scan() { n=0; for p in /proc/[0-9]*; do i=${p#/proc/}; case "$spare" in *" $i "*) continue;; esac; '
    'read -r l < $p/stat 2>/dev/null || continue; r=${l##*) }; set -- $r; [ "$1" = Z ] && continue; '
    'c=$(cat $p/comm 2>/dev/null); [ "$c" = envd ] && continue; '
    "if [ \"$2\" = 1 ] && [ \"$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\" = 'sleep 86400 ' ]; then continue; fi; "
    'n=$((n+1)); [ "$kill" = 1 ] && kill -9 $i 2>/dev/null; done; }; '
)
COUNT_SCRIPT = _SCAN + "kill=0; scan; echo $n"
INTERRUPT_SCRIPT = _SCAN + "kill=1; scan; echo $n"  # one pass, as `kill -9 -1`: what starts after lives
KILL_ALL_SCRIPT = (
    _SCAN + "kill=0; scan; first=$n; rr=0; while [ $n != 0 ] && [ $rr -lt 20 ]; do kill=1; scan; sleep 0.05; "
    "kill=0; scan; rr=$((rr+1)); done; echo $first $n"
)


def start(
    sandbox: Any,
    argv: list[str],
    user: str,
    envs: dict[str, str] | None = None,
    stdin: bool = False,
    on_stdout: Callable[[str], None] | None = None,
) -> tuple[Any, threading.Thread, queue.Queue]:
    """Start `argv` in the background; a thread feeds its output to `on_stdout` and puts (exit code or None,
    error or None) on the returned queue when it ends.

    `commands.run` would run it as `bash -l -c`, which reads the profiles: files an agent can write
    (~/.bash_profile, /etc/profile.d) would then run in every later command, grading's too. So the process
    is started as `commands.run` starts it (the SDK's envd client, headers and handle, e2b 2.63), with our
    argv instead of the login shell."""
    from e2b import CommandExitException
    from e2b.connection_config import KEEPALIVE_PING_HEADER, KEEPALIVE_PING_INTERVAL_SEC
    from e2b.envd.client_sync import as_stream
    from e2b.envd.process import process_pb
    from e2b.envd.utils import authentication_header, timeout_to_ms

    done: queue.Queue = queue.Queue(maxsize=1)
    sdk = sandbox.commands
    try:
        request = process_pb.StartRequest(
            process=process_pb.ProcessConfig(cmd=argv[0], args=argv[1:], envs=envs or {}), stdin=stdin
        )
        headers = {
            **authentication_header(sdk._envd_version, user),
            KEEPALIVE_PING_HEADER: str(KEEPALIVE_PING_INTERVAL_SEC),
        }
        events = as_stream(sdk._rpc.start(request, headers=headers, timeout_ms=timeout_to_ms(0)))
        handle = sdk._create_handle(events, "start process", False)
    except Exception as e:
        raise sdk_error(e, "starting a command") from None

    def wait() -> None:
        try:
            res = handle.wait(on_stdout=on_stdout, on_stderr=on_stdout)
            done.put((res.exit_code, None))
        except CommandExitException as e:
            done.put((e.exit_code, None))
        except Exception as e:
            done.put((None, e))

    thread = threading.Thread(target=wait, name="e2b-command", daemon=True)
    thread.start()
    return handle, thread, done


def sdk_error(e: Exception, what: str) -> SandboxError:
    """An SDK failure as the sandbox's failure (an infrastructure error), with the SDK's one line."""
    line = (str(e).splitlines() or [type(e).__name__])[0][:300]
    return SandboxError(f"e2b: {what} failed: {type(e).__name__}: {line}")


def exec_bytes(env: Any, script: str, stdin: bytes = b"", timeout: float = 300.0) -> tuple[int, bytes, str]:
    """(exit code, stdout, stderr) of `sh -c script`; `stdin` uploaded first and given as its stdin."""
    sandbox = env._require()
    src = "/dev/null"
    if stdin:
        src = f"/tmp/.mimo-in-{secrets.token_hex(6)}"
        try:
            sandbox.files.write(src, stdin, user=env.options.user, use_octet_stream=True)
        except Exception as e:
            raise sdk_error(e, "uploading a command's input") from None
    inner = (
        f'o=$(mktemp) e=$(mktemp); sh -c "$1" <{src} >"$o" 2>"$e"; rc=$?; base64 -w0 "$o"; echo; '
        f'base64 -w0 "$e"; rm -f "$o" "$e" {src if stdin else ""}; exit $rc'
    )
    chunks: list[str] = []
    _, thread, done = start(sandbox, ["sh", "-c", inner, "sh", script], env.options.user, on_stdout=chunks.append)
    try:
        code, error = done.get(timeout=timeout + 30)
    except queue.Empty:
        raise SandboxError(f"{env._where()}: a command did not return within {timeout + 30:.0f}s") from None
    if error is not None:
        raise sdk_error(error, "a command")
    out, _, err = "".join(chunks).partition("\n")
    try:
        return code, base64.b64decode(out.strip()), base64.b64decode(err.strip()).decode(errors="replace")
    except ValueError:
        return code if code else 1, b"", f"unreadable command output: {out[:200]}"
