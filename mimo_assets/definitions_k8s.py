"""The code location as deployed on Kubernetes (deploy/Dockerfile, deploy/helm/values.yaml): everything in
`definitions.py` plus `evaluate_fanout`, whose steps are Kubernetes Jobs. A module of its own so local
use (`dagster dev`, the CLI's recording) neither imports dagster-k8s nor lists a job it cannot launch."""

from dagster import Definitions

from mimo_assets import definitions as local  # the module: Dagster allows one Definitions at module scope
from mimo_assets.fanout import evaluate_fanout_job

defs = Definitions.merge(local.defs, Definitions(jobs=[evaluate_fanout_job]))
