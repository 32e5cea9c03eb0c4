"""The environment contract the docker backend passes, run on pods: the very same test bodies
(tests/docker/test_docker_exec.py, test_docker_sandbox.py, tests/tools/shell_checks.py) with a pod-backed
environment in place of a container. The stand-in's pods are containers, so what differs is all ours:
exec over the WebSocket channel protocol, tar over exec, the marker kill through a second exec."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docker import test_docker_exec as docker_exec
from tests.docker import test_docker_sandbox as docker_sandbox
from tests.tools import shell_checks


def test_exec_merges_output_keeps_exit_code_env_and_cwd(make_k8s_env) -> None:
    docker_exec.test_exec_merges_output_keeps_exit_code_env_and_cwd(make_k8s_env)


def test_background_job_does_not_hold_the_call(make_k8s_env) -> None:
    docker_exec.test_background_job_does_not_hold_the_call(make_k8s_env)


def test_timeout_kills_the_command_and_its_children_and_pod_keeps_working(make_k8s_env) -> None:
    docker_exec.test_timeout_kills_the_command_and_its_children_and_container_keeps_working(make_k8s_env)


def test_files_go_in_and_out_as_tar_over_exec(make_k8s_env, tmp_path: Path) -> None:
    docker_exec.test_files_go_in_and_out_as_tar(make_k8s_env, tmp_path)


@pytest.mark.parametrize("check", shell_checks.ALL, ids=lambda c: c.__name__)
def test_persistent_shell_in_a_pod(make_k8s_env, check) -> None:
    check(make_k8s_env(cwd="/testbed"))


def test_the_shell_is_one_exec_stream_kept_open(make_k8s_env) -> None:
    docker_exec.test_the_shell_is_one_exec_kept_open(make_k8s_env)


def test_a_running_command_can_be_killed_from_another_thread(make_k8s_env) -> None:
    docker_exec.test_a_running_command_can_be_killed_from_another_thread(make_k8s_env)


def test_agent_cannot_kill_the_pod_from_inside(make_k8s_env) -> None:
    docker_sandbox.test_agent_cannot_kill_the_container_from_inside(make_k8s_env)
