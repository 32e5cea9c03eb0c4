"""CLI agents on docker: what placing an install in a fresh container costs per rollout.

    uv run python -m bench.bench_cli_docker                      # claude-code and codex
    uv run python -m bench.bench_cli_docker --cli opencode --repeat 3

For each CLI (installed into MIMOAGENT_CACHE_DIR first when missing), in containers of the test base image
started by the test dockerd (testkit/dockerd.py): *mounted* = `placement.place` with the host
cache mounted read-only (what a rollout does by default), *streamed* = `place` without the mount (a remote
engine: the install's tar streamed in with put_archive), *copy_in* = the backend's generic `copy_in` (the
tar built in memory each time; what placement did before). Each figure includes the `--version` check
that `place` runs. Wall time per placement and this process's CPU; peak RSS is printed per mode because
it only grows (run one mode per process with --mode to compare it).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

from mimo_core.agents.blackbox import install, placement, spec_for
from mimo_core.config import EnvironmentConfig
from mimo_core.environments.base import SandboxSpec
from mimo_core.environments.docker.environment import DockerEnvironment
from testkit.dockerd import BASE_IMAGE, ensure_dockerd

MODES = ("mounted", "streamed", "copy_in")


def place_once(cli: str, mode: str) -> tuple[float, float]:
    spec = spec_for(cli)
    assert spec is not None
    host_dir = install.ensure_installed(spec, spec.default_version, {})
    mounts = placement.cache_mount() if mode == "mounted" else {}
    env = DockerEnvironment(
        SandboxSpec(image=BASE_IMAGE, mounts=mounts, labels={"mimoagent.run_id": "bench"}),
        EnvironmentConfig(environment_class="docker"),
    )
    env.start()
    try:
        wall, cpu = time.monotonic(), time.process_time()
        if mode == "copy_in":
            target = f"{placement.IN_SANDBOX_ROOT}/{cli}"
            env.copy_in(host_dir, target)
            assert env.execute(f"{target}/bin/{cli} --version", timeout=120).returncode == 0
        else:
            home = placement.place(env, host_dir, spec, spec.default_version)
            assert home.startswith(placement.MOUNTED_CACHE if mode == "mounted" else placement.IN_SANDBOX_ROOT)
        return time.monotonic() - wall, time.process_time() - cpu
    finally:
        env.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", action="append", help="default: claude-code and codex")
    p.add_argument("--mode", action="append", choices=MODES, help="default: all three")
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    os.environ["DOCKER_HOST"] = ensure_dockerd().docker_host
    print(f"{'CLI':15} {'mode':9} {'wall/rollout':>12} {'CPU/rollout':>12} {'peak RSS':>9}")
    for cli in args.cli or ["claude-code", "codex"]:
        for mode in args.mode or MODES:
            runs = [place_once(cli, mode) for _ in range(args.repeat)]
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"{cli:15} {mode:9} {statistics.median(r[0] for r in runs):11.2f}s "
                f"{statistics.median(r[1] for r in runs):11.2f}s {rss:8.0f}MB"
            )


if __name__ == "__main__":
    main()
