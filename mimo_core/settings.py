"""Every `MIMOAGENT_*` environment variable mimoagent reads, in one place; docs/settings.md is their table.

Each group is a small pydantic model read from the environment when asked (`Group.read()`), never at
import: tests and the recording process change the environment between reads. Groups follow who reads
them, so a bad value in one (a nightly setting) never stops a process that does not use it (the CLI).
Values keep the forms they always had: an unset or empty variable takes the default; the lenient ones
(the recording's wait, idle time, niceness) fall back to their default on a value they cannot read; the
strict ones fail with a one-line error naming the variable. Light on purpose (os and pydantic only): the
CLI reads it on its way to the first request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

PREFIX = "MIMOAGENT_"
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes")


class SettingsError(ValueError):
    """A variable holds a value its reader cannot use: the message names the variable and the value."""


def _var(name: str, default: Any, description: str) -> Any:
    return Field(default=default, alias=PREFIX + name, description=description)


class _Group(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The group as the environment (os.environ unless given) says now; empty means unset."""
        env = os.environ if environ is None else environ
        data = {f.alias: env[f.alias] for f in cls.model_fields.values() if f.alias and env.get(f.alias, "") != ""}
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            name = str(err["loc"][0]) if err["loc"] else "?"
            raise SettingsError(f"{name}={data.get(name)!r}: {err['msg'].removeprefix('Value error, ')}") from None

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable behind a field (for Dagster EnvVars and messages)."""
        return str(cls.model_fields[field].alias)


def _lenient_float(value: Any, default: float) -> float:
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return default


class CoreSettings(_Group):
    """Read by mimo_core (the CLI and every rollout)."""

    cache_dir: str = _var("CACHE_DIR", "", "where third-party CLI agents are installed; '' = ~/.cache/mimoagent")
    viewer_url: str = _var(
        "VIEWER_URL",
        "http://127.0.0.1:8765",
        "where links to `mimoagent view` point (Dagster metadata, the CLI's messages)",
    )
    observers: bool = _var("OBSERVERS", True, "0/false/no/off: load no `mimoagent.observers` plug-in at all")

    @field_validator("observers", mode="before")
    @classmethod
    def _switch(cls, value: Any) -> bool:
        return str(value).strip().lower() not in _OFF

    @field_validator("viewer_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")


def observer_enabled(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """`MIMOAGENT_<NAME>=0` (false/no/off) turns the observer plug-in `name` off (MIMOAGENT_DAGSTER for
    ours); `MIMOAGENT_OBSERVERS=0` turns them all off."""
    env = os.environ if environ is None else environ
    own = env.get(PREFIX + name.upper(), "1").strip().lower()
    return CoreSettings.read(env).observers and own not in _OFF


class RecordingSettings(_Group):
    """Where CLI runs are recorded and how: read by the CLI's Dagster observer, the recorder and the
    processes that open the instance."""

    postgres_url: str = _var(
        "DAGSTER_POSTGRES_URL",
        "",
        "the instance's PostgreSQL database (run, event log and schedule storage); '' = SQLite",
    )
    live: bool = _var(
        "DAGSTER_LIVE",
        False,
        "1/true/yes: record a CLI run while it goes, through the warm recorder, instead of after it ends",
    )
    wait_s: float | None = _var(
        "DAGSTER_WAIT", 0.5, "live recording: seconds the CLI waits at exit for the recorder; all/inf = until recorded"
    )
    recorder_idle_s: float = _var(
        "DAGSTER_RECORDER_IDLE", 120.0, "live recording: seconds a warm recorder waits for the next CLI run (0 = none)"
    )
    recorder_nice: int = _var("DAGSTER_NICE", 10, "live recording: the recorder's niceness")

    @field_validator("live", mode="before")
    @classmethod
    def _live(cls, value: Any) -> bool:
        return str(value).strip().lower() in _ON

    @field_validator("wait_s", mode="before")
    @classmethod
    def _wait(cls, value: Any) -> float | None:
        if str(value).strip().lower() in ("all", "inf", "infinite"):
            return None
        return _lenient_float(value, 0.5)

    @field_validator("recorder_idle_s", mode="before")
    @classmethod
    def _idle(cls, value: Any) -> float:
        return _lenient_float(value, 120.0)

    @field_validator("recorder_nice", mode="before")
    @classmethod
    def _nice(cls, value: Any) -> int:
        try:
            return int(str(value).strip())
        except ValueError:
            return 10


class CodeLocationSettings(_Group):
    """Read by the Dagster code location: when it loads (the backfill policy, the schedule's cron) and by
    its runs (defaults of run configs, resources)."""

    output_root: str = _var(
        "OUTPUT_ROOT", "~/.mimoagent/outputs", "Dagster-launched runs' folder (runs/, datasets/, tables/, exports/)"
    )
    dataset: str = _var("DATASET", "", "dataset of `load_dataset` and `evaluate` when their run config names none")
    config_dir: str = _var(
        "CONFIG_DIR",
        "",
        "config folder `config_files` registers and `new_config_files` "
        "watches; '' = none, and the sensor watches the checkout's configs/",
    )
    backfill_partitions_per_run: int = _var(
        "BACKFILL_PARTITIONS_PER_RUN", 100, "partitions per backfill run (0 = one run per partition range)"
    )
    model_name: str = _var(
        "MODEL_NAME",
        "",
        "Dagster runs: the model_endpoint resource's model (overrides each "
        "config's); the shipped configs interpolate it too",
    )
    environment_class: str = _var(
        "ENVIRONMENT_CLASS", "", "Dagster runs: the sandbox_backend resource's backend (local, docker, kubernetes)"
    )
    image_prefix: str = _var(
        "IMAGE_PREFIX",
        "",
        "Dagster runs: the sandbox_backend resource's image prefix; the docker/k8s configs interpolate it too",
    )
    runner: str = _var("RUNNER", "", "Dagster runs: thread (default) or ray (the batch_runner resource)")
    ray_resources: str = _var(
        "RAY_RESOURCES", "", "Dagster runs on Ray: each rollout's resource request, e.g. CPU=1,memory=2GiB"
    )
    nightly_cron: str = _var("NIGHTLY_CRON", "0 2 * * *", "when the nightly_eval schedule ticks")

    @field_validator("backfill_partitions_per_run", mode="before")
    @classmethod
    def _partitions(cls, value: Any) -> int:
        return parse_partitions_per_run(str(value))


def parse_partitions_per_run(text: str) -> int:
    """A whole number of partitions (0 = single run; '' = 100)."""
    text = text.strip()
    try:
        n = int(text) if text else 100
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError("expected a whole number of partitions (0 = single run)")
    return n


class NightlySettings(_Group):
    """The nightly_eval schedule's evaluation, read at each tick; dataset and configs unset = skip."""

    dataset: str = _var("NIGHTLY_DATASET", "", "the nightly evaluation's dataset")
    configs: list[str] = _var("NIGHTLY_CONFIGS", [], f"its config files, joined by {os.pathsep!r}")
    split: str | None = _var("NIGHTLY_SPLIT", None, "its dataset split")
    rollouts: int = _var("NIGHTLY_ROLLOUTS", 1, "rollouts per instance")
    workers: int = _var("NIGHTLY_WORKERS", 8, "rollouts at a time")
    paired: bool = _var("NIGHTLY_PAIRED", False, "1/true/yes: every config on every instance (paired A/B)")

    @field_validator("configs", mode="before")
    @classmethod
    def _paths(cls, value: Any) -> list[str]:
        return [p for p in value.split(os.pathsep) if p] if isinstance(value, str) else value

    @field_validator("paired", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> bool:
        return str(value).strip().lower() in _ON


GROUPS: tuple[type[_Group], ...] = (CoreSettings, RecordingSettings, CodeLocationSettings, NightlySettings)


def variables() -> dict[str, str]:
    """Every variable this module reads → its description (docs/settings.md lists exactly these)."""
    out = {PREFIX + "<OBSERVER>": "0/false/no/off: turn one observer plug-in off (MIMOAGENT_DAGSTER: ours)"}
    for group in GROUPS:
        out.update({str(f.alias): str(f.description) for f in group.model_fields.values()})
    return out
