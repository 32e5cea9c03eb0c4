"""Every dataset type graded in place in the local environment, on the demo tasks: the reference
solution passes; no change, a wrong patch, a patch that does not apply and a broken verifier do not."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mimo_core.datasets.base import Task
from mimo_core.datasets.registry import get_dataset_type
from mimo_core.environments.base import Environment, SandboxSpec
from mimo_core.grading.grade import Grade

Factory = Callable[[SandboxSpec], Environment]
DEMO_IDS = [
    "py-median-even",
    "py-slugify-edges",
    "sh-wordfreq-case",
    "sh-rotate-keep-newest",
    "py-ini-comments",
    "oss-roman-subtractive",
    "generic-fizzbuzz",
    "arvo-kvdump-null-deref",
]
WRONG_PATCH = (
    "diff --git a/WRONG.txt b/WRONG.txt\nnew file mode 100644\n--- /dev/null\n+++ b/WRONG.txt\n@@ -0,0 +1 @@\n+no\n"
)
BAD_PATCH = "diff --git a/nowhere.py b/nowhere.py\n--- a/nowhere.py\n+++ b/nowhere.py\n@@ -1 +1 @@\n-x\n+y\n"


def started(task: Task, new_env: Factory) -> Environment:
    dtype = get_dataset_type(task.dataset_type)
    env = new_env(dtype.sandbox_spec(task, None, 60, True))
    dtype.setup(env, task)
    return env


def grade_with(task: Task, new_env: Factory, submission: str | None) -> Grade:
    """Recalc-style: fresh sandbox, apply the submission, collect, grade (as the rollout does)."""
    dtype = get_dataset_type(task.dataset_type)
    env = started(task, new_env)
    if submission is not None:
        dtype.apply_submission(env, task, submission)
    return dtype.grade(env, task, dtype.collect_submission(env, task) if submission is None else submission, new_env)


@pytest.mark.parametrize("instance", DEMO_IDS)
def test_reference_solution_passes(instance: str, demo_tasks: dict[str, Task], new_env: Factory) -> None:
    task = demo_tasks[instance]
    gold = get_dataset_type(task.dataset_type).gold_submission(task)
    assert gold
    grade = grade_with(task, new_env, gold)
    assert grade.infra_error is None, grade.details
    assert grade.passed and grade.reward == 1.0


@pytest.mark.parametrize("instance", DEMO_IDS)
def test_wrong_patch_fails_without_infra_error(instance: str, demo_tasks: dict[str, Task], new_env: Factory) -> None:
    grade = grade_with(demo_tasks[instance], new_env, WRONG_PATCH)
    assert (grade.passed, grade.reward, grade.infra_error) == (False, 0.0, None)
    assert not grade.details.get("apply_failed")


@pytest.mark.parametrize("instance", DEMO_IDS)
def test_patch_that_does_not_apply_fails_with_apply_failed(
    instance: str, demo_tasks: dict[str, Task], new_env: Factory
) -> None:
    grade = grade_with(demo_tasks[instance], new_env, BAD_PATCH)
    assert (grade.passed, grade.reward, grade.infra_error) == (False, 0.0, None)
    assert grade.details["apply_failed"] is True


def test_details_carry_f2p_and_p2p_counts(demo_tasks: dict[str, Task], new_env: Factory) -> None:
    grade = grade_with(demo_tasks["oss-roman-subtractive"], new_env, WRONG_PATCH)
    d = grade.details
    assert (d["f2p_total"], d["f2p_passed"], d["p2p_total"], d["p2p_passed"]) == (1, 0, 2, 2)
    assert d["f2p"] == {"tests.test_roman.TestRoman.test_subtractive": False}
    grade = grade_with(demo_tasks["py-median-even"], new_env, WRONG_PATCH)
    assert (grade.details["f2p_passed"], grade.details["p2p_passed"]) == (0, 3)


def test_separate_verifier_applies_patch_itself_and_reports_apply_failed(
    demo_tasks: dict[str, Task], new_env: Factory
) -> None:
    """sh-wordfreq-case's test.sh applies /logs/artifacts/model.patch itself (DeepSWE style)."""
    task = demo_tasks["sh-wordfreq-case"]
    dtype = get_dataset_type(task.dataset_type)
    env = started(task, new_env)
    grade = dtype.grade(env, task, BAD_PATCH, new_env)
    assert grade.reward == 0.0 and grade.details["apply_failed"] is True and grade.infra_error is None
    grade = dtype.grade(env, task, dtype.gold_submission(task) or "", new_env)
    assert grade.passed


def _fix_slug(env) -> None:
    slug = f"{env.spec.cwd}/textutil/slug.py"
    env.write_file(slug, env.read_file(slug).replace(b'"-", text)', b'"-", text).strip("-")'))


def test_strict_collect_runs_the_hooks_verbatim_so_uncommitted_work_is_not_graded(
    demo_tasks: dict[str, Task], new_env: Factory
) -> None:
    task = demo_tasks["py-slugify-edges"]  # separate verifier, hook `git diff --binary <root> HEAD`
    dtype = get_dataset_type(task.dataset_type)
    env = started(task, new_env)
    _fix_slug(env)
    assert dtype.collect_submission(env, task) == ""
    assert env.read_file(f"{env.scratch_dir}/logs/artifacts/model.patch") == b""
    grade = dtype.grade(env, task, "", new_env)
    assert grade.reward == 0.0 and grade.details["collect_mode"] == "strict"
    assert grade.details["uncommitted_files"] == 1


