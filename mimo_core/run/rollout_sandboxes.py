"""The sandboxes of one rollout: the agent's and any separate verifier's, each built from the row's spec
and the config, labelled with the rollout it belongs to (so a sweep can tell whose it is), and all
stopped in one place however the rollout ends."""

from __future__ import annotations

from mimo_core.datasets.base import DatasetType
from mimo_core.environments.base import (
    LABEL_CONFIG,
    LABEL_INSTANCE,
    LABEL_ROLLOUT,
    LABEL_RUN_ID,
    Environment,
    SandboxSpec,
)
from mimo_core.environments.registry import make_environment
from mimo_core.records.rollout_logs import RolloutFiles
from mimo_core.run.job import RolloutJob


class RolloutSandboxes:
    """Every sandbox a rollout starts (the agent's and any separate verifier's), stopped in one place."""

    def __init__(self, job: RolloutJob):
        self.job = job
        self.started: list[Environment] = []

    def spec_for(self, dtype: DatasetType) -> SandboxSpec:
        """The row's sandbox spec with the config's environment block applied (the row's own budgets win)."""
        from mimo_core.agents.factory import sandbox_mounts

        cfg = self.job.config.config
        spec = dtype.sandbox_spec(self.job.task, cfg.environment.cwd, cfg.environment.timeout, cfg.use_dataset_env)
        if spec.image and cfg.environment.image_prefix and not spec.image.startswith(cfg.environment.image_prefix):
            spec.image = cfg.environment.image_prefix + spec.image
        spec.env = {**spec.env, **cfg.environment.env}
        spec.mounts = {**spec.mounts, **sandbox_mounts(cfg)}  # the agent's shared installs
        spec.memory_mb = spec.memory_mb or cfg.environment.memory_mb  # budgets: the row's own win
        spec.storage_mb = spec.storage_mb or cfg.environment.storage_mb
        return spec

    def new(self, spec: SandboxSpec) -> Environment:
        """A started sandbox for `spec`, labelled with this rollout and kept to be stopped."""
        job = self.job
        spec = spec.model_copy(deep=True)
        spec.labels = {
            **spec.labels,
            LABEL_RUN_ID: job.run_id,
            LABEL_INSTANCE: job.task.instance_id,
            LABEL_CONFIG: job.config.name,
            LABEL_ROLLOUT: str(job.rollout_index),
        }
        env = make_environment(job.config.config.environment, spec)
        self.started.append(env)
        env.start()
        return env

    def stop_all(self, rec: RolloutFiles) -> None:
        for env in self.started:
            try:
                env.stop()
            except Exception:
                rec.log_exception("stopping a sandbox failed")
