"""Dagster resources wrapping mimo_core pieces, configured from environment variables (never secrets on disk)."""

from resources.batch_runner import BatchRunner
from resources.model_endpoint import ModelEndpoint
from resources.output_store import OutputStore
from resources.sandbox import SandboxBackend

__all__ = ["BatchRunner", "ModelEndpoint", "OutputStore", "SandboxBackend"]
