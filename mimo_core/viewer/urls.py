"""Stable viewer URLs: an output folder is named by a slug of its absolute path, a rollout by its folder
relative to the output folder, so a link built elsewhere (a Dagster materialization) points at the same
page whenever a viewer serves that folder. Import-light on purpose."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import quote

from mimo_core.settings import CoreSettings

VIEWER_URL_ENV = CoreSettings.variable("viewer_url")
# `mimoagent view OUTPUT_DIR --port 8765` serves these links
DEFAULT_VIEWER_URL = str(CoreSettings.model_fields["viewer_url"].default)


def viewer_base_url() -> str:
    """Where links to the viewer point: `$MIMOAGENT_VIEWER_URL`, else the documented default."""
    return CoreSettings.read().viewer_url


def folder_slug(output_dir: str | Path) -> str:
    """`<folder name>-<8 hex of its absolute path>`: readable, and the same in every process."""
    path = Path(output_dir).resolve()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", path.name)[:40] or "output"
    return f"{name}-{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"


def run_path(slug: str) -> str:
    return f"/runs/{slug}/"


def rollout_path(slug: str, rollout_dir: str) -> str:
    """`rollout_dir`: the record's `output_dir` (the rollout's folder relative to the output folder)."""
    return f"/runs/{slug}/r/{quote(rollout_dir)}"


def file_path(slug: str, rel: str) -> str:
    return f"/runs/{slug}/files/{quote(rel)}"


def rollout_url(output_dir: str | Path, rollout_dir: str, base: str | None = None) -> str:
    """The full URL of one rollout's page, for links from outside the viewer."""
    return (base or viewer_base_url()).rstrip("/") + rollout_path(folder_slug(output_dir), rollout_dir)
