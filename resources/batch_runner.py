"""Where Dagster runs put their rollouts: the thread pool of the run's own process, or a Ray cluster.

So a small Dagster run pod can drive a large Ray cluster: set `MIMOAGENT_RUNNER=ray` (and `RAY_ADDRESS`)
in the deployment, or per run in the launchpad's run config:
`resources: {batch_runner: {config: {runner: ray, ray_address: "ray-head:6379"}}}` (docs/ray.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster import ConfigurableResource
from pydantic import Field

if TYPE_CHECKING:
    from mimo_core.run.ray.options import RayOptions


class BatchRunner(ConfigurableResource):
    runner: str = Field(default="", description="thread | ray; '' = $MIMOAGENT_RUNNER, else thread")
    ray_address: str = Field(default="", description="'' = $RAY_ADDRESS, else a local cluster for the run")
    ray_resources: str = Field(
        default="",
        description="each rollout's request, e.g. CPU=1,memory=2GiB,sandbox=1; "
        "'' = $MIMOAGENT_RAY_RESOURCES, else CPU=1",
    )

    def ray_options(self) -> RayOptions | None:
        """None for the thread runner; a missing `ray` extra or a bad request fails the run in one line."""
        from mimo_core.errors import ConfigError
        from mimo_core.settings import CodeLocationSettings

        settings = CodeLocationSettings.read()
        runner = self.runner or settings.runner or "thread"
        if runner == "thread":
            return None
        if runner != "ray":
            raise ConfigError(f"batch_runner.runner: {runner!r} is not thread or ray")
        from mimo_core.run.ray.options import RayOptions, parse_resources, require_ray

        require_ray()
        text = self.ray_resources or settings.ray_resources
        extra = {"resources": parse_resources(text, "batch_runner.ray_resources")} if text else {}
        return RayOptions(address=self.ray_address, **extra)
