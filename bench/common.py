"""Shared pieces of the benchmarks: the scripted server in its own process, the task, the two drivers.

The server runs in a separate process so that its CPU never counts as the framework's. Each framework
runs in a fresh process of its own (ours: the `mimoagent` console script; the peer: `bench/peer_mini.py`
under mini-swe-agent's venv), measured from outside over its whole process tree (bench/tree.py).

Run as `python -m bench.common serve ...` to start only the server (what `ServerProcess` does).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PEER_VERSION = "2.4.6"
PEER_VENV = Path(os.environ.get("MIMO_BENCH_PEER_VENV", "/tmp/mini-peer"))
PEER_SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini-swe-agent's end-of-task marker
API_KEY = "sk-bench-not-a-secret"
MODEL = "scripted-model"
STEP_COMMAND = "echo hi"


# -- the scripted server, in its own process ------------------------------------------------------------


def _responder(flavor: str, steps: int, arrivals: Path | None, watch: Path | None = None) -> Any:
    """`steps` bash calls running `echo`, then the framework's way to submit. Each arrival is logged as
    `monotonic call_number [tree_cpu]`: the call's number within its rollout and, when `watch` names a
    file holding the runner's pid, the CPU its whole process tree has used so far."""
    from bench.tree import tree_cpu
    from testkit.scripted_llm import call, turns

    submit = call("submit") if flavor == "mimo" else call("bash", command=PEER_SUBMIT)
    script = turns(*[call("bash", command=STEP_COMMAND)] * steps, submit)
    if arrivals is None:
        return script
    log = arrivals.open("a", buffering=1)

    def responder(req: Any) -> Any:
        t = time.monotonic()  # CLOCK_MONOTONIC is system-wide: comparable across processes
        line = f"{t:.6f} {req.n_assistant_turns + 1}"
        if watch is not None and watch.exists() and (pid := watch.read_text().strip()):
            line += f" {tree_cpu(int(pid)):.3f}"
        log.write(line + "\n")
        return script(req)

    return responder


def _serve(argv: list[str]) -> None:
    from testkit.scripted_llm import ScriptedLLM

    p = argparse.ArgumentParser(prog="bench.common serve")
    p.add_argument("--flavor", choices=["mimo", "peer"], required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--arrivals", type=Path, default=None)
    p.add_argument("--watch", type=Path, default=None, help="file holding the runner's pid: note its tree CPU")
    args = p.parse_args(argv)
    responder = _responder(args.flavor, args.steps, args.arrivals, args.watch)
    with ScriptedLLM(responder, latency=args.latency) as server:
        print(server.url, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin


class ServerProcess:
    """`with ServerProcess("mimo", steps=50) as s:` s.url; s.arrivals() lists request arrival times."""

    def __init__(
        self, flavor: str, steps: int, latency: float = 0.0, log_dir: Path | None = None, watch: Path | None = None
    ):
        self.argv = [
            sys.executable,
            "-m",
            "bench.common",
            "serve",
            "--flavor",
            flavor,
            "--steps",
            str(steps),
            "--latency",
            str(latency),
        ]
        self.arrivals_file = None
        if log_dir is not None:
            self.arrivals_file = log_dir / f"arrivals-{flavor}-{time.monotonic_ns()}.txt"
            self.arrivals_file.touch()
            self.argv += ["--arrivals", str(self.arrivals_file)]
        if watch is not None:
            self.argv += ["--watch", str(watch)]
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> ServerProcess:
        self.proc = subprocess.Popen(self.argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError(f"scripted server did not start: {self.argv}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    def arrivals(self) -> list[float]:
        return [a[0] for a in self.arrival_rows()]

    def arrival_rows(self) -> list[tuple[float, ...]]:
        """(monotonic, call number[, tree CPU]) per request, in arrival order."""
        if self.arrivals_file is None:
            return []
        return [tuple(float(x) for x in line.split()) for line in self.arrivals_file.read_text().splitlines()]


# -- the task and our config ----------------------------------------------------------------------------


def write_task(folder: Path, n: int = 1) -> Path:
    """n generic instances over a one-file repo; the verifier only checks that the file is still there."""
    (folder / "repo").mkdir(parents=True, exist_ok=True)
    (folder / "repo" / "greeting.txt").write_text("hello\n")
    rows = [
        {
            "instance_id": f"bench-{i}",
            "dataset_type": "generic",
            "repo_dir": "repo",
            "eval_script": "mkdir -p /logs/verifier; test -f greeting.txt && echo 1 > /logs/verifier/reward.txt",
            "problem_statement": "Run `echo hi` a few times, then submit.",
        }
        for i in range(n)
    ]
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_mimo_config(folder: Path, base_url: str, steps: int) -> Path:
    import yaml

    cfg = {
        "agent": {"type": "default", "step_limit": steps + 5},
        "environment": {"environment_class": "local", "timeout": 30},
        "model": {
            "model_name": MODEL,
            "protocol": "chat",
            "model_kwargs": {"base_url": base_url, "api_key": API_KEY},
            "retry": {"max_attempts": 1, "timeout": 30},
        },
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _base_env() -> dict[str, str]:
    """Bytecode caching on, as for a user: a set PYTHONDONTWRITEBYTECODE makes every start recompile."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def mimo_env() -> dict[str, str]:
    return {**_base_env(), "MIMOAGENT_OBSERVERS": "0"}


# -- the peer -------------------------------------------------------------------------------------------


def peer_python() -> Path | None:
    """mini-swe-agent's interpreter; its venv is made on first use (it pins litellm, so it lives apart)."""
    py = PEER_VENV / "bin" / "python"
    if not py.exists() and shutil.which("uv"):
        print(f"[bench] installing mini-swe-agent=={PEER_VERSION} into {PEER_VENV} ...", file=sys.stderr)
        ok = (
            subprocess.run(["uv", "venv", "-q", "-p", "3.11", str(PEER_VENV)]).returncode == 0
            and subprocess.run(
                ["uv", "pip", "install", "-q", "-p", str(PEER_VENV), f"mini-swe-agent=={PEER_VERSION}"]
            ).returncode
            == 0
        )
        if not ok:
            return None
    return py if py.exists() else None


def peer_env(config_dir: Path) -> dict[str, str]:
    """No first-run wizard, no banner, no global config of the user's."""
    return {
        **_base_env(),
        "MSWEA_CONFIGURED": "true",
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_GLOBAL_CONFIG_DIR": str(config_dir),
        "MSWEA_COST_TRACKING": "ignore_errors",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


# -- printing -------------------------------------------------------------------------------------------


def machine() -> str:
    cpu = "?"
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    return (
        f"{time.strftime('%Y-%m-%d')} · {platform.system()} {platform.release()} · {os.cpu_count()} cores "
        f"({cpu}) · Python {platform.python_version()}"
    )


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for r in [header, *rows]:
        print(("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True))).rstrip())


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"]:
        sys.exit("usage: python -m bench.common serve --flavor mimo|peer --steps N [--latency S] [--arrivals F]")
    _serve(sys.argv[2:])


def frameworks(no_peer: bool) -> list[str]:
    """Ours, and the peer unless asked not to or it cannot be set up here."""
    if no_peer:
        return ["mimo"]
    if peer_python() is None:
        print("[bench] mini-swe-agent unavailable: printing ours alone")
        return ["mimo"]
    return ["mimo", "peer"]
