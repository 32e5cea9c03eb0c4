"""Per-call cost of the `bash` tool beyond the command itself, on the local backend.

The command is `true` (a shell builtin: it costs the shell nothing), so everything measured is the tool's
own overhead. CPU is counted over the whole tree: this (runner) process plus every process of the
sandbox (found by its MIMO_SANDBOX marker, the persistent shell included, read from /proc). Printed
beside the previous design (a fresh `bash -c` per call that saves and reloads the session) and a bare
`sh -c true` spawn for scale.

    uv run python -m bench.bench_bash_tool [--calls 500] [--docker]

`--docker` adds the docker backend (engine and base image from testkit/dockerd.py): wall time
and this process's CPU per call, the persistent shell's exec stream beside one `docker exec` per call.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time

from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.local.environment import LocalEnvironment
from mimo_core.environments.local.procs import SANDBOX_VAR, marked_pids
from mimo_core.tools.bash import BashConfig, BashTool

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_of(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])  # + reaped children
        except (OSError, IndexError):
            pass
    return total / _CLK_TCK


def _own_cpu() -> float:
    """This process and its reaped children (a `bash -c` per call in the previous design)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _measure(env: LocalEnvironment, call, n: int) -> tuple[float, float]:
    """(wall ms, whole-tree CPU ms) per call."""
    for _ in range(20):
        call()
    pids = marked_pids(SANDBOX_VAR, env.sandbox_id)
    cpu0, sandbox0, wall0 = _own_cpu(), _cpu_of(pids), time.perf_counter()
    for _ in range(n):
        call()
    wall = time.perf_counter() - wall0
    pids = sorted(set(pids) | set(marked_pids(SANDBOX_VAR, env.sandbox_id)))
    cpu = _own_cpu() - cpu0 + _cpu_of(pids) - sandbox0
    return wall / n * 1000, cpu / n * 1000


def _rows(sandbox: str, root: str, calls: int) -> list[tuple[str, float, float]]:
    env = LocalEnvironment(
        SandboxSpec(cwd="/testbed", timeout=30), EnvironmentConfig(sandbox=sandbox, backend_kwargs={"root": root})
    )
    env.start()
    try:
        tool = BashTool(BashConfig(timeout=30))
        rows = [
            (
                f"bash tool, persistent shell (sandbox: {sandbox})",
                *_measure(env, lambda: tool.run({"command": "true"}, env), calls),
            )
        ]
        if sandbox == "none":  # the previous design: a fresh bash -c that saves and reloads cwd + exports
            rows.append(
                (
                    "previous design: bash -c + session save/reload (sandbox: none)",
                    *_measure(
                        env, lambda: env.execute(tool.wrap("true", env.scratch_dir), timeout=30), max(50, calls // 5)
                    ),
                )
            )
        return rows
    finally:
        env.stop()


def _docker_rows(calls: int) -> list[tuple[str, float, float]]:
    from testkit.dockerd import use_dockerd

    with use_dockerd() as info:  # stopped after, unless another user still holds it
        return _docker_rows_on(info.docker_host, info.base_image, calls)


def _docker_rows_on(docker_host: str, base_image: str, calls: int) -> list[tuple[str, float, float]]:
    from mimo_core.environments.docker.environment import DockerEnvironment

    os.environ["DOCKER_HOST"] = docker_host
    env = DockerEnvironment(
        SandboxSpec(image=base_image, cwd="/testbed", timeout=30), EnvironmentConfig(environment_class="docker")
    )
    env.start()
    try:
        tool = BashTool(BashConfig(timeout=30))
        rows = []
        for name, call, n in (
            ("bash tool, persistent shell (docker exec stream)", lambda: tool.run({"command": "true"}, env), calls),
            (
                "for scale: one docker exec per call (execute)",
                lambda: env.execute("true", timeout=30),
                max(20, calls // 10),
            ),
        ):
            for _ in range(5):
                call()
            cpu0, wall0 = _own_cpu(), time.perf_counter()
            for _ in range(n):
                call()
            rows.append(
                (name + " [runner CPU only]", (time.perf_counter() - wall0) / n * 1000, (_own_cpu() - cpu0) / n * 1000)
            )
        return rows
    finally:
        env.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--docker", action="store_true", help="also the docker backend (starts the test engine)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench-bash-")
    sandboxes = ["none"] + (["bwrap"] if shutil.which("bwrap") else [])
    rows = []
    try:
        for sandbox in sandboxes:
            rows += _rows(sandbox, root, args.calls)
        if args.docker:
            rows += _docker_rows(args.calls)
        t0, c0 = time.perf_counter(), _own_cpu()
        n = max(50, args.calls // 5)
        for _ in range(n):
            subprocess.run(["sh", "-c", "true"], check=True)
        cpu = _own_cpu() - c0
        rows.append(
            ("for scale: subprocess.run(['sh', '-c', 'true'])", (time.perf_counter() - t0) / n * 1000, cpu / n * 1000)
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    print(f"{'per call (command: true)':<{width}} {'wall ms':>8} {'CPU ms':>8}")
    for name, wall, cpu in rows:
        print(f"{name:<{width}} {wall:8.2f} {cpu:8.2f}")
    print(f"(CPU: this process + every process of the sandbox; {args.calls} calls; {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
