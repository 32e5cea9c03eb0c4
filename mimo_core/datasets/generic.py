"""`generic`: an instruction, an image or a setup script, and an evaluation script that writes a reward
file. The escape hatch for any new benchmark."""

from __future__ import annotations

from typing import ClassVar

from mimo_core.base.values import Seconds
from mimo_core.datasets.base import EnvFactory, Task
from mimo_core.datasets.repo_dataset import RepoDatasetType, RepoTask, file_bytes
from mimo_core.environments.base import Environment
from mimo_core.grading.evidence import keep_evidence
from mimo_core.grading.grade import Grade
from mimo_core.grading.pytest_witness import PytestWitness
from mimo_core.grading.reward import quiesce, read_reward, reward_names, tail, void


class GenericTask(RepoTask):
    eval_script: str | None = None  # bash, run in cwd; writes /logs/verifier/reward.json or reward.txt
    eval_timeout: Seconds = 600.0
    reward_dir: str = "/logs/verifier"


class GenericDatasetType(RepoDatasetType):
    name: ClassVar[str] = "generic"
    row_model: ClassVar[type[Task]] = GenericTask
    default_cwd: ClassVar[str] = "/testbed"

    def _grade(self, env: Environment, task: Task, submission: str, new_env: EnvFactory) -> Grade:
        assert isinstance(task, GenericTask)
        if not task.eval_script:
            return Grade(details={"graded": False, "reason": "the row has no eval_script"})
        pm = self.paths(env, task)
        reward_dir = pm.path(task.reward_dir)
        quiesce(env)
        env.execute(f"rm -f '{reward_dir}/reward.json' '{reward_dir}/reward.txt'; mkdir -p '{reward_dir}'")
        if task.test_files:
            self.write_files(env, task, task.test_files, "/tests")
        witness = PytestWitness(env)
        res = self.run_script(env, task, task.eval_script, "eval", timeout=task.eval_timeout, extra_env=witness.vars)
        # read_reward's kill right after the script counts what outlived it; the files read are those the
        # eval script (and the files it runs) name
        names = reward_names(
            task.eval_script, *(file_bytes(v).decode(errors="replace") for v in task.test_files.values())
        )
        grade = read_reward(env, reward_dir, res.output, names=names, exit_code=res.returncode, timed_out=res.timed_out)
        if not res.timed_out:
            for finding in witness.findings():
                grade = void(grade, finding)
        grade.details.setdefault("verifier_output_tail", tail(res.output))
        grade.details["verifier_exit_code"] = res.returncode
        keep_evidence(env, reward_dir, res.output, grade, task.test_files.get("config.json"))
        if res.timed_out:
            grade.infra_error = f"eval_script timed out after {task.eval_timeout}s: no reward is read"
        return grade
