"""Repository set-up per rollout: the dataset type's `setup()` (seed the files, base commit) on a fresh
local sandbox, CPU of this process and of every process it starts, and wall time (target: a few ms).

Each measured rollout starts a new LocalEnvironment (not counted), runs `setup()` (counted), then stops it;
beside it, the same files with the base commit made by git inside the sandbox (the fallback, and what
every rollout did before bases were prepared once per task).
The task is the benches' own: a one-file repository given as `repo_dir`, then the same as `repo_archive`.
Usage: `uv run python -m bench.bench_setup [--rollouts 30]`.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import resource
import statistics
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import machine, print_table, write_task


def _children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _with_archive(data: Path) -> Path:
    row = json.loads(data.read_text().splitlines()[0])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(data.parent / row.pop("repo_dir"), arcname=".")
    row["repo_archive"] = base64.b64encode(buf.getvalue()).decode()
    out = data.with_name("archive.jsonl")
    out.write_text(json.dumps(row) + "\n")
    return out


def _in_sandbox(dtype: Any, env: Any, task: Any) -> None:
    """The fallback (and the way before prepared bases): copy the files, then git in the sandbox."""
    cwd = env.spec.cwd
    env.execute(f"mkdir -p {cwd}")
    dtype._seed(env, task, cwd)
    dtype.ensure_git_base(env, cwd)


def _measure(data: Path, root: Path, rollouts: int, prepared: bool) -> tuple[float, float, float]:
    from mimo_core.config import EnvironmentConfig
    from mimo_core.datasets.loader import load_tasks
    from mimo_core.datasets.registry import get_dataset_type
    from mimo_core.environments.local.environment import LocalEnvironment

    [task] = load_tasks(str(data))
    dtype = get_dataset_type(task.dataset_type)
    cpu, child, wall = [], [], []
    for i in range(rollouts + 1):
        spec = dtype.sandbox_spec(task, None, 30.0, False)
        env = LocalEnvironment(spec, EnvironmentConfig(backend_kwargs={"root": str(root / f"{data.stem}-{i}")}))
        env.start()
        try:
            c0, k0, w0 = time.process_time(), _children(), time.perf_counter()
            if prepared:
                dtype.setup(env, task)
            else:
                _in_sandbox(dtype, env, task)
            if i:  # the first one is a warm-up
                cpu.append(time.process_time() - c0)
                child.append(_children() - k0)
                wall.append(time.perf_counter() - w0)
        finally:
            env.stop()
    return statistics.median(cpu) * 1e3, statistics.median(child) * 1e3, statistics.median(wall) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=30)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mimo-bench-") as tmp:
        root = Path(tmp)
        data = write_task(root / "task", 1)
        for label, path in (("repo_dir", data), ("repo_archive", _with_archive(data))):
            for prepared in (True, False):
                cpu, child, wall = _measure(path, root, args.rollouts, prepared)
                how = "setup(): prepared base copied" if prepared else "git init + commit in the sandbox"
                rows.append([label, how, f"{cpu:.2f}", f"{child:.2f}", f"{cpu + child:.2f}", f"{wall:.2f}"])
    print(f"setup · {machine()}")
    print_table(
        f"dataset type setup() per rollout, local sandbox, median of {args.rollouts}",
        ["seeded from", "how", "CPU ms (this process)", "children CPU ms", "total CPU ms", "wall ms"],
        rows,
    )


if __name__ == "__main__":
    main()
