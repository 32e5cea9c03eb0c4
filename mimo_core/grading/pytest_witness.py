"""A witness inside every pytest run of a verifier: code under test cannot force pytest's exit status.

Verifiers that score by pytest's exit code (`pytest ...; [ $? = 0 ] && echo 1 > reward.txt`) trust the
process's status, which code under test can set: `atexit.register(lambda: os._exit(0))` after failures,
or `os._exit(0)` inside a test. The witness (`witness_sitecustomize.py`, the `sitecustomize` of a folder
put first on the verifier's PYTHONPATH, made for this verifier run) marks the start and the normal end of
every pytest process; a process that started but never reached its end ended abnormally, and the verdict
is void (`forged_verdict`, reward 0). A verifier that sets its own PYTHONPATH, runs Python isolated
(`-I`, `-E`, `-S`) or runs no pytest gets no witness and no claim; nothing else changes for it.
"""

from __future__ import annotations

import json
import shlex
import uuid
from pathlib import Path

from mimo_core.environments.base import Environment, read_head
from mimo_core.grading.grade import Finding

WITNESS = "witness_sitecustomize.py"


def _plugin() -> bytes:
    return Path(__file__).with_name(WITNESS).read_bytes()


class PytestWitness:
    """Set up before a verifier command (`env_vars` for it), read after it (`findings`)."""

    def __init__(self, env: Environment, command_env: dict[str, str] | None = None) -> None:
        """`command_env`: the variables the verifier command gets on top of the sandbox's (they win)."""
        self.env = env
        self.dir = f"{env.scratch_dir}/witness-{uuid.uuid4().hex[:8]}"
        env.write_file(f"{self.dir}/sitecustomize.py", _plugin())
        res = env.execute('printf "%s" "${PYTHONPATH-}"', timeout=60, env=command_env or None)
        self.vars = {
            "PYTHONPATH": ":".join(p for p in (self.dir, res.output.strip()) if p),
            "MIMO_WITNESS_DIR": self.dir,
        }

    def findings(self) -> list[Finding]:
        """Call once the verifier ended (not timed out) and its processes are dead."""
        listing = self.env.execute(f"ls -1 {shlex.quote(self.dir)} 2>/dev/null", timeout=60)
        abnormal = []
        for name in listing.output.split():
            if not name.endswith(".json"):
                continue
            try:
                state = json.loads(read_head(self.env, f"{self.dir}/{name}", 4096).data)
            except Exception:  # unreadable or not JSON (each backend reports a missing file its own way)
                continue
            if isinstance(state, dict) and not state.get("exited"):
                abnormal.append(name[:-5])
        if not abnormal:
            return []
        shown = ", ".join(f"pid {pid}" for pid in abnormal[:5])
        return [
            Finding(
                kind="forged_verdict",
                zeroes=True,
                detail=f"a pytest process ended without its normal exit (os._exit or a kill): {shown}",
            )
        ]
