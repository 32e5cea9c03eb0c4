"""The step Jobs of `evaluate_fanout` as dagster-k8s builds them: the executor is created by
`k8s_job_executor` itself from deploy/run_config/evaluate_fanout.yaml, the instance's K8sRunLauncher from
the Helm values, the run's code origin carries the code location's container context (what
`includeConfigInLaunchedRuns` ships), and the executor's own `launch_step` posts the Job to an API-server
stand-in on 127.0.0.1 that records the body. There is no public entry point for a step's Job, so the
plan/step contexts are assembled the way dagster-k8s's own executor tests assemble them."""

from __future__ import annotations

import base64
import json
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster import DagsterInstance, validate_run_config
from dagster_k8s import k8s_job_executor

from tests.deploy.test_deploy_manifests import DEPLOY, IMAGE, VALUES, _snake

RUN_CONFIG = yaml.safe_load((DEPLOY / "run_config" / "evaluate_fanout.yaml").read_text())


class _Jobs(BaseHTTPRequestHandler):
    """Accepts `POST /apis/batch/v1/namespaces/{ns}/jobs` and keeps (path, body): all the executor sends."""

    posted: list[tuple[str, dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).posted.append((self.path, json.loads(body)))
        self.send_response(201 if self.path.endswith("/jobs") else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api_server(tmp_path: Path) -> Iterator[tuple[Path, list[tuple[str, dict[str, Any]]]]]:
    handler = type("Jobs", (_Jobs,), {"posted": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "t",
                "clusters": [{"name": "t", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
                "users": [{"name": "t", "user": {"token": "t"}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t", "namespace": "mimoagent"}}],
            }
        )
    )
    try:
        yield kubeconfig, handler.posted
    finally:
        server.shutdown()
        server.server_close()


def _instance(home: Path, kubeconfig: Path) -> DagsterInstance:
    """dagster.yaml with the run launcher the chart renders from the Helm values."""
    launcher = VALUES["runLauncher"]["config"]["k8sRunLauncher"]
    config = {
        "job_namespace": "mimoagent",
        "dagster_home": "/opt/dagster/dagster_home",
        "instance_config_map": "dagster-instance",
        "postgres_password_secret": VALUES["global"]["postgresqlSecretName"],
        "env_secrets": [s["name"] for s in launcher["envSecrets"]],
        "run_k8s_config": _snake(launcher["runK8sConfig"]),
        "service_account_name": "dagster",  # the chart's own; the code location's wins (asserted)
        "load_incluster_config": False,
        "kubeconfig_file": str(kubeconfig),
    }
    home.mkdir()
    (home / "dagster.yaml").write_text(
        yaml.safe_dump({"run_launcher": {"module": "dagster_k8s", "class": "K8sRunLauncher", "config": config}})
    )
    return DagsterInstance.from_config(str(home))


def _origin() -> Any:
    """The run's code origin as the code-location server reports it: its module, image and container context."""
    from dagster._core.code_pointer import ModuleCodePointer
    from dagster._core.origin import JobPythonOrigin, RepositoryPythonOrigin

    [deployment] = VALUES["dagster-user-deployments"]["deployments"]
    module = deployment["dagsterApiGrpcArgs"][-1]
    k8s = {
        "env_secrets": [s["name"] for s in deployment["envSecrets"]],
        "env": deployment["env"],
        "volumes": deployment["volumes"],
        "volume_mounts": deployment["volumeMounts"],
        "namespace": "mimoagent",
        "service_account_name": VALUES["dagster-user-deployments"]["serviceAccount"]["name"],
    }
    repo = RepositoryPythonOrigin(
        executable_path="/app/.venv/bin/python",
        code_pointer=ModuleCodePointer(module, "defs", "/app"),
        container_image=IMAGE,
        container_context={"k8s": k8s},
        entry_point=["dagster"],
    )
    return JobPythonOrigin("evaluate_fanout", repo)


def _launch_step(instance: DagsterInstance, step_key: str, mapping: list[str]) -> None:
    from dagster._config import process_config
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.api import create_execution_plan
    from dagster._core.execution.context.system import PlanData, PlanOrchestrationContext
    from dagster._core.execution.context_creation_job import create_context_free_log_manager
    from dagster._core.execution.plan.state import KnownExecutionState
    from dagster._core.execution.retries import RetryMode
    from dagster._core.executor.init import InitExecutorContext
    from dagster._core.executor.step_delegating.step_handler.base import StepHandlerContext
    from dagster._grpc.types import ExecuteStepArgs

    from mimo_assets.definitions_k8s import defs

    job = defs.resolve_job_def("evaluate_fanout")
    validate_run_config(job, RUN_CONFIG)  # ops and the `execution` block against k8s_job_executor's schema
    known = KnownExecutionState(dynamic_mappings={"chunk_slices": {"result": mapping}})
    plan = create_execution_plan(job, run_config=RUN_CONFIG, known_state=known)
    run = instance.create_run_for_job(job, execution_plan=plan, run_config=RUN_CONFIG, job_code_origin=_origin())
    processed = process_config(k8s_job_executor.config_schema.config_type, RUN_CONFIG["execution"]["config"])
    assert processed.success, processed.errors
    executor = k8s_job_executor.executor_creation_fn(
        InitExecutorContext(
            job=InMemoryJob(job), executor_def=k8s_job_executor, executor_config=processed.value, instance=instance
        )
    )
    plan_context = PlanOrchestrationContext(
        plan_data=PlanData(
            job=InMemoryJob(job),
            dagster_run=run,
            instance=instance,
            execution_plan=plan,
            raise_on_error=True,
            retry_mode=RetryMode.DISABLED,
        ),
        log_manager=create_context_free_log_manager(instance, run),
        executor=executor,
        output_capture=None,
    )
    args = ExecuteStepArgs(run.job_code_origin, run.run_id, [step_key], known_state=known)
    context = StepHandlerContext(instance=instance, plan_context=plan_context, steps=plan.steps, execute_step_args=args)
    list(executor._step_handler.launch_step(context))  # dagster-k8s's own step launch


def test_a_chunk_step_job_has_image_command_secrets_resources_and_labels(tmp_path: Path, api_server) -> None:
    from dagster._grpc.types import ExecuteStepArgs
    from dagster._serdes import deserialize_value

    kubeconfig, posted = api_server
    with _instance(tmp_path / "home", kubeconfig) as instance:
        _launch_step(instance, "evaluate_chunk[chunk_0001]", ["chunk_0000", "chunk_0001"])
        _launch_step(instance, "chunk_slices", [])
    [(path, job), (_, plan_job)] = posted
    assert path == "/apis/batch/v1/namespaces/mimoagent/jobs" and job["kind"] == "Job"
    pod = job["spec"]["template"]
    [c] = pod["spec"]["containers"]
    assert c["image"] == IMAGE  # the code location's image, as reported by its server
    assert c["args"] == ["dagster", "api", "execute_step"]
    env = {e["name"]: e for e in c["env"]}
    compressed = env["DAGSTER_COMPRESSED_EXECUTE_STEP_ARGS"]["value"]  # what `dagster api execute_step` reads
    step_args = deserialize_value(zlib.decompress(base64.b64decode(compressed)).decode(), ExecuteStepArgs)
    assert step_args.step_keys_to_execute == ["evaluate_chunk[chunk_0001]"]
    assert env["DAGSTER_RUN_STEP_KEY"]["value"] == "evaluate_chunk[chunk_0001]"
    assert [e["secretRef"]["name"] for e in c["envFrom"] if e.get("secretRef")] == ["mimoagent-model-keys"]
    assert env["DAGSTER_PG_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "dagster-postgresql-secret"
    assert env["MIMOAGENT_ENVIRONMENT_CLASS"]["value"] == "kubernetes"
    assert not any(
        "KEY" in name and "value" in e for name, e in env.items() if name != "DAGSTER_RUN_STEP_KEY"
    )  # keys only by secret reference
    assert c["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}
    assert [m["mountPath"] for m in c["volumeMounts"] if m["name"] == "outputs"] == ["/data/mimoagent"]
    assert pod["spec"]["serviceAccountName"] == "mimoagent-runner"
    labels = pod["metadata"]["labels"]
    assert labels["app.kubernetes.io/component"] == "step_worker" and labels["dagster/job"] == "evaluate_fanout"
    assert labels["dagster/op"] == "evaluate_chunk-chunk_0001" and labels["dagster/run-id"]
    assert labels["mimoagent/step"] == "chunk" and labels["mimoagent/fanout"] == "swe"
    assert labels["app.kubernetes.io/part-of"] == "mimoagent"  # from the Helm values' runK8sConfig
    assert job["metadata"]["labels"]["mimoagent/fanout"] == "swe"
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["ttlSecondsAfterFinished"] == 86400
    [p] = plan_job["spec"]["template"]["spec"]["containers"]  # per_step_k8s_config of the planning op
    assert p["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}
    assert plan_job["spec"]["template"]["metadata"]["labels"]["mimoagent/step"] == "plan"
