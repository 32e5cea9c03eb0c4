"""Reuse the local-sandbox factory of the dataset tests."""

from tests.datasets.conftest import new_env  # noqa: F401
