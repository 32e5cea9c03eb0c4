"""Harbor task folders (schema 1.3: task.toml, instruction.md, environment/, tests/, solution/) → rows.

Used by `scripts/convert_deepswe.py` and by the loader, which reads a folder of Harbor tasks directly.
Rows carry everything grading needs, file contents included, so a converted JSONL stands alone.
"""

from __future__ import annotations

import base64
import io
import os
import re
import tarfile
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from mimo_core.base.strict_model import NumbersAreNumbers
from mimo_core.errors import DatasetError

NO_NETWORK = {"no-network", "none", "no_network", "disabled"}
REPO_SEED_DIR = "repo"  # environment/repo/: the starting files, embedded for backends without the image


class _Open(NumbersAreNumbers):
    model_config = ConfigDict(extra="allow")


class _Collect(_Open):
    command: str
    timeout_sec: float = 300.0


class _Resources(_Open):
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    build_timeout_sec: float | None = None


class _Verifier(_Open):
    network_mode: str = "bridge"
    environment_mode: str = "shared"
    timeout_sec: float = 1800.0
    env: dict[str, str] = Field(default_factory=dict)
    environment: _Resources = Field(default_factory=_Resources)
    collect: list[_Collect] = Field(default_factory=list)


class _Agent(_Open):
    network_mode: str = "bridge"
    timeout_sec: float | None = None


class _Environment(_Resources):
    docker_image: str | None = None
    gpus: int | None = None
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None


class _Solution(_Open):
    env: dict[str, str] = Field(default_factory=dict)


class HarborToml(_Open):
    schema_version: str = "1.0"
    artifacts: list[str] = Field(default_factory=list)
    task: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: _Verifier = Field(default_factory=_Verifier)
    agent: _Agent = Field(default_factory=_Agent)
    environment: _Environment = Field(default_factory=_Environment)
    solution: _Solution = Field(default_factory=_Solution)


def is_harbor_task(path: Path) -> bool:
    return (path / "task.toml").is_file()


def is_harbor_dir(path: Path) -> bool:
    """A task folder itself, or a folder holding task folders."""
    return is_harbor_task(path) or any(is_harbor_task(p) for p in path.iterdir() if p.is_dir())