def test_strict_collect_grades_committed_work(demo_tasks: dict[str, Task], new_env: Factory) -> None:
    task = demo_tasks["py-slugify-edges"]
    dtype = get_dataset_type(task.dataset_type)
    env = started(task, new_env)
    _fix_slug(env)
    env.execute("git -c user.name=a -c user.email=a@b commit -qam fix")
    submission = dtype.collect_submission(env, task)
    assert 'text).strip("-")' in submission and submission.startswith("diff --git a/textutil/slug.py")
    assert dtype.grade(env, task, submission, new_env).passed


def test_lenient_collect_commits_the_agents_changes_first(demo_tasks: dict[str, Task], new_env: Factory) -> None:
    task = demo_tasks["py-slugify-edges"]
    dtype = get_dataset_type(task.dataset_type, collect="lenient")
    env = started(task, new_env)
    _fix_slug(env)
    submission = dtype.collect_submission(env, task)
    assert 'text).strip("-")' in submission
    assert env.read_file(f"{env.scratch_dir}/logs/artifacts/model.patch").decode() == submission
    grade = dtype.grade(env, task, submission, new_env)
    assert grade.passed and grade.details["collect_mode"] == "lenient" and grade.details["committed_for_agent"]


def test_a_hook_that_writes_nothing_gives_no_patch_in_strict_mode_and_our_diff_in_lenient(
    demo_tasks: dict[str, Task], new_env: Factory
) -> None:
    base = demo_tasks["py-slugify-edges"]
    task = base.model_copy(update={"collect": [h.model_copy(update={"command": "true"}) for h in base.collect]})
    for mode, expect_fix in (("strict", False), ("lenient", True)):
        dtype = get_dataset_type(task.dataset_type, collect=mode)
        env = started(task, new_env)
        _fix_slug(env)
        submission = dtype.collect_submission(env, task)
        assert ('text).strip("-")' in submission) is expect_fix
        assert dtype.grade(env, task, submission, new_env).passed is expect_fix


def test_shared_verifier_grades_the_working_tree_in_place(demo_tasks: dict[str, Task], new_env: Factory) -> None:
    task = demo_tasks["sh-rotate-keep-newest"]
    dtype = get_dataset_type(task.dataset_type)
    env = started(task, new_env)
    assert dtype.grade(env, task, "", new_env).reward == 0.0
    env.execute("sed -i 's/| sort |/| sort -r |/' rotate.sh")
    assert dtype.grade(env, task, dtype.collect_submission(env, task), new_env).passed


@pytest.mark.parametrize(
    "script,expected",
    [
        ("#!/bin/bash\necho verifier forgot the reward\n", "no reward file"),
        ("#!/bin/bash\nmkdir -p /logs/verifier && echo -1 > /logs/verifier/reward.txt\n", "crashed"),
        ("#!/bin/bash\nmkdir -p /logs/verifier && echo '{\"score\": 1}' > /logs/verifier/reward.json\n", "not valid"),
    ],
)
def test_broken_verifier_is_an_infra_error(
    script: str, expected: str, demo_tasks: dict[str, Task], new_env: Factory
) -> None:
    for instance in ("py-median-even", "py-slugify-edges"):  # shared and separate
        task = demo_tasks[instance].model_copy(deep=True)
        task.test_files = {**task.test_files, "test.sh": script}
        grade = grade_with(task, new_env, get_dataset_type(task.dataset_type).gold_submission(task))
        assert grade.infra_error and expected in grade.infra_error
        assert grade.reward is None and not grade.passed


def test_generic_eval_script_without_reward_is_an_infra_error(demo_tasks: dict[str, Task], new_env: Factory) -> None:
    task = demo_tasks["generic-fizzbuzz"].model_copy(update={"eval_script": "true"})
    grade = grade_with(task, new_env, None)
    assert grade.infra_error and "no reward file" in grade.infra_error


def test_arvo_build_failure_is_reward_zero(demo_tasks: dict[str, Task], new_env: Factory) -> None:
    task = demo_tasks["arvo-kvdump-null-deref"]
    dtype = get_dataset_type(task.dataset_type)
    env = started(task, new_env)
    env.execute("echo 'syntax error' >> kvdump.c")
    grade = dtype.grade(env, task, "", new_env)
    assert grade.reward == 0.0 and grade.details["build_ok"] is False and grade.infra_error is None


def test_row_without_git_repo_gets_a_base_commit_and_empty_diff(demo_tasks: dict[str, Task], new_env: Factory) -> None:
    task = demo_tasks["generic-fizzbuzz"]
    dtype = get_dataset_type(task.dataset_type)
    env = started(task, new_env)
    assert dtype.collect_submission(env, task) == ""
    env.write_file(f"{env.spec.cwd}/new.txt", b"hello\n")
    assert "+hello" in dtype.collect_submission(env, task)
