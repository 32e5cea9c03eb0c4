"""A corpus of hostile inputs to the `mimoagent` command line, each with the one line it must be refused
with (exit 2): what tests/core/test_bad_inputs_strict.py asserts one by one and bench/bench_hostile.py
counts. Each case builds its command line from (workdir, dataset, config, output folder): the dataset is
`testkit.tasks.write_tasks(workdir)` and the config `write_config(workdir, "cfg")`. A run of any of them
is bounded with `bounded()` (address space), so a regression cannot take the machine with it."""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Callable
from pathlib import Path

import yaml

from testkit.tasks import EVAL, write_tasks

MEMORY = 3 << 30
Build = Callable[[Path, Path, Path, str], list[str]]


def bounded() -> None:
    """preexec_fn of a run: at most MEMORY of address space."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _edit(cfg: Path, edit: Callable[[dict], None], name: str = "bad") -> Path:
    doc = yaml.safe_load(cfg.read_text())
    edit(doc)
    path = cfg.with_name(f"{name}.yaml")
    path.write_text(yaml.safe_dump(doc))
    return path


def _row(folder: Path, **fields: object) -> Path:
    row = {
        "instance_id": "r",
        "dataset_type": "generic",
        "repo_dir": "repo",
        "eval_script": EVAL,
        "problem_statement": "x",
        **fields,
    }
    path = folder / "row.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


def _alias_bomb(cfg: Path) -> Path:
    """Ten levels of ten aliases each: 10^10 values once expanded, a few hundred bytes as written."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return _write(cfg.with_name("bomb.yaml"), "\n".join(lines) + "\n" + cfg.read_text())


def _deep_yaml(cfg: Path) -> Path:
    """A block mapping 200 levels deep under agent.install_env."""
    nested = "".join(f"{'  ' * (i + 2)}k{i}:\n" for i in range(200)) + "  " * 202 + "leaf\n"
    text = cfg.read_text().replace("agent:\n", "agent:\n  install_env:\n" + nested, 1)
    return _write(cfg.with_name("deep.yaml"), text)


def _corrupt_parquet(folder: Path) -> Path:
    path = folder / "rows.parquet"
    path.write_bytes(b"PAR1" + os.urandom(4096) + b"PAR1")
    return path


def _symlink_loop(folder: Path) -> str:
    os.symlink(folder / "loop-b", folder / "loop-a")
    os.symlink(folder / "loop-a", folder / "loop-b")
    return str(folder / "loop-a" / "out")


def _empty_results(folder: Path) -> str:
    (folder / "earlier").mkdir()
    (folder / "earlier" / "results.jsonl").write_text("")
    return str(folder / "earlier")


