"""Apply a patch inside a sandbox: `git apply`, then `patch -p1` for patches git is too strict about."""

from __future__ import annotations

import shlex
import uuid

from mimo_core.environments.base import Environment


def apply_patch(env: Environment, patch: str, cwd: str, timeout: float = 300.0) -> tuple[bool, str]:
    """Returns (applied, log). A failed attempt leaves the tree untouched (both tools are tried dry first)."""
    if not patch.strip():
        return True, "empty patch: nothing to apply"
    if not patch.endswith("\n"):
        patch += "\n"
    path = f"{env.scratch_dir}/patch-{uuid.uuid4().hex[:12]}.diff"
    env.write_file(path, patch.encode())
    q = shlex.quote(path)
    log: list[str] = []
    attempts = [
        (f"git apply --check --whitespace=nowarn {q}", f"git apply --whitespace=nowarn {q}"),
        (f"patch --batch --forward -p1 --dry-run -i {q}", f"patch --batch --forward -p1 -i {q}"),
    ]
    try:
        for check, apply in attempts:
            dry = env.execute(check, timeout=timeout, cwd=cwd)
            log.append(f"$ {check}\n{dry.output}")
            if dry.returncode != 0:
                continue
            res = env.execute(apply, timeout=timeout, cwd=cwd)
            log.append(f"$ {apply}\n{res.output}")
            if res.returncode == 0:
                return True, "\n".join(log)
        return False, "\n".join(log)
    finally:
        env.execute(f"rm -f {q}", timeout=30)
