"""What a Ray run asks of the cluster: its address, each rollout's resource request, the retry bound.

Imports no Ray: the command line checks these before loading anything, and `require_ray` turns a missing
extra into one line saying how to install it.
"""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, ConfigDict, Field

from mimo_core.errors import ConfigError

INSTALL_HINT = "--runner ray needs the ray extra: uv sync --extra ray (or pip install 'mimoagent[ray]')"
LOCAL = "local"
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_UNITS = {
    "": 1,
    "B": 1,
    "K": 1000,
    "M": 1000**2,
    "G": 1000**3,
    "T": 1000**4,
    "KI": 1024,
    "MI": 1024**2,
    "GI": 1024**3,
    "TI": 1024**4,
}


class RayResources(BaseModel):
    """One rollout's request: Ray starts a rollout on a node only while the node has this much free, so a
    custom resource such as `sandbox` (declared per node: `ray start --resources '{"sandbox": 8}'`) caps the
    sandboxes a node holds at once."""

    model_config = ConfigDict(extra="forbid")

    num_cpus: float = Field(default=1.0, ge=0)
    num_gpus: float = Field(default=0.0, ge=0)
    memory: int | None = Field(default=None, ge=0, description="bytes (Ray's logical memory resource)")
    custom: dict[str, float] = Field(default_factory=dict)

    def as_ray_options(self) -> dict[str, object]:
        opts: dict[str, object] = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
        if self.memory is not None:
            opts["memory"] = self.memory
        if self.custom:
            opts["resources"] = dict(self.custom)
        return opts

    def as_demand(self) -> dict[str, float]:
        """The request in the names `ray.nodes()` reports a node's resources under."""
        demand = {"CPU": self.num_cpus, "GPU": self.num_gpus, "memory": float(self.memory or 0), **self.custom}
        return {k: v for k, v in demand.items() if v > 0}


class RayOptions(BaseModel):
    """`--runner ray` and its flags, or the same fields of the Dagster `evaluate` run config."""

    model_config = ConfigDict(extra="forbid")

    address: str = Field(
        default="",
        description="a cluster to join (the head's host:port); '' = $RAY_ADDRESS, "
        "else start a local cluster for this run",
    )
    resources: RayResources = Field(default_factory=RayResources)
    max_retries: int = Field(default=3, ge=0, description="tries again on another node when a node is lost")

    def resolved_address(self) -> str:
        return self.address or os.environ.get("RAY_ADDRESS", "") or LOCAL


def parse_resources(text: str, what: str = "--ray-resources") -> RayResources:
    """`CPU=1,memory=2GiB,sandbox=1` (GPU too; any other name is a custom resource)."""
    fields: dict[str, object] = {}
    custom: dict[str, float] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"{what}: {item!r} is not NAME=VALUE (e.g. CPU=1,memory=2GiB,sandbox=1)")
        try:
            if name.lower() == "memory":
                fields["memory"] = _bytes(value)
                continue
            amount = float(value)
        except ValueError:
            raise ConfigError(f"{what}: {name}={value!r} is not a number") from None
        if amount < 0:
            raise ConfigError(f"{what}: {name} must not be negative")
        if name.upper() == "CPU":
            fields["num_cpus"] = amount
        elif name.upper() == "GPU":
            fields["num_gpus"] = amount
        else:
            custom[name] = amount
    return RayResources(**fields, custom=custom)


def _bytes(text: str) -> int:
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(text)
    unit = (m.group(2) or "").upper().removesuffix("B")
    return int(float(m.group(1)) * _UNITS[unit])


def require_ray() -> None:
    """Exit-2 error (a ConfigError) when the `ray` extra is not installed."""
    from importlib.util import find_spec

    if find_spec("ray") is None:  # not imported here: the driver sets Ray's environment before its import
        raise ConfigError(INSTALL_HINT)
