"""Checks of the CLI's inputs that must fail before anything starts: one line naming the flag and the path."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from mimo_core.base.redaction import is_secret_name
from mimo_core.config import _VAR
from mimo_core.errors import ConfigError


def check_output_dir(path: Path) -> Path:
    """`-o` (as the request resolved it) must be a folder we can create and write: not a file, not under a
    file, not read-only."""
    text = str(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"-o {text}: is a file, not a folder")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"-o {text}: {parent} is a file, so no folder can be made under it")
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        raise ConfigError(f"-o {text}: cannot write there ({e.strerror or e})") from None
    return path


def check_override_secrets(override: Any, where: str = "--override-config") -> None:
    """A key given literally on the command line is readable by every process on the host (and by the
    agent's commands under `sandbox: none`) through /proc/*/cmdline: ask for a `${VAR}` reference."""
    if isinstance(override, dict):
        for k, v in override.items():
            path = f"{where}: {k}" if where == "--override-config" else f"{where}.{k}"
            if is_secret_name(str(k)) and isinstance(v, str) and v and not _VAR.fullmatch(v.strip()):
                raise ConfigError(
                    f"{path}: a secret on the command line is visible to every process; put it "
                    f'in an environment variable and write "${{VAR}}" here'
                )
            check_override_secrets(v, path)
    elif isinstance(override, list):
        for item in override:
            check_override_secrets(item, where)


def check_not_empty(n_tasks: int, dataset: str, selected: bool, allow_empty: bool) -> None:
    """An empty dataset is almost always a wrong path or filter: say so instead of reporting success."""
    if n_tasks == 0 and not allow_empty:
        how = " after --filter/--slice" if selected else ""
        raise ConfigError(f"--dataset {dataset}: 0 rows{how}; nothing to run (--allow-empty accepts this)")
