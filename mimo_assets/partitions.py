"""The two dynamic partition dimensions: instance × config.

Both are dynamic so a new dataset or a new config file adds partitions without a code change. Dagster
allows two dimensions, so the rollout index (`--num-rollouts K`) lives inside a partition and the date of
a nightly run goes in tags. Dagster orders dimensions by name, so a key reads `config|dataset/instance`:
an instance key names its dataset, so two datasets with an instance of the same id never share a
partition. Instances are registered when a run plans them (not when a dataset is read), so the UI's
"missing" means planned and not finished.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import DynamicPartitionsDefinition, MultiPartitionKey, MultiPartitionsDefinition

from mimo_core.rollout import safe_name

if TYPE_CHECKING:
    from dagster import DagsterInstance

INSTANCE_DIM = "instance"
CONFIG_DIM = "config"

instance_partitions = DynamicPartitionsDefinition(name=INSTANCE_DIM)
config_partitions = DynamicPartitionsDefinition(name=CONFIG_DIM)
rollout_partitions = MultiPartitionsDefinition({INSTANCE_DIM: instance_partitions, CONFIG_DIM: config_partitions})

# Characters Dagster refuses inside a dimension key: the multi-key separator and control characters.
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


def partition_key(dataset: str, instance_id: str, config_name: str) -> MultiPartitionKey:
    return MultiPartitionKey({INSTANCE_DIM: instance_key(dataset, instance_id), CONFIG_DIM: config_name})


def split_key(key: str | MultiPartitionKey) -> tuple[str, str, str]:
    """(dataset, instance_id, config_name) from a `config|dataset/instance` string or a MultiPartitionKey."""
    if isinstance(key, MultiPartitionKey):
        dims = key.keys_by_dimension
        instance, config_name = dims[INSTANCE_DIM], dims[CONFIG_DIM]
    else:
        config_name, _, instance = key.partition("|")
    dataset, _, instance_id = instance.partition("/")
    return dataset, instance_id, config_name


def register_instances(instance: DagsterInstance, dataset: str, instance_ids: Iterable[str]) -> list[str]:
    """The instances a run planned, as `dataset/instance` partitions."""
    return register(instance, INSTANCE_DIM, [instance_key(dataset, i) for i in instance_ids])


def register(instance: DagsterInstance, dim: str, keys: Iterable[str]) -> list[str]:
    """Add only the keys not yet known; one storage call for the whole batch (100k ids in seconds)."""
    wanted = list(dict.fromkeys(check_key(k, dim) for k in keys))
    known = set(instance.get_dynamic_partitions(dim))
    new = [k for k in wanted if k not in known]
    if new:
        instance.add_dynamic_partitions(dim, new)
    return new
