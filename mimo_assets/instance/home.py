"""The one Dagster instance both doors use: CLI runs record into it and `dagster dev` reads it.

`DAGSTER_HOME` wins when set; otherwise `~/.mimoagent/dagster_home` (SQLite) or, when
`MIMOAGENT_DAGSTER_POSTGRES_URL` is set, `~/.mimoagent/dagster_home_postgres`, created on first use
with the matching `dagster.yaml` (mimo_assets/instance/yaml/), so a new user gets a persistent instance
without setting anything (`mimoagent-dagster dev` points the UI at it).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING

from mimo_core.base.atomic_files import atomic_write_text
from mimo_core.settings import RecordingSettings

if TYPE_CHECKING:
    from dagster import DagsterInstance

POSTGRES_URL_ENV = RecordingSettings.variable("postgres_url")
DEFAULT_HOME = "~/.mimoagent/dagster_home"
DEFAULT_POSTGRES_HOME = "~/.mimoagent/dagster_home_postgres"
YAML_DIR = Path(__file__).resolve().parent / "yaml"
SCHEMA_MARK = ".mimoagent-schema-ready"  # written once get_instance() has created the home's tables
# Where the batched SQLite storage class lived before 2026-12-01; homes created then name it in their yaml.
_OLD_STORAGE_MODULE = "module: mimo_assets.helpers.storage"
_STORAGE_MODULE = "module: mimo_assets.instance.storage"


def storage_kind() -> str:
    """ "postgres" when the URL variable is set. A bare `postgresql://` URL is pinned to psycopg2 (the
    driver dagster-postgres installs) in this process's environment, which every Dagster process started
    from here inherits: SQLAlchemy 2.1 would otherwise look for psycopg 3."""
    url = RecordingSettings.read().postgres_url
    if not url:
        return "sqlite"
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ("postgres", "postgresql"):
        os.environ[POSTGRES_URL_ENV] = f"postgresql+psycopg2://{rest}"
    return "postgres"


def instance_yaml(kind: str, home: Path) -> str:
    return (YAML_DIR / f"{kind}.yaml").read_text().replace("{home}", str(home))


def dagster_home() -> Path:
    kind = storage_kind()
    default = DEFAULT_POSTGRES_HOME if kind == "postgres" else DEFAULT_HOME
    home = Path(os.environ.get("DAGSTER_HOME") or default).expanduser().resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():  # atomically: a concurrent first run must never read half a file
        atomic_write_text(config, instance_yaml(kind, home))
    else:
        text = config.read_text()
        if kind == "postgres" and POSTGRES_URL_ENV not in text:
            raise ValueError(
                f"{POSTGRES_URL_ENV} is set but {config} does not use it (it was created for SQLite): "
                f"unset DAGSTER_HOME or point it at a new folder"
            )
        if _OLD_STORAGE_MODULE in text:  # the file we wrote, naming the module where the class used to live
            atomic_write_text(config, text.replace(_OLD_STORAGE_MODULE, _STORAGE_MODULE))
    return home


def get_instance() -> DagsterInstance:
    """The instance, its schemas created under a lock: two runs opening a new home at the same moment
    would otherwise both try to create the same tables."""
    from dagster import DagsterInstance

    home = dagster_home()
    with open(home / ".mimoagent-init.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        instance = DagsterInstance.from_config(str(home))
        instance.get_runs(limit=1)  # each storage creates its tables on first use
        instance.get_dynamic_partitions("rollout")
        instance.all_instigator_state()
        (home / SCHEMA_MARK).touch()
    return instance


def schema_ready() -> bool:
    """Whether a mimoagent process has created this home's tables (under the lock) before."""
    return (dagster_home() / SCHEMA_MARK).exists()
