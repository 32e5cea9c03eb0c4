"""What a test needs from the host (bubblewrap, root, npm, PostgreSQL, git, a tmpfs mount).

On a developer's machine without it, the test is skipped with the reason. In CI (`CI=true`) the suite
runs as root on a machine where it installs what it needs, so a missing need means the install broke:
the test fails with the reason instead of passing as a skip that checked nothing.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

from testkit.host_packages import ensure_apt


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail in CI, with `reason`."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a test whose needs are missing fails instead of skipping)")
    pytest.skip(reason)


def bwrap_missing() -> bool:
    """True where bubblewrap is absent and could not be installed (apt-get install bubblewrap). slirp4netns
    comes with it: a bwrap sandbox of a row that allows network gets its network through it."""
    ensure_apt("slirp4netns", "slirp4netns")
    return ensure_apt("bwrap", "bubblewrap") is None


def need_bwrap() -> None:
    if bwrap_missing():
        unavailable("bubblewrap is not installed and could not be (apt-get install bubblewrap)")


def need(binary: str, why: str) -> None:
    if shutil.which(binary) is None:
        unavailable(f"{binary} is not installed on this host ({why})")


# For a module or a parametrize case: skipped without bubblewrap, except in CI, where the test runs and
# fails on the missing binary.
needs_bwrap = pytest.mark.skipif(
    bwrap_missing() and not in_ci(), reason="bubblewrap is not installed and could not be (apt-get install bubblewrap)"
)
