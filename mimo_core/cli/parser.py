"""The `mimoagent` run command's flags: the parser, its exit codes, and the command line as a `RunRequest`.

Light on imports (argparse and the argparse types), so `--help` and every subcommand's start stay fast;
the run itself is in `run_command.py`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, NoReturn

from mimo_core.cli.arg_types import statuses_arg

if TYPE_CHECKING:  # (imported where used: building the parser imports nothing big)
    from mimo_core.run.plan import RunRequest
    from mimo_core.run.ray.options import RayOptions

EXIT_BAD_INPUT = 2
EXIT_ALL_INFRA = 3  # every rollout this run ran ended in an infrastructure error (nothing was graded)
EXIT_DISK_FULL = 4  # the disk filled up mid-run: stopped, finished rollouts kept
MAX_WORKERS = 4096
MAX_RETRIES = 100
MAX_NUM_ROLLOUTS = 100_000


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line and exit code 2, not a usage dump."""
        print(f"mimoagent: error: {message} (see mimoagent --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="mimoagent",
        description="Run agent rollouts on a dataset, grade them in place, record trajectories. "
        "`mimoagent cleanup` removes leftover sandboxes (containers, local folders and their "
        "processes) of crashed runs; `mimoagent payload build` packs CLI agents for offline installs; "
        "`mimoagent view OUTPUT_DIR` browses rollouts in a local web page; "
        "`mimoagent export OUTPUT_DIR --format sft|rl|atif` writes training exports; "
        "`mimoagent plugins` lists the backends, agents, dataset types, protocols and tools a config can name.",
    )
    p.add_argument(
        "-c",
        "--config",
        action="append",
        required=True,
        metavar="CONFIG",
        help="YAML config; several = one config per instance at random (A/B), seeded",
    )
    p.add_argument("--dataset", required=True, help="JSONL, parquet, local HF dataset folder or HF hub name")
    p.add_argument("--split", default=None, help="dataset split (Hugging Face datasets)")
    p.add_argument("--slice", default=None, metavar="A:B", help="select rows A..B (after --filter/--shuffle)")
    p.add_argument("--filter", default=None, metavar="REGEX", help="keep instance ids matching REGEX")
    p.add_argument("--shuffle", action="store_true", help="shuffle instances (seeded by --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed for --shuffle and A/B config assignment")
    p.add_argument(
        "--paired",
        action="store_true",
        help="with several -c: run every config on every instance (paired A/B) instead of one each",
    )
    p.add_argument("--workers", type=int, default=1, help="rollouts run in parallel (cluster-wide with --runner ray)")
    p.add_argument(
        "--retries",
        type=int,
        default=0,
        metavar="K",
        help="run a rollout that ended in model_error, environment_error or grading_error again, up to K times "
        "within this run (its failed attempts kept in attempts/<n>/; thread runner)",
    )
    p.add_argument(
        "--retry-delay",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="back-off before the first --retries attempt, doubled at each one (jittered)",
    )
    p.add_argument(
        "--runner",
        choices=["thread", "ray"],
        default="thread",
        help="thread: a pool in this process; ray: tasks on a Ray cluster (docs/ray.md)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="Ray cluster to join (default: $RAY_ADDRESS, else a local cluster for this run)",
    )
    p.add_argument(
        "--ray-resources",
        default=None,
        metavar="CPU=1,memory=2GiB,sandbox=1",
        help="each rollout's Ray resource request (default CPU=1)",
    )
    p.add_argument("--num-rollouts", type=int, default=1, metavar="K", help="rollouts per instance")
    p.add_argument("--redo-existing", action="store_true", help="rerun rollouts that already finished")
    p.add_argument(
        "--rerun-changed",
        action="store_true",
        help="also rerun the finished rollouts whose config, row or repository folder changed since",
    )
    p.add_argument(
        "--rerun-status",
        type=statuses_arg,
        default=[],
        metavar="STATUS,...",
        help="rerun exactly the finished rollouts with these exit statuses, e.g. model_error,grading_error",
    )
    p.add_argument(
        "--override-config",
        action="append",
        default=[],
        metavar="JSON",
        help='deep-merged into every config, e.g. \'{"agent": {"step_limit": 50}}\'',
    )
    p.add_argument(
        "--recalc-input",
        default=None,
        metavar="gt|DIR",
        help="grade the reference solution (gt) or the submissions saved in DIR; no agent runs",
    )
    p.add_argument("-o", "--output", required=True, help="output folder (one mimoagent at a time writes to it)")
    p.add_argument("--allow-empty", action="store_true", help="a dataset (or selection) of 0 rows is not an error")
    p.add_argument("--run-id", default=None, help=argparse.SUPPRESS)
    return p


