"""The reward is the verifier's, read once and checked (issue 33): graded on real local sandboxes (plain
and bubblewrap), with code under test that forges the verdict and honest controls that must still pass."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mimo_core.config import EnvironmentConfig
from mimo_core.datasets.base import Task
from mimo_core.datasets.loader import load_tasks
from mimo_core.datasets.registry import get_dataset_type
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.environments.registry import make_environment
from mimo_core.grading.grade import Grade
from mimo_core.grading.reward import MAX_REWARD_BYTES, read_reward, reward_names
from tests.host_needs import bwrap_missing, in_ci

Factory = Callable[[SandboxSpec], Environment]
SANDBOXES = [
    pytest.param("none", id="local"),
    pytest.param(
        "bwrap",
        id="bwrap",
        marks=pytest.mark.skipif(bwrap_missing() and not in_ci(), reason="bubblewrap is not installed"),
    ),
]


@pytest.fixture(params=SANDBOXES)
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    started: list[Environment] = []
    config = EnvironmentConfig(
        environment_class="local", sandbox=request.param, backend_kwargs={"root": str(tmp_path / "envs")}
    )

    def make(spec: SandboxSpec) -> Environment:
        env = make_environment(config, spec)
        started.append(env)
        env.start()
        return env

    yield make
    for env in started:
        env.stop()


# --- the generic row: the verifier runs ./answer.sh (code under test) and writes reward.txt -----------------

WRONG = "#!/bin/bash\necho wrong\n"
RIGHT = "#!/bin/bash\necho right\n"
EVAL = (
    "mkdir -p /logs/verifier\n"
    'if [ "$(bash ./answer.sh)" = right ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
)


def generic_task(tmp_path: Path, eval_script: str = EVAL, **row: object) -> Task:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "answer.sh").write_text(WRONG)
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        json.dumps(
            {
                "instance_id": "answer",
                "dataset_type": "generic",
                "repo_dir": "repo",
                "eval_script": eval_script,
                "problem_statement": "print right",
                **row,
            }
        )
        + "\n"
    )
    return load_tasks(str(path))[0]


def graded(task: Task, factory: Factory, answer: str) -> Grade:
    """The agent leaves `answer` as ./answer.sh; grading as the rollout does it."""
    dtype = get_dataset_type(task.dataset_type)
    env = factory(dtype.sandbox_spec(task, None, 60, True))
    dtype.setup(env, task)
    env.write_file(f"{env.spec.cwd}/answer.sh", answer.encode(), mode=0o755)
    env.begin_grading()  # type: ignore[attr-defined]
    dtype.prepare_grading(env, task)
    return dtype.grade(env, task, dtype.collect_submission(env, task), factory)


def forged_findings(grade: Grade) -> list[str]:
    return [f.detail for f in grade.findings if f.kind == "forged_verdict" and f.zeroes]


def test_honest_fix_gets_one_and_no_finding(tmp_path: Path, factory: Factory) -> None:
    task = generic_task(tmp_path)
    grade = graded(task, factory, RIGHT)
    assert (grade.reward, grade.passed, grade.infra_error, grade.findings) == (1.0, True, None, [])
    grade = graded(task, factory, WRONG)
    assert (grade.reward, grade.passed, grade.infra_error, grade.findings) == (0.0, False, None, [])


def test_reward_json_forged_beside_the_verifiers_reward_txt_is_zero(tmp_path: Path, factory: Factory) -> None:
    """The verifier names only reward.txt; the code under test writes reward.json, which was read first."""
    forge = WRONG + 'echo \'{"reward": 1}\' > "$LOGS_DIR/verifier/reward.json"\n'
    grade = graded(generic_task(tmp_path), factory, forge)
    assert (grade.reward, grade.passed, grade.infra_error) == (0.0, False, None)
    assert any("reward.json exists" in d for d in forged_findings(grade)), grade.findings


def test_reward_files_that_disagree_are_zero(tmp_path: Path, factory: Factory) -> None:
    """A verifier that may write either file: the code under test's reward.json says 1, the verifier's
    reward.txt says 0."""
    eval_script = EVAL + "# the grader may also write reward.json\n"
    forge = WRONG + 'echo \'{"reward": 1}\' > "$LOGS_DIR/verifier/reward.json"\n'
    grade = graded(generic_task(tmp_path, eval_script), factory, forge)
    assert (grade.reward, grade.passed, grade.infra_error) == (0.0, False, None)
    assert any("disagree" in d for d in forged_findings(grade)), grade.findings


def test_a_process_left_by_code_under_test_voids_the_verdict(tmp_path: Path, factory: Factory) -> None:
    """A detached process that rewrites the reward after the verifier wrote it."""
    forge = WRONG + (
        "(setsid sh -c 'sleep 5; echo 1 > \"$LOGS_DIR/verifier/reward.txt\"' </dev/null >/dev/null 2>&1 &)\n"
    )
    grade = graded(generic_task(tmp_path), factory, forge)
    assert (grade.reward, grade.passed, grade.infra_error) == (0.0, False, None)
    assert any("outlived the verifier" in d for d in forged_findings(grade)), grade.findings
    assert grade.details["processes_after_verifier"] >= 1


def test_a_verifier_killed_after_a_forged_reward_is_never_a_pass(tmp_path: Path, factory: Factory) -> None:
    """The code under test writes reward 1 and kills the verifier's shell before it writes its own."""
    forge = WRONG + 'echo 1 > "$LOGS_DIR/verifier/reward.txt"; kill -9 $PPID\n'
    grade = graded(generic_task(tmp_path), factory, forge)
    assert (grade.passed, grade.reward, grade.infra_error) == (False, 0.0, None), grade
    assert any("killed by signal 9" in d for d in forged_findings(grade)), grade.findings


