"""`opensource-code`: SWE-bench-style rows. Graded by restoring and patching the tests, running the
listed ones, and comparing: reward 1 iff every FAIL_TO_PASS passes and no PASS_TO_PASS fails."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from mimo_core.base.values import Seconds
from mimo_core.datasets.base import EnvFactory, Task
from mimo_core.datasets.git import BASE_REF, HERMETIC_GIT, HERMETIC_GIT_ENV
from mimo_core.datasets.repo_dataset import RepoDatasetType, RepoTask, run
from mimo_core.environments.base import Environment
from mimo_core.grading.grade import Finding, Grade
from mimo_core.grading.patch import apply_patch
from mimo_core.grading.pytest_summary import contradictions, passed, read_pytest
from mimo_core.grading.pytest_witness import PytestWitness
from mimo_core.grading.reward import quiesce, tail, void

_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.M)


class OpenSourceCodeTask(RepoTask):
    repo: str | None = None
    base_commit: str | None = None
    LEGACY_GOLD_FIELDS: ClassVar[tuple[str, ...]] = ("patch",)  # SWE-bench's name for the gold patch
    test_patch: str = ""
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    # Run once with every test id appended and parse pytest -rA; with `{test}` in it, once per test
    # and the exit code decides (for suites that are not pytest).
    test_cmd: str = "python -m pytest -rA -p no:cacheprovider"
    test_timeout: Seconds = 1800.0

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """SWE-bench on the hub stores these lists as JSON text."""
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else []
            except json.JSONDecodeError:
                raise ValueError("must be a list of test ids or its JSON text") from None
        return value

    @model_validator(mode="after")
    def _default_image(self) -> OpenSourceCodeTask:
        """SWE-bench rows carry no image; the harness names it after the instance."""
        if self.image is None and self.repo and not (self.repo_archive or self.repo_dir or self.setup_script):
            self.image = f"swebench/sweb.eval.x86_64.{self.instance_id.replace('__', '_1776_')}:latest".lower()
        return self


class OpenSourceCodeDatasetType(RepoDatasetType):
    name: ClassVar[str] = "opensource-code"
    row_model: ClassVar[type[Task]] = OpenSourceCodeTask
    default_cwd: ClassVar[str] = "/testbed"

    def protected_paths(self, task: Task) -> set[str]:
        """The test patch's files are the task's tests, whatever their names."""
        return set(_DIFF_FILE.findall(task.test_patch)) if isinstance(task, OpenSourceCodeTask) else set()

    def _restore_tests(self, env: Environment, task: OpenSourceCodeTask) -> tuple[bool, str]:
        """The agent may have edited the test files: put them back to the base (pinned at setup), then
        apply the test patch."""
        cwd = env.spec.cwd
        known = self.base_of(env)
        base = shlex.quote(known.sha) if known is not None else BASE_REF
        for path in _DIFF_FILE.findall(task.test_patch):
            q = shlex.quote(path)
            run(
                env,
                f"{HERMETIC_GIT} checkout {base} -- {q} 2>/dev/null || rm -f {q}",
                cwd=cwd,
                extra_env=HERMETIC_GIT_ENV,
            )
        return apply_patch(env, task.test_patch, cwd)

    def _run_tests(
        self, env: Environment, task: OpenSourceCodeTask, tests: list[str]
    ) -> tuple[dict[str, bool], str, list[Finding]]:
        """test id → passed, the output, and what contradicts the verdict (forged_verdict findings): only
        pytest's own summary counts (`read_pytest`); conflicting result lines, a summary that disagrees
        with its stats line or with pytest's exit status void it."""
        cwd, pm = env.spec.cwd, self.paths(env, task)
        if not tests:
            return {}, "", []
        if "{test}" in task.test_cmd:  # the exit status decides: the witness says whether pytest set it
            results, logs, found = {}, [], []
            for test in tests:
                witness = PytestWitness(env, pm.env_vars())
                res = run(
                    env,
                    pm.text(task.test_cmd.replace("{test}", shlex.quote(test))),
                    cwd=cwd,
                    timeout=task.test_timeout,
                    extra_env={**pm.env_vars(), **witness.vars},
                )
                quiesce(env)
                forged = [] if res.timed_out else witness.findings()
                results[test] = res.returncode == 0 and not forged
                found += forged
                logs.append(f"$ {test}: exit {res.returncode}\n{res.output}")
            return results, "\n".join(logs), found
        cmd = pm.text(task.test_cmd) + " " + " ".join(shlex.quote(t) for t in tests)
        witness = PytestWitness(env, pm.env_vars())
        res = run(env, cmd, cwd=cwd, timeout=task.test_timeout, extra_env={**pm.env_vars(), **witness.vars})
        quiesce(env)
        report = read_pytest(res.output)
        findings = [
            Finding(kind="forged_verdict", detail=f"pytest's summary: {c}", zeroes=True)
            for c in contradictions(report, res.returncode)
        ]
        if not res.timed_out:
            findings += witness.findings()
        return {t: passed(report.statuses, t) for t in tests}, res.output, findings

    def _grade(self, env: Environment, task: Task, submission: str, new_env: EnvFactory) -> Grade:
        assert isinstance(task, OpenSourceCodeTask)
        quiesce(env)
        ok, log = self._restore_tests(env, task)
        if not ok:
            return Grade(details={"test_patch_log": tail(log)}, infra_error="the row's test_patch does not apply")
        f2p, out1, forged1 = self._run_tests(env, task, task.FAIL_TO_PASS)
        quiesce(env)  # what the first run left cannot change the second's outcome
        p2p, out2, forged2 = self._run_tests(env, task, task.PASS_TO_PASS)
        f2p_passed, p2p_passed = sum(f2p.values()), sum(p2p.values())
        if not f2p and not p2p:
            return Grade(infra_error="the row lists no FAIL_TO_PASS or PASS_TO_PASS tests")
        success = f2p_passed == len(f2p) and p2p_passed == len(p2p)
        reward = 1.0 if success else 0.0
        details = {
            "reward": reward,
            "f2p": f2p,
            "p2p": p2p,
            "f2p_total": len(f2p),
            "f2p_passed": f2p_passed,
            "p2p_total": len(p2p),
            "p2p_passed": p2p_passed,
            "partial": (f2p_passed + p2p_passed) / (len(f2p) + len(p2p)),
            "apply_failed": False,
            "verifier_output_tail": tail(out1 + "\n" + out2),
        }
        grade = Grade(reward=reward, passed=success, details=details)
        for finding in forged1 + forged2:  # the test report contradicts itself: the verdict is void
            grade = void(grade, finding)
        return grade