def check_flags(args: argparse.Namespace) -> None:
    """Bounds argparse cannot state; sets `args.ray` (the Ray options, or None)."""
    from mimo_core.errors import ConfigError

    if not 1 <= args.workers <= MAX_WORKERS:
        raise ConfigError(f"--workers must be between 1 and {MAX_WORKERS:,}")
    if not 0 <= args.retries <= MAX_RETRIES:
        raise ConfigError(f"--retries must be between 0 and {MAX_RETRIES}")
    if not 0 <= args.retry_delay <= 3600:  # (NaN fails both)
        raise ConfigError("--retry-delay must be between 0 and 3600 seconds")
    if not 1 <= args.num_rollouts <= MAX_NUM_ROLLOUTS:
        raise ConfigError(f"--num-rollouts must be between 1 and {MAX_NUM_ROLLOUTS:,}")
    if not args.output.strip():
        raise ConfigError("-o: an empty path; name the output folder")
    if args.recalc_input is not None and not args.recalc_input.strip():
        raise ConfigError("--recalc-input: an empty path; give gt or an earlier output folder")
    args.ray = ray_options(args)
    if args.ray is not None and args.retries:
        raise ConfigError("--retries needs the thread runner (not yet --runner ray): a resume redoes those rollouts")


def ray_options(args: argparse.Namespace) -> RayOptions | None:
    """`--runner ray` flags as RayOptions (None for the thread runner); a missing extra is one line."""
    from mimo_core.errors import ConfigError

    if args.runner != "ray":
        if args.ray_address is not None or args.ray_resources is not None:
            raise ConfigError("--ray-address and --ray-resources need --runner ray")
        return None
    from mimo_core.run.ray.options import RayOptions, parse_resources, require_ray

    require_ray()
    resources = parse_resources(args.ray_resources) if args.ray_resources else None
    return RayOptions(address=args.ray_address or "", **({"resources": resources} if resources else {}))


# The flag (argparse dest) behind each RunRequest field (mimo_core.run.plan.request_fields); a field no flag
# sets says why. tests/dagster/test_run_request_fields.py fails when RunRequest gains a field not listed.
REQUEST_FLAGS = {
    "dataset": "dataset",
    "split": "split",
    "filter": "filter",
    "shuffle": "shuffle",
    "slice": "slice",
    "seed": "seed",
    "configs": "config",
    "paired": "paired",
    "overrides": "override_config",
    "num_rollouts": "num_rollouts",
    "redo_existing": "redo_existing",
    "rerun_status": "rerun_status",
    "rerun_changed": "rerun_changed",
    "recalc": "recalc_input",
    "output_dir": "output",
    "run_id": "run_id",
}
NOT_FLAGS = {"partitions": "a Dagster backfill selects partitions; a command line selects rows"}


def request_from_args(args: argparse.Namespace) -> RunRequest:
    """The command line as a RunRequest, validated by pydantic: what the run planner and the observers
    are given. A flag left unset (None) takes the request's default."""
    from pydantic import ValidationError

    from mimo_core.config import parse_override
    from mimo_core.errors import ConfigError
    from mimo_core.run.plan import request_from_fields

    values = {field: getattr(args, dest) for field, dest in REQUEST_FLAGS.items()}
    values["configs"] = list(values["configs"])
    values["overrides"] = [parse_override(o) for o in values["overrides"]]
    try:  # (the request resolves -o itself: RunRequest.output_dir)
        return request_from_fields({k: v for k, v in values.items() if v is not None})
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][-1]) if err["loc"] else "?"
        flag = "--" + REQUEST_FLAGS.get(field, field).replace("_", "-")
        why = err["ctx"]["error"] if err["type"] == "value_error" else err["msg"]  # (without "Value error, ")
        raise ConfigError(f"{flag}: {why}") from None