def test_a_verifier_killed_before_any_reward_is_a_grading_error(tmp_path: Path, factory: Factory) -> None:
    """Killed with nothing written: whose fault it is, the rollout's reference check decides."""
    grade = graded(generic_task(tmp_path), factory, WRONG + "kill -9 $PPID\n")
    assert not grade.passed and grade.reward is None
    assert grade.infra_error and "killed by signal 9" in grade.infra_error, grade


def test_a_timed_out_verifier_is_a_grading_error_whatever_it_wrote(tmp_path: Path, factory: Factory) -> None:
    forge = WRONG + 'echo 1 > "$LOGS_DIR/verifier/reward.txt"; sleep 60\n'
    eval_script = "mkdir -p /logs/verifier\nbash ./answer.sh\n"
    grade = graded(generic_task(tmp_path, eval_script, eval_timeout=2), factory, forge)
    assert not grade.passed and grade.reward is None
    assert grade.infra_error and "timed out" in grade.infra_error


def test_an_oversized_reward_file_is_not_read(tmp_path: Path, factory: Factory) -> None:
    eval_script = EVAL + "# or reward.json\n"
    forge = WRONG + (
        '{ printf \'{"reward": 1, "pad": "\'; head -c 200000 /dev/zero | tr "\\0" x; printf \'"}\'; } '
        '> "$LOGS_DIR/verifier/reward.json"; echo 1 > "$LOGS_DIR/verifier/reward.txt"\n'
    )
    grade = graded(generic_task(tmp_path, eval_script + "exit 0\n"), factory, forge)
    assert (grade.reward, grade.passed) == (0.0, False)
    assert any("bytes" in d for d in forged_findings(grade)), grade.findings


# --- read_reward on its own ---------------------------------------------------------------------------------


@pytest.fixture
def env(factory: Factory) -> Environment:
    return factory(SandboxSpec(cwd="/testbed"))


def put(env: Environment, files: dict[str, str]) -> str:
    folder = f"{env.scratch_dir}/verifier"
    env.execute(f"mkdir -p {folder}")
    for name, text in files.items():
        env.write_file(f"{folder}/{name}", text.encode())
    return folder


def test_agreeing_reward_files_are_read(env: Environment) -> None:
    grade = read_reward(env, put(env, {"reward.txt": "1\n", "reward.json": '{"reward": 1, "f2p_total": 3}'}))
    assert (grade.reward, grade.passed, grade.findings) == (1.0, True, [])
    assert grade.details["f2p_total"] == 3


def test_only_the_named_file_is_read(env: Environment) -> None:
    folder = put(env, {"reward.json": '{"reward": 0}'})
    assert read_reward(env, folder, names=("reward.json",)).reward == 0.0
    grade = read_reward(env, folder, names=("reward.txt",))
    assert grade.reward == 0.0 and forged_findings(grade) and grade.details["void_reason"]


@pytest.mark.parametrize("code", [137, -9, 143])
def test_a_verifier_killed_by_a_signal_is_never_a_pass(env: Environment, code: int) -> None:
    """With a reward already written the kill cut it short (void, 0); with none, a grading error."""
    grade = read_reward(env, put(env, {"reward.txt": "1"}), exit_code=code)
    assert (grade.reward, grade.passed) == (0.0, False) and forged_findings(grade), grade
    env.execute(f"rm -rf {env.scratch_dir}/verifier")
    grade = read_reward(env, put(env, {}), exit_code=code)
    assert grade.infra_error and "killed by signal" in grade.infra_error and not grade.passed


@pytest.mark.parametrize("code", [0, 1, 2])
def test_an_ordinary_exit_code_keeps_the_reward(env: Environment, code: int) -> None:
    assert read_reward(env, put(env, {"reward.txt": "1"}), exit_code=code).passed


def test_reward_file_at_the_cap_is_read_over_it_is_not(env: Environment) -> None:
    pad = MAX_REWARD_BYTES - len('{"reward": 1, "p": ""}')
    assert read_reward(env, put(env, {"reward.json": '{"reward": 1, "p": "' + "x" * pad + '"}'})).passed
    grade = read_reward(env, put(env, {"reward.json": '{"reward": 1, "p": "' + "x" * (pad + 1) + '"}'}))
    assert grade.reward == 0.0 and forged_findings(grade)


@pytest.mark.parametrize(
    "scripts,names",
    [
        (("echo 1 > /logs/verifier/reward.txt",), ("reward.txt",)),
        (("python3 /tests/grader.py", "open('/logs/verifier/reward.json', 'w')"), ("reward.json",)),
        (("[ -f reward.json ] || echo -1 > reward.txt",), ("reward.json", "reward.txt")),
        (("python3 grade.py",), ("reward.json", "reward.txt")),
    ],
)
def test_reward_names_follow_the_verifiers_texts(scripts: tuple[str, ...], names: tuple[str, ...]) -> None:
    assert reward_names(*scripts) == names
