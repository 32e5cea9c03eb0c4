"""`deepswe`: Harbor tasks (DeepSWE and any other) converted to rows by `harbor.py`.

The `[[verifier.collect]]` hooks extract the agent's patch (`/logs/artifacts/model.patch`); the
verifier (`bash /tests/test.sh`) writes `/logs/verifier/reward.json` or `reward.txt`. With
`verifier_mode: shared` it runs in the agent's sandbox; with `separate` in a fresh, pristine sandbox
into which the patch is written (and applied, unless the verifier applies it itself).
"""

from __future__ import annotations

import re
import shlex
from typing import Any, ClassVar, Literal

from pydantic import Field

from mimo_core.base.strict_model import NumbersAreNumbers
from mimo_core.base.values import Cpus, MegaBytes, Seconds
from mimo_core.datasets.base import EnvFactory, Task
from mimo_core.datasets.git import GIT, GIT_ENV, HERMETIC_GIT, HERMETIC_GIT_ENV
from mimo_core.datasets.paths import TASK_CWD_LABEL
from mimo_core.datasets.repo_dataset import RepoDatasetType, RepoTask, file_bytes, run
from mimo_core.datasets.requirements import grading_problem
from mimo_core.datasets.tamper import diff_paths, drop_paths
from mimo_core.environments.base import Environment, read_head
from mimo_core.errors import SandboxError
from mimo_core.grading.evidence import keep_evidence
from mimo_core.grading.grade import Grade
from mimo_core.grading.patch import apply_patch
from mimo_core.grading.pytest_witness import PytestWitness
from mimo_core.grading.reward import apply_failed_grade, quiesce, read_reward, reward_names, tail, void
from mimo_core.limits import current_limits, truncation_note

DEFAULT_PATCH_ARTIFACT = "/logs/artifacts/model.patch"
# git's words for a revision it does not have: the hook's `<base>` is not in this repository
_MISSING_REVISION = re.compile(r"unknown revision|bad revision|bad object|invalid object name|not a valid object")


class CollectHook(NumbersAreNumbers):
    command: str
    timeout_sec: Seconds = 300.0


class DeepSWETask(RepoTask):
    verifier_mode: Literal["shared", "separate"] = "shared"
    verifier_command: str = "bash /tests/test.sh"
    verifier_timeout_sec: Seconds = 1800.0
    verifier_network: bool = False
    verifier_env: dict[str, str] = Field(default_factory=dict)
    verifier_cpus: Cpus | None = None
    verifier_memory_mb: MegaBytes | None = None
    verifier_build_timeout_sec: Seconds | None = None
    verifier_applies_patch: bool | None = None  # None: yes if a test file mentions the patch artifact
    agent_timeout_sec: Seconds | None = None  # Harbor [agent].timeout_sec: the agent's wall-clock limit
    build_timeout_sec: Seconds | None = None  # Harbor [environment].build_timeout_sec
    # Files the verifier needs that the task folder lacks (set by the converter): grading is a
    # grading_error naming them, without running anything
    verifier_files_missing: list[str] = Field(default_factory=list)
    collect: list[CollectHook] = Field(default_factory=list)
    artifacts: list[str] = Field(default_factory=lambda: [DEFAULT_PATCH_ARTIFACT])
    solution_files: dict[str, Any] = Field(default_factory=dict)
    solution_env: dict[str, str] = Field(default_factory=dict)  # Harbor [solution.env], for solve.sh
    dockerfile_dir: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def patch_artifact(self) -> str:
        return next((a for a in self.artifacts if a.endswith((".patch", ".diff"))), DEFAULT_PATCH_ARTIFACT)


