"""`arvo`: ARVO-style vulnerability rows: a fuzz target with a crashing proof of concept.

Graded by rebuilding and running the PoC: the build fails or it still crashes → 0; it builds and the
PoC no longer crashes → 1. ARVO images provide `arvo compile` and `arvo`, the defaults here.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import model_validator

from mimo_core.base.values import Seconds
from mimo_core.datasets.base import EnvFactory, Task
from mimo_core.datasets.repo_dataset import RepoDatasetType, RepoTask, run
from mimo_core.environments.base import Environment
from mimo_core.grading.grade import Grade
from mimo_core.grading.reward import quiesce, tail

CRASH_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: MemorySanitizer",
    "ERROR: UndefinedBehaviorSanitizer",
    "runtime error:",
    "ERROR: libFuzzer",
    "Segmentation fault",
    "SUMMARY: AddressSanitizer",
)


class ArvoTask(RepoTask):
    build_cmd: str = "arvo compile"
    poc_cmd: str = "arvo"
    build_timeout: Seconds = 3600.0
    poc_timeout: Seconds = 600.0
    crash_type: str | None = None
    LEGACY_GOLD_FIELDS: ClassVar[tuple[str, ...]] = ("fix",)  # ARVO's name for the fixing patch

    @model_validator(mode="before")
    @classmethod
    def _arvo_names(cls, data: Any) -> Any:
        """ARVO's own rows say `localId` and carry no prompt: derive both."""
        if isinstance(data, dict):
            data = dict(data)
            if not any(k in data for k in ("instance_id", "id", "task_id")) and "localId" in data:
                data["instance_id"] = f"arvo-{data['localId']}"
            if not any(k in data for k in ("problem_statement", "instruction", "prompt", "task")):
                kind = data.get("crash_type") or "a memory-safety bug"
                data["problem_statement"] = (
                    f"The project crashes ({kind}) on a proof-of-concept input. Find and fix the bug so "
                    "that the project still builds and the input no longer crashes it."
                )
        return data


def crashed(returncode: int, output: str) -> bool:
    return returncode != 0 or any(m in output for m in CRASH_MARKERS)


class ArvoDatasetType(RepoDatasetType):
    name: ClassVar[str] = "arvo"
    row_model: ClassVar[type[Task]] = ArvoTask
    default_cwd: ClassVar[str] = "/src"

    def _grade(self, env: Environment, task: Task, submission: str, new_env: EnvFactory) -> Grade:
        assert isinstance(task, ArvoTask)
        pm = self.paths(env, task)
        quiesce(env)
        if task.test_files:
            self.write_files(env, task, task.test_files, "/tests")
        build = run(env, pm.text(task.build_cmd), cwd=env.spec.cwd, timeout=task.build_timeout, extra_env=pm.env_vars())
        details: dict[str, Any] = {"build_ok": build.returncode == 0, "build_output_tail": tail(build.output)}
        if build.returncode != 0:
            return Grade(reward=0.0, details={**details, "reward": 0.0, "crashed": None})
        quiesce(env)  # nothing the (agent-written) build started may run beside the proof of concept
        poc = run(env, pm.text(task.poc_cmd), cwd=env.spec.cwd, timeout=task.poc_timeout, extra_env=pm.env_vars())
        crash = crashed(poc.returncode, poc.output)
        reward = 0.0 if crash else 1.0
        details.update(
            {
                "reward": reward,
                "crashed": crash,
                "poc_exit_code": poc.returncode,
                "poc_timed_out": poc.timed_out,
                "verifier_output_tail": tail(poc.output),
            }
        )
        return Grade(reward=reward, passed=not crash, details=details)
