"""One dynamic partition per planned rollout cell: `config|dataset/instance`.

Only what a run plans becomes a partition (the CLI, the `evaluate` job, the nightly schedule, or
`load_dataset` in the UI for its rows × the configs named in its `plan_configs`), so "missing" means planned
and not finished: not every instance ever loaded × every config ever registered, which a two-dimension
grid (instance × config) would show. The rollout index (`--num-rollouts K`) lives inside a partition
and the date of a nightly run goes in tags. The key reads `config|dataset/instance`: an instance key
names its dataset, so two datasets with an instance of the same id never share a partition.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import DynamicPartitionsDefinition

from mimo_core.run.job import safe_name

if TYPE_CHECKING:
    from dagster import DagsterInstance

ROLLOUT_DIM = "rollout"

rollout_partitions = DynamicPartitionsDefinition(name=ROLLOUT_DIM)

# Characters a part of a key may not hold: our separator and what Dagster refuses in a key.
_FORBIDDEN = ("|", "...", "\n", "\r", "\t", "\0", "\a", "\b", "\f", "\v")


def check_key(key: str, what: str) -> str:
    """Fail with the offending id named, rather than deep inside Dagster's storage layer."""
    bad = [c for c in _FORBIDDEN if c in key]
    if not key or bad:
        raise ValueError(f"{what} {key!r} cannot be a Dagster partition key (contains {bad or 'nothing'})")
    return key


def dataset_name(source: str, split: str | None = None) -> str:
    """A dataset's name in partition keys: file (or hub) name, a short hash of where it is, and the split,
    e.g. `test-3f9a2c`: two files called test.jsonl in different folders are two datasets. Never holds
    a `/`, so `dataset/instance` splits at the first one."""
    local = Path(source).expanduser()
    where = str(local.resolve()) if local.exists() else source
    stem = Path(source.rstrip("/")).name.removesuffix(".jsonl").removesuffix(".parquet")
    name = f"{safe_name(stem)}-{hashlib.sha1(where.encode()).hexdigest()[:6]}"
    return f"{name}-{safe_name(split)}" if split else name


def instance_key(dataset: str, instance_id: str) -> str:
    return check_key(f"{dataset}/{instance_id}", "instance")


def partition_key(dataset: str, instance_id: str, config_name: str) -> str:
    return f"{check_key(config_name, 'config')}|{instance_key(dataset, instance_id)}"


def split_key(key: str) -> tuple[str, str, str]:
    """(dataset, instance_id, config_name) from a `config|dataset/instance` key."""
    config_name, _, instance = str(key).partition("|")
    dataset, _, instance_id = instance.partition("/")
    return dataset, instance_id, config_name


def register_planned(instance: DagsterInstance, dataset: str, cells: Iterable[tuple[str, str]]) -> list[str]:
    """The (instance_id, config_name) cells a run planned, as partitions; only the new keys are added, in
    one storage call (100k keys in about a second). Grouped by config, rows in their order: a range of
    keys (a UI backfill, a multi-run chunk) then covers one config's rows."""
    by_config = sorted(cells, key=lambda cell: cell[1])  # stable: the rows keep their order
    wanted = list(dict.fromkeys(partition_key(dataset, i, c) for i, c in by_config))
    known = set(instance.get_dynamic_partitions(ROLLOUT_DIM))
    new = [k for k in wanted if k not in known]
    if new:
        instance.add_dynamic_partitions(ROLLOUT_DIM, new)
    return new
