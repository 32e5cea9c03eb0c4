"""The Dagster-on-Kubernetes deployment as dagster-k8s itself would build it: the run pod's Job from the
shipped Helm values (K8sRunLauncher + the code location's config included in launched runs) and from a
chunk's run tags, through dagster-k8s's own `construct_dagster_k8s_job`. No cluster, no Helm: the chart's
values schema is not on any registry this project can reach (docs/kubernetes.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from dagster_k8s.container_context import K8sContainerContext
from dagster_k8s.job import DagsterK8sJobConfig, UserDefinedDagsterK8sConfig, construct_dagster_k8s_job

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
VALUES = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
IMAGE = "registry.example/mimoagent:abc123"


def _snake(d: dict[str, Any]) -> dict[str, Any]:
    """The chart writes runK8sConfig into dagster.yaml with snake_case top-level keys."""
    return {re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): v for k, v in d.items()}


def _run_context(tags: dict[str, str] | None = None) -> K8sContainerContext:
    """What K8sRunLauncher merges for a run: its own config, then the code location's (includeConfigInLaunchedRuns),
    then the run's `dagster-k8s/config` tag."""
    launcher = VALUES["runLauncher"]["config"]["k8sRunLauncher"]
    deployment = VALUES["dagster-user-deployments"]["deployments"][0]
    ctx = K8sContainerContext(
        env_secrets=[s["name"] for s in launcher["envSecrets"]],
        run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(_snake(launcher["runK8sConfig"])),
        namespace="mimoagent",
    )
    ctx = ctx.merge(
        K8sContainerContext(
            env_secrets=[s["name"] for s in deployment["envSecrets"]],
            env=deployment["env"],
            volumes=deployment["volumes"],
            volume_mounts=deployment["volumeMounts"],
            namespace="mimoagent",
            # the code server's account, carried into runs
            service_account_name=VALUES["dagster-user-deployments"]["serviceAccount"]["name"],
            resources=deployment.get("resources"),
        )
    )
    if tags and "dagster-k8s/config" in tags:
        ctx = ctx.merge(
            K8sContainerContext(
                run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(json.loads(tags["dagster-k8s/config"]))
            )
        )
    return ctx


def _run_job(ctx: K8sContainerContext) -> Any:
    job_config = DagsterK8sJobConfig(
        job_image=IMAGE,
        dagster_home="/opt/dagster/dagster_home",
        instance_config_map="dagster-instance",
        postgres_password_secret=VALUES["global"]["postgresqlSecretName"],
    )
    return construct_dagster_k8s_job(
        job_config,
        ["dagster", "api", "execute_run", "{}"],
        "dagster-run-1234",
        user_defined_k8s_config=ctx.run_k8s_config,
        pod_name="dagster-run-1234",
        component="run_worker",
        labels={"dagster/job": "evaluate", "dagster/run-id": "1234"},
    )


def test_run_pod_from_the_helm_values_has_image_command_secrets_resources_and_labels() -> None:
    job = _run_job(_run_context())
    pod = job.spec.template
    [c] = pod.spec.containers
    assert c.image == IMAGE and c.args == ["dagster", "api", "execute_run", "{}"]
    assert [e.secret_ref.name for e in c.env_from if e.secret_ref] == ["mimoagent-model-keys"]
    env = {e.name: e for e in c.env}
    assert env["DAGSTER_PG_PASSWORD"].value_from.secret_key_ref.name == "dagster-postgresql-secret"
    assert env["MIMOAGENT_ENVIRONMENT_CLASS"].value == "kubernetes"
    assert not any("KEY" in name and e.value for name, e in env.items())  # keys only by secret reference
    assert c.resources.requests == {"cpu": "500m", "memory": "1Gi"} and c.resources.limits["memory"] == "4Gi"
    rbac = {d["kind"]: d for d in yaml.safe_load_all((DEPLOY / "k8s" / "rbac.yaml").read_text())}
    assert pod.spec.service_account_name == rbac["RoleBinding"]["subjects"][0]["name"] == "mimoagent-runner"
    verbs = {(r["resources"][0], v) for r in rbac["Role"]["rules"] for v in r["verbs"]}
    assert {
        ("pods", "create"),
        ("pods", "watch"),
        ("pods", "delete"),
        ("pods/exec", "create"),
        ("networkpolicies", "create"),
        ("networkpolicies", "delete"),
    } <= verbs  # what the backend calls
    assert [m.mount_path for m in c.volume_mounts if m.name == "outputs"] == ["/data/mimoagent"]
    assert pod.metadata.labels["app.kubernetes.io/part-of"] == "mimoagent"
    labels = pod.metadata.labels
    assert labels["dagster/job"] == "evaluate" and labels["app.kubernetes.io/component"] == "run_worker"
    assert job.spec.backoff_limit == 0 and job.spec.ttl_seconds_after_finished == 86400


def test_a_chunk_run_config_is_valid_for_the_evaluate_job_and_sizes_its_run_pod() -> None:
    from dagster import validate_run_config

    from mimo_assets.jobs import evaluate_job

    run_config = yaml.safe_load((DEPLOY / "run_config" / "evaluate_chunk.yaml").read_text())
    validate_run_config(evaluate_job, run_config)
    tags = json.loads((DEPLOY / "run_config" / "evaluate_chunk_tags.json").read_text())
    [c] = (pod := _run_job(_run_context(tags)).spec.template).spec.containers
    assert c.resources.requests == {"cpu": "1", "memory": "2Gi"} and c.resources.limits["cpu"] == "2"
    assert pod.metadata.labels["mimoagent/chunk"] == "0000"
    assert [e.secret_ref.name for e in c.env_from if e.secret_ref] == ["mimoagent-model-keys"]  # still there


def test_no_secret_value_is_shipped_in_the_deploy_folder() -> None:
    text = "".join(p.read_text(errors="replace") for p in DEPLOY.rglob("*") if p.is_file())
    assert not re.search(r"sk-[A-Za-z0-9]{8,}|^\s*(postgresqlPassword|password|api_key)\s*:\s*\S", text, re.M | re.I)