# name -> (how to build the command line from (workdir, data, cfg, out), what stderr must say)
CASES: dict[str, tuple[Build, str]] = {
    "-c /dev/zero": (
        lambda w, d, c, o: ["-c", "/dev/zero", "--dataset", str(d), "-o", o],
        "/dev/zero: larger than 1024 KiB",
    ),
    "YAML alias bomb": (
        lambda w, d, c, o: ["-c", str(_alias_bomb(c)), "--dataset", str(d), "-o", o],
        "bomb.yaml: more than 100,000 values once its aliases are expanded",
    ),
    "YAML nested 200 deep": (
        lambda w, d, c, o: ["-c", str(_deep_yaml(c)), "--dataset", str(d), "-o", o],
        "deep.yaml: nested more than 64 levels deep",
    ),
    "YAML alias of itself": (
        lambda w, d, c, o: [
            "-c",
            str(_write(c.with_name("self.yaml"), "agent: &a {x: *a}\n")),
            "--dataset",
            str(d),
            "-o",
            o,
        ],
        "self.yaml: the alias *a refers to itself",
    ),
    "duplicate YAML key": (
        lambda w, d, c, o: [
            "-c",
            str(_write(c.with_name("dup.yaml"), c.read_text().replace("agent:\n", "agent:\n  step_limit: 3\n", 1))),
            "--dataset",
            str(d),
            "-o",
            o,
        ],
        "dup.yaml: invalid YAML: while constructing a mapping: found the key 'step_limit' twice",
    ),
    "override nested 30000 deep": (
        lambda w, d, c, o: [
            "-c",
            str(c),
            "--dataset",
            str(d),
            "-o",
            o,
            "--override-config",
            '{"agent": ' + "[" * 30000 + "]" * 30000 + "}",
        ],
        "--override-config: nested more than 64 levels deep",
    ),
    "row nested 100000 deep": (
        lambda w, d, c, o: [
            "-c",
            str(c),
            "--dataset",
            str(_write(w / "deep.jsonl", '{"instance_id": "a", "x": ' + "[" * 100000 + "]" * 100000 + "}\n")),
            "-o",
            o,
        ],
        "deep.jsonl: row 1: nested more than 100 levels deep",
    ),
    "--num-rollouts with 20 digits": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(d), "-o", o, "--num-rollouts", "9" * 20],
        "--num-rollouts must be between 1 and 100,000",
    ),
    "--workers with 20 digits": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(d), "-o", o, "--workers", "9" * 20],
        "--workers must be between 1 and 4,096",
    ),
    "two million rollouts": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(write_tasks(w, n=30)), "-o", o, "--num-rollouts", "100000"],
        "3,000,000 rollouts in one run is more than 1,000,000",
    ),
    "step_limit: true": (
        lambda w, d, c, o: [
            "-c",
            str(_edit(c, lambda x: x["agent"].update(step_limit=True))),
            "--dataset",
            str(d),
            "-o",
            o,
        ],
        "bad.yaml: agent.step_limit: expected a number, got the boolean true",
    ),
    "timeout: .inf": (
        lambda w, d, c, o: [
            "-c",
            str(_edit(c, lambda x: x["environment"].update(timeout=float("inf")))),
            "--dataset",
            str(d),
            "-o",
            o,
        ],
        "bad.yaml: environment.timeout: Input should be a finite number",
    ),
    "request timeout: .nan": (
        lambda w, d, c, o: [
            "-c",
            str(_edit(c, lambda x: x["model"]["retry"].update(timeout=float("nan")))),
            "--dataset",
            str(d),
            "-o",
            o,
        ],
        "bad.yaml: model.retry.timeout: Input should be a finite number",
    ),
    "negative price": (
        lambda w, d, c, o: [
            "-c",
            str(_edit(c, lambda x: x["model"]["pricing"].update(input=-1))),
            "--dataset",
            str(d),
            "-o",
            o,
        ],
        "bad.yaml: model.pricing.input: Input should be greater than or equal to 0",
    ),
    "base_url ftp://": (
        lambda w, d, c, o: [
            "-c",
            str(_edit(c, lambda x: x["model"]["model_kwargs"].update(base_url="ftp://127.0.0.1/v1"))),
            "--dataset",
            str(d),
            "-o",
            o,
        ],
        "bad.yaml: model.model_kwargs: base_url: 'ftp://127.0.0.1/v1' is not an http:// or https:// URL",
    ),
    "--split on a JSONL file": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(d), "-o", o, "--split", "test"],
        "has no splits",
    ),
    '-o ""': (lambda w, d, c, o: ["-c", str(c), "--dataset", str(d), "-o", ""], "-o: an empty path"),
    "--recalc-input with no results": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(d), "-o", o, "--recalc-input", _empty_results(w)],
        "holds no finished rollout to regrade",
    ),
    "repo_dir outside the dataset": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(_row(w, repo_dir="../..")), "-o", o],
        "row 1: field repo_dir: '../..' lies outside",
    ),
    "repo_dir /": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(_row(w, repo_dir="/")), "-o", o],
        "row 1: field repo_dir: '/' lies outside",
    ),
    "relative cwd in a row": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(_row(w, cwd="app")), "-o", o],
        "row 1: field cwd: 'app' is not an absolute path",
    ),
    "environment.cwd with ..": (
        lambda w, d, c, o: [
            "-c",
            str(_edit(c, lambda x: x["environment"].update(cwd="/app/../etc"))),
            "--dataset",
            str(d),
            "-o",
            o,
        ],
        "bad.yaml: environment.cwd: '/app/../etc' is not a plain path",
    ),
    "bwrap and a system cwd": (
        lambda w, d, c, o: [
            "-c",
            str(_edit(c, lambda x: x["environment"].update(sandbox="bwrap"))),
            "--dataset",
            str(_row(w, cwd="/etc")),
            "-o",
            o,
        ],
        "row r: cwd /etc: the task's cwd /etc is a system folder",
    ),
    "eval_timeout: true": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(_row(w, eval_timeout=True)), "-o", o],
        "row 1: field eval_timeout: expected a number, got the boolean true",
    ),
    "corrupt parquet": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(_corrupt_parquet(w)), "-o", o],
        "rows.parquet: not a readable parquet file",
    ),
    "-o in a symlink loop": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", str(d), "-o", _symlink_loop(w)],
        "cannot be used as a folder (a symbolic link loop)",
    ),
    "--dataset /dev/zero": (
        lambda w, d, c, o: ["-c", str(c), "--dataset", "/dev/zero", "-o", o],
        "/dev/zero: not a regular file or a folder",
    ),
}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