class DeepSWEDatasetType(RepoDatasetType):
    name: ClassVar[str] = "deepswe"
    row_model: ClassVar[type[Task]] = DeepSWETask
    default_cwd: ClassVar[str] = "/app"

    def __init__(self, collect: str = "strict") -> None:
        super().__init__(collect)
        self.collect_notes: dict[str, Any] = {}  # what collecting saw; reported with the grade
        self.collect_error: str | None = None  # the hooks could not run as the task assumes: not gradable
        self.patch_missing = False

    def collect_submission(self, env: Environment, task: Task) -> str:
        """The collected patch without the sections of the test infrastructure that grading put back in
        the tree (a committed `conftest.py` stays in `base..HEAD`): what is recorded is what is graded."""
        patch = self._collect(env, task)
        kept, dropped = drop_paths(patch, self.tampered_paths)
        if dropped:
            self.collect_notes["submission_dropped_paths"] = dropped[:50]
        return kept

    def _collect(self, env: Environment, task: Task) -> str:
        """Run the task's collect hooks on the tree the agent left and read the patch artifact.

        `strict` (default) runs them verbatim, as the official harness does: DeepSWE's hook is
        `git diff --binary <base> HEAD`, so only committed work counts, and a hook that writes nothing
        gives no patch. `lenient` first commits uncommitted work and falls back to our own diff when
        the hooks write nothing.
        """
        assert isinstance(task, DeepSWETask)
        if not task.collect:
            return super().collect_submission(env, task)
        pm = self.paths(env, task)
        artifact = pm.path(task.patch_artifact)
        cwd = env.spec.cwd
        status = run(env, f"{GIT} status --porcelain --untracked-files=all", cwd=cwd)
        uncommitted = (
            len([line for line in status.output.splitlines() if line.strip()]) if status.returncode == 0 else None
        )  # None: not a git repository any more
        self.collect_notes = {"collect_mode": self.collect, "uncommitted_files": uncommitted}
        if self.collect == "lenient" and uncommitted:
            run(
                env,
                f"{GIT} add -A && ({GIT} diff --cached --quiet || {GIT} commit -q -m 'agent changes')",
                cwd=cwd,
                extra_env=GIT_ENV,
            )
            self.collect_notes["committed_for_agent"] = True
        run(env, f"rm -f {shlex.quote(artifact)}")
        exits = []
        for hook in task.collect:
            res = run(
                env,
                pm.text(hook.command),
                cwd=cwd,
                timeout=hook.timeout_sec,
                extra_env={**HERMETIC_GIT_ENV, **pm.env_vars()},
            )
            exits.append(res.returncode)
            if res.returncode != 0 and _MISSING_REVISION.search(res.output):
                self.collect_error = (
                    "a collect hook names a commit the sandbox's repository lacks (the sandbox "
                    f"is not the task's image?): {tail(res.output, 300).strip()}"
                )
        self.collect_notes["collect_exit_codes"] = exits
        try:
            head = read_head(env, artifact, current_limits().max_artifact_bytes)
            if head.truncated:  # a cut patch would not apply: say why the reward is 0
                self.collect_notes["patch_truncated"] = truncation_note(head.size, len(head.data))
            return head.data.decode("utf-8", errors="replace")
        except Exception:  # each backend reports a missing file its own way
            if self.collect == "lenient":
                self.collect_notes["patch_source"] = "own diff (the hooks wrote no patch)"
                return super().collect_submission(env, task)
            self.patch_missing = True
            self.collect_notes["patch_missing"] = True
            return ""

    def apply_gold(self, env: Environment, task: Task) -> tuple[bool, str]:
        """The reference solution, committed as every task instruction asks of the agent, so the
        verbatim collect hooks (base..HEAD) see it."""
        ok, log = super().apply_gold(env, task)
        if ok:
            run(
                env,
                f"{GIT} add -A && ({GIT} diff --cached --quiet || {GIT} commit -q -m 'reference solution')",
                cwd=env.spec.cwd,
                extra_env=GIT_ENV,
            )
        return ok, log

    def _verifier_applies(self, task: DeepSWETask) -> bool:
        if task.verifier_applies_patch is not None:
            return task.verifier_applies_patch
        name = task.patch_artifact.rsplit("/", 1)[-1]
        return any(name in (v if isinstance(v, str) else str(v.get("content", ""))) for v in task.test_files.values())

    def _verifier_spec(self, env: Environment, task: DeepSWETask):
        spec = env.spec.model_copy(deep=True)
        spec.cwd = env.spec.labels.get(TASK_CWD_LABEL, self.task_cwd(task))
        spec.timeout = task.verifier_timeout_sec
        spec.network = task.verifier_network
        spec.env = {**spec.env, **task.verifier_env}
        spec.cpus = task.verifier_cpus or spec.cpus
        spec.memory_mb = task.verifier_memory_mb or spec.memory_mb
        spec.build_timeout = task.verifier_build_timeout_sec or spec.build_timeout
        return spec

    def _grade(self, env: Environment, task: Task, submission: str, new_env: EnvFactory) -> Grade:
        assert isinstance(task, DeepSWETask)
        if (problem := grading_problem(task) or self.collect_error) is not None:
            return Grade(details=dict(self.collect_notes), infra_error=problem)
        if task.verifier_mode == "shared":
            return self._verify(env, task)
        venv = new_env(self._verifier_spec(env, task))
        try:
            self.setup(venv, task)
            pm = self.paths(venv, task)
            patch_path = pm.path(task.patch_artifact)
            venv.execute(f"mkdir -p {shlex.quote(patch_path.rsplit('/', 1)[0])}")
            # The whole diff goes in (as in the harness), then the test infrastructure goes back to the
            # task's, exactly as in the agent's sandbox; a verifier that applies the patch itself gets it
            # without those files' sections, onto the pristine tree.
            ok, log = apply_patch(venv, submission, venv.spec.cwd)
            if not ok:
                grade = apply_failed_grade(log)
                grade.details.update(self.collect_notes)
                return grade
            self.secure_repository(venv, task)
            if self._verifier_applies(task):
                submission, _ = drop_paths(submission, self.tampered_paths)
                self._reset_to_base(venv, diff_paths(submission))
                if not self.patch_missing:  # a hook that wrote nothing leaves no artifact, as in the harness
                    venv.write_file(patch_path, submission.encode())
            return self._verify(venv, task)
        finally:
            venv.stop()

    def _reset_to_base(self, env: Environment, paths: set[str]) -> None:
        """The named paths back to the base commit (removed where the base has none)."""
        base = self.base_of(env)
        if base is None or not paths:
            return
        sha = shlex.quote(base.sha)
        script = "".join(
            f"if {HERMETIC_GIT} cat-file -e {sha}:{shlex.quote(p)} 2>/dev/null; then "
            f"{HERMETIC_GIT} checkout -q {sha} -- {shlex.quote(p)}; else rm -rf -- {shlex.quote(p)}; fi; "
            for p in sorted(paths)
        )
        res = run(env, script + "true", cwd=env.spec.cwd, extra_env=HERMETIC_GIT_ENV)
        if res.returncode != 0:
            raise SandboxError(f"could not reset the verifier's tree: {tail(res.output, 500)}")

    def _verify(self, env: Environment, task: DeepSWETask) -> Grade:
        pm = self.paths(env, task)
        verifier_dir = pm.path("/logs/verifier")
        quiesce(env)  # the collect hooks ran git on the agent's repository: nothing of that keeps running
        env.execute(f"mkdir -p {shlex.quote(verifier_dir)} && rm -f {shlex.quote(verifier_dir)}/reward.*")
        self.write_files(env, task, task.test_files, "/tests")
        command_env = {**task.verifier_env, **pm.env_vars()}
        witness = PytestWitness(env, command_env)
        res = run(
            env,
            pm.text(task.verifier_command),
            cwd=env.spec.cwd,
            timeout=task.verifier_timeout_sec,
            extra_env={**command_env, **witness.vars},
        )
        # read_reward's kill right after the command counts what outlived the verifier; the files read are
        # those the verifier's own scripts name
        names = reward_names(
            task.verifier_command, *(file_bytes(v).decode(errors="replace") for v in task.test_files.values())
        )
        grade = read_reward(
            env, verifier_dir, res.output, names=names, exit_code=res.returncode, timed_out=res.timed_out
        )
        if not res.timed_out:
            for finding in witness.findings():
                grade = void(grade, finding)
        grade.details.setdefault("verifier_output_tail", tail(res.output))
        grade.details["verifier_exit_code"] = res.returncode
        grade.details["verifier_mode"] = task.verifier_mode
        grade.details.update(self.collect_notes)
        keep_evidence(env, verifier_dir, res.output, grade, task.test_files.get("config.json"))
        if res.timed_out:
            grade.infra_error = f"the verifier timed out after {task.verifier_timeout_sec}s: no reward is read"
        return grade