def files_map(folder: Path) -> dict[str, Any]:
    """Every file under `folder`: text as is, binary as {content, encoding: base64}."""
    out: dict[str, Any] = {}
    if not folder.is_dir():
        return out
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        rel = path.relative_to(folder).as_posix()
        try:
            out[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            out[rel] = {"content": base64.b64encode(data).decode(), "encoding": "base64"}
    return out


def tar_folder(folder: Path) -> str:
    """A reproducible base64 .tar.gz (sorted names, zero times and owners): same folder, same bytes."""
    buf = io.BytesIO()
    import gzip

    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for path in sorted(folder.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path.is_file():
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
    return base64.b64encode(buf.getvalue()).decode()


# `/tests/x`, `$TESTS_DIR/x` or `${TESTS_DIR}/x` as a whole word of a command: it starts the word (after
# a space, a quote, `=`, `(`, ...) and ends it. A relative `tests/x` is usually the repository's own, and
# a glob that merely contains `/tests/` (vitest's `--exclude="**/tests/new/**"`) names no file at all.
_TESTS_REF = re.compile(
    r"(?:(?<![^\s\"'=(:;|&<>`,])/tests/|\$\{?TESTS_DIR\}?/)"
    r"([\w.\-/]*[\w\-])(?![\w.\-/*?\[{])"
)
VERIFIER_ENTRY = "test.sh"
# DeepSWE's layout (see its README): the grader reads the f2p/p2p ids from config.json beside it
IMPLIED = {"grader.py": "config.json"}


def missing_verifier_files(test_files: dict[str, Any]) -> list[str]:
    """Files the verifier needs that `tests/` lacks: `test.sh` itself, every `/tests/<path>` its text
    files name (a script reading /tests/config.json needs it), and `config.json` beside DeepSWE's
    `grader.py`. Paths are relative to the task folder."""
    present = set(test_files)
    missing = set() if VERIFIER_ENTRY in present else {VERIFIER_ENTRY}
    missing |= {needed for have, needed in IMPLIED.items() if have in present and needed not in present}
    for value in test_files.values():
        if not isinstance(value, str):
            continue
        for rel in _TESTS_REF.findall(value):
            if rel not in present and not any(p.startswith(rel.rstrip("/") + "/") for p in present):
                missing.add(rel)
    return sorted(f"tests/{rel}" for rel in missing)


def _cwd(toml: HarborToml) -> str:
    if toml.environment.workdir:
        return toml.environment.workdir
    for hook in toml.verifier.collect:
        m = re.match(r"\s*cd\s+(/[^\s;&|]*)", hook.command)
        if m:
            return m.group(1)
    return "/app"


def _read_toml(task_dir: Path) -> HarborToml:
    where = task_dir / "task.toml"
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise DatasetError(f"{where}: invalid TOML: {e}") from None
    try:
        return HarborToml.model_validate(data)
    except ValidationError as e:
        parts = [f"{where}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()]
        raise DatasetError("; ".join(parts)) from None


def convert_task(task_dir: Path, relative_to: Path | None = None) -> dict[str, Any]:
    """One Harbor task folder → one row. Paths in the row are relative to `relative_to` when given."""
    task_dir = Path(task_dir)
    toml = _read_toml(task_dir)
    instruction = task_dir / "instruction.md"
    if not instruction.is_file():
        raise DatasetError(f"{task_dir}: instruction.md is missing")
    env_dir, sol_dir = task_dir / "environment", task_dir / "solution"
    solution = files_map(sol_dir)
    gold = solution.get("solution.patch") or next(
        (v for k, v in solution.items() if k.endswith((".patch", ".diff")) and isinstance(v, str)), None
    )
    script = solution.get("solve.sh")
    tests = files_map(task_dir / "tests")
    name = str(toml.task.get("name") or "")
    instance_id = str(toml.metadata.get("task_id") or name.rsplit("/", 1)[-1] or task_dir.name)
    row: dict[str, Any] = {
        "instance_id": instance_id,
        "dataset_type": "deepswe",
        "problem_statement": instruction.read_text(encoding="utf-8"),
        "image": toml.environment.docker_image,
        "cwd": _cwd(toml),
        "env": toml.environment.env,
        "cpus": toml.environment.cpus,
        "memory_mb": toml.environment.memory_mb,
        "storage_mb": toml.environment.storage_mb,
        "network": toml.agent.network_mode not in NO_NETWORK,
        "agent_timeout_sec": toml.agent.timeout_sec,
        "build_timeout_sec": toml.environment.build_timeout_sec,
        "verifier_mode": "separate" if toml.verifier.environment_mode == "separate" else "shared",
        "verifier_timeout_sec": toml.verifier.timeout_sec,
        "verifier_network": toml.verifier.network_mode not in NO_NETWORK,
        "verifier_env": toml.verifier.env,
        "verifier_cpus": toml.verifier.environment.cpus,
        "verifier_memory_mb": toml.verifier.environment.memory_mb,
        "verifier_build_timeout_sec": toml.verifier.environment.build_timeout_sec,
        "collect": [h.model_dump() for h in toml.verifier.collect],
        "artifacts": toml.artifacts or ["/logs/artifacts/model.patch"],
        "test_files": tests,
        "verifier_files_missing": missing_verifier_files(tests),
        "solution_files": solution,
        "gold_patch": gold if isinstance(gold, str) else None,
        "solution_script": script if isinstance(script, str) else None,
        "solution_env": toml.solution.env,
        "metadata": {
            **toml.metadata,
            "task_name": name,
            "schema_version": toml.schema_version,
            "agent_network_mode": toml.agent.network_mode,
            "verifier_network_mode": toml.verifier.network_mode,
            "storage_mb": toml.environment.storage_mb,
            "gpus": toml.environment.gpus,
            "build_timeout_sec": toml.environment.build_timeout_sec,
        },
    }
    if env_dir.is_dir():
        base = Path(relative_to).resolve() if relative_to else None
        row["dockerfile_dir"] = os.path.relpath(env_dir.resolve(), base) if base else str(env_dir.resolve())
        if (env_dir / REPO_SEED_DIR).is_dir():
            row["repo_archive"] = tar_folder(env_dir / REPO_SEED_DIR)
    return row


def task_dirs(src: Path) -> list[Path]:
    src = Path(src)
    if is_harbor_task(src):
        return [src]
    dirs = []
    for sub in sorted(p for p in src.iterdir() if p.is_dir()):
        if is_harbor_task(sub):
            dirs.append(sub)
        elif (sub / "instruction.md").is_file():
            raise DatasetError(f"{sub}: has instruction.md but no task.toml")
    return dirs


def convert_dir(src: Path, relative_to: Path | None = None) -> list[dict[str, Any]]:
    """Every task under `src`; all bad task folders are reported together."""
    rows, errors = [], []
    for task_dir in task_dirs(Path(src)):
        try:
            rows.append(convert_task(task_dir, relative_to=relative_to or Path(src)))
        except DatasetError as e:
            errors.append(str(e))
    if errors:
        raise DatasetError(f"{len(errors)} bad Harbor task(s):\n" + "\n".join(errors))
    return rows
