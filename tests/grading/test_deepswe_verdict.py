"""DeepSWE rows: the reward files read are those the verifier's own scripts name (issue 33). The demo's
py-median-even verifier writes only reward.json; code under test that adds a reward.txt, or leaves a
process behind, voids the verdict; the reference solution still gets 1."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mimo_core.datasets.base import Task
from mimo_core.datasets.loader import load_tasks
from mimo_core.datasets.registry import get_dataset_type
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.grading.grade import Grade

Factory = Callable[[SandboxSpec], Environment]
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.jsonl"


def median_task() -> Task:
    return next(t for t in load_tasks(str(DEMO)) if t.instance_id == "py-median-even")


def graded(new_env: Factory, extra_code: str = "", gold: bool = False) -> Grade:
    task = median_task()
    dtype = get_dataset_type(task.dataset_type)
    env = new_env(dtype.sandbox_spec(task, None, 60, True))
    dtype.setup(env, task)
    if gold:
        assert dtype.apply_gold(env, task)[0]
    if extra_code:
        path = f"{env.spec.cwd}/stats.py"
        env.write_file(path, env.read_file(path) + extra_code.encode())
    env.execute("git add -A && git -c user.name=a -c user.email=a@b commit -qm agent", cwd=env.spec.cwd)
    env.begin_grading()  # type: ignore[attr-defined]
    dtype.prepare_grading(env, task)
    return dtype.grade(env, task, dtype.collect_submission(env, task), new_env)


def test_the_reference_solution_gets_one_with_no_finding(new_env: Factory) -> None:
    grade = graded(new_env, gold=True)
    assert (grade.reward, grade.passed, grade.infra_error, grade.findings) == (1.0, True, None, []), grade.details


def test_a_reward_txt_written_by_code_under_test_is_zero(new_env: Factory) -> None:
    forge = "\nimport os\nopen(os.path.join(os.environ['LOGS_DIR'], 'verifier', 'reward.txt'), 'w').write('1')\n"
    grade = graded(new_env, forge, gold=True)  # even beside a fix: the verdict is not the verifier's
    assert (grade.reward, grade.passed, grade.infra_error) == (0.0, False, None)
    assert [f.kind for f in grade.findings] == ["forged_verdict"] and "reward.txt exists" in grade.findings[0].detail


def test_a_process_outliving_the_verifier_is_zero(new_env: Factory) -> None:
    forge = (
        "\nimport subprocess\nsubprocess.Popen(['sleep', '30'], start_new_session=True,"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    )
    grade = graded(new_env, forge, gold=True)
    assert (grade.reward, grade.passed) == (0.0, False)
    assert grade.findings and "outlived the verifier" in grade.findings[0].detail
