"""The two dynamic partition dimensions: instance × config.

Both are dynamic so a new dataset or a new config file adds partitions without a code change. Dagster
allows two dimensions, so the rollout index (`--num-rollouts K`) lives inside a partition and the date of
a nightly run goes in tags. Dagster orders dimensions by name, so a key reads `config|instance`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dagster import DynamicPartitionsDefinition, MultiPartitionKey, MultiPartitionsDefinition

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


def partition_key(instance_id: str, config_name: str) -> MultiPartitionKey:
    return MultiPartitionKey({INSTANCE_DIM: instance_id, CONFIG_DIM: config_name})


def split_key(key: str | MultiPartitionKey) -> tuple[str, str]:
    """(instance_id, config_name) from a `config|instance` string or a MultiPartitionKey."""
    if isinstance(key, MultiPartitionKey):
        dims = key.keys_by_dimension
        return dims[INSTANCE_DIM], dims[CONFIG_DIM]
    config_name, _, instance_id = key.partition("|")
    return instance_id, config_name


def register(instance: DagsterInstance, dim: str, keys: Iterable[str]) -> list[str]:
    """Add only the keys not yet known; one storage call for the whole batch (100k ids in seconds)."""
    wanted = list(dict.fromkeys(check_key(k, dim) for k in keys))
    known = set(instance.get_dynamic_partitions(dim))
    new = [k for k in wanted if k not in known]
    if new:
        instance.add_dynamic_partitions(dim, new)
    return new
