"""Behaviour every repository-based dataset type shares: seeding the repo, a git base to diff against,
collecting the diff, applying patches and reference solutions.

Everything goes through Environment methods and the PathMap, so each type runs on every backend.
"""

from __future__ import annotations

import base64
import binascii
import shlex
import uuid
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from mimo_core.base.values import Cpus, MegaBytes
from mimo_core.datasets.base import EnvFactory, Task
from mimo_core.datasets.base_repo import prepared_base, prepared_sha
from mimo_core.datasets.git import BASE_REF, GIT, GIT_ENV, HERMETIC_GIT, HERMETIC_GIT_ENV
from mimo_core.datasets.paths import TASK_CWD_LABEL, PathMap, path_map
from mimo_core.datasets.tamper import RepoBase, diff_paths, secure_repository
from mimo_core.environments.base import Environment, ExecResult, SandboxSpec
from mimo_core.errors import DatasetError, SandboxError
from mimo_core.grading.grade import Finding, Grade
from mimo_core.grading.patch import apply_patch
from mimo_core.grading.reward import apply_failed_grade, tail


class RepoTask(Task):
    """Fields for the task's starting repository and its reference solution.

    The reference patch is `gold_patch` for every dataset type. Rows in a benchmark's own format may
    name it as that benchmark does (`LEGACY_GOLD_FIELDS`: SWE-bench's `patch`, ARVO's `fix`); those are
    read into `gold_patch` at load, so old rows and converted files keep working.
    """

    LEGACY_GOLD_FIELDS: ClassVar[tuple[str, ...]] = ()

    repo_archive: str | None = None  # base64 .tar.gz of the starting files (self-contained rows)
    repo_dir: str | None = None  # host folder with the starting files, relative to the dataset file
    setup_script: str | None = None  # bash, run in cwd after seeding
    gold_patch: str | None = None
    solution_script: str | None = None  # bash; used when there is no gold patch
    cpus: Cpus | None = None
    memory_mb: MegaBytes | None = None
    storage_mb: MegaBytes | None = None  # the sandbox's disk budget (environment.storage_mb otherwise)
    network: bool = True
    test_files: dict[str, Any] = Field(default_factory=dict)  # path → text, or {content, encoding: base64}

    @field_validator("repo_archive")
    @classmethod
    def _archive_is_base64(cls, v: str | None) -> str | None:
        """Checked at load, so a bad row stops the run before anything starts instead of failing later."""
        if v is not None:
            try:
                base64.b64decode("".join(v.split()), validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("not valid base64 (expected a base64-encoded .tar.gz)") from None
        return v

    @model_validator(mode="before")
    @classmethod
    def _gold_patch_name(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not cls.LEGACY_GOLD_FIELDS:
            return data
        data = dict(data)
        for old in cls.LEGACY_GOLD_FIELDS:
            if old not in data:
                continue
            value = data.pop(old)
            if data.get("gold_patch") and value and data["gold_patch"] != value:
                raise ValueError(f"`{old}` (the old name of the gold patch) and `gold_patch` differ; keep one")
            data["gold_patch"] = data.get("gold_patch") or value
        return data

    def resolve(self, path: str) -> Path:
        """A path from the row, relative to the dataset file (so a copied dataset folder still works)."""
        p = Path(path)
        if p.is_absolute() or not self.source:
            return p
        base = Path(self.source)
        return (base if base.is_dir() else base.parent) / p


def file_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict) and "content" in value:
        if value.get("encoding") == "base64":
            return base64.b64decode(value["content"])
        return str(value["content"]).encode()
    raise DatasetError(f"file entry must be text or {{content, encoding}}, got {type(value).__name__}")


def cut_repository_history(env: Environment, cwd: str, sha: str) -> dict[str, Any]:
    """The repository's history cut at its base (no branch, tag, reflog, stash or object of the future),
    as the record keeps it."""
    from mimo_core.datasets.history import cut_history

    return cut_history(env, cwd, sha).model_dump(mode="json")


def run(
    env: Environment,
    command: str,
    cwd: str | None = None,
    timeout: float | None = None,
    extra_env: dict[str, str] | None = None,
) -> ExecResult:
    return env.execute(command, timeout=timeout, cwd=cwd, env=extra_env)


class RepoDatasetType:
    """Base class; subclasses set `name`, `row_model`, `default_cwd` and implement `_grade`."""

    name: ClassVar[str] = "generic"
    row_model: ClassVar[type[Task]] = RepoTask
    default_cwd: ClassVar[str] = "/testbed"

    def __init__(self, collect: str = "strict") -> None:
        self.collect = collect  # grading.collect: only types with their own collect rules (deepswe) differ
        self.apply_failed_log: str | None = None  # set when a submission did not apply: graded 0, apply_failed
        # Each sandbox's repository as it started (base commit, git config), kept here on the host where no
        # process of the agent can move it: by id of the sandbox, which lives as long as this object.
        self.bases: dict[int, RepoBase] = {}
        self.tamper_findings: list[Finding] = []  # what secure_repository found in the agent's sandbox
        self.tampered_paths: set[str] = set()  # every path it put back or removed
        self.history: dict[str, Any] | None = None  # what cutting the repository's history removed
        self.solution_paths: set[str] = set()  # what a reference solution script changed (exempt)

    # --- sandbox ----------------------------------------------------------------------------------
    def task_cwd(self, task: Task) -> str:
        return task.cwd or self.default_cwd

    def sandbox_spec(self, task: Task, cwd: str | None, timeout: float, use_dataset_env: bool) -> SandboxSpec:
        """The row's cwd wins (its image, hooks and verifier expect it); `environment.cwd` is the default
        for rows that name none, before the dataset type's own default."""
        task_cwd = task.cwd or cwd or self.default_cwd
        spec = SandboxSpec(cwd=task_cwd, timeout=timeout, labels={TASK_CWD_LABEL: task_cwd})
        if use_dataset_env:
            spec.image = task.image
            spec.env = dict(task.env)
            if isinstance(task, RepoTask):
                spec.cpus, spec.memory_mb, spec.network = task.cpus, task.memory_mb, task.network
                spec.storage_mb = task.storage_mb
            dockerfile_dir = getattr(task, "dockerfile_dir", None)
            if dockerfile_dir and isinstance(task, RepoTask):
                spec.dockerfile_dir = str(task.resolve(dockerfile_dir))
            spec.build_timeout = getattr(task, "build_timeout_sec", None)
        return spec

    def paths(self, env: Environment, task: Task) -> PathMap:
        return path_map(env, self.task_cwd(task))

    def setup(self, env: Environment, task: Task) -> None:
        """Few commands on purpose: each is a process spawn locally and ~75 ms as a `docker exec`."""
        pm = self.paths(env, task)
        cwd = env.spec.cwd
        dirs = " ".join(shlex.quote(pm.path(r)) for r in ("/logs/verifier", "/logs/artifacts"))
        made = self._check(
            run(env, f"mkdir -p {shlex.quote(cwd)} {dirs} && ls -A {shlex.quote(cwd)}"), "create the work folders"
        )
        if isinstance(task, RepoTask):
            if not made.output.strip():
                prepared = prepared_base(task)
                sha = prepared_sha(prepared) if prepared is not None else None
                if prepared is not None and sha is not None:  # files + base made once per task on the host
                    env.copy_in(prepared, cwd)
                    config = prepared / ".git" / "config"
                    self.bases[id(env)] = RepoBase(sha, config.read_bytes() if config.is_file() else None)
                    return
                self._seed(env, task, cwd)
            if task.setup_script:
                self.run_script(env, task, task.setup_script, "setup", check=True)
        self.ensure_git_base(env, cwd)

    def _seed(self, env: Environment, task: RepoTask, cwd: str) -> None:
        """Copy the starting files into an empty cwd (an image that holds the repository wins)."""
        if task.repo_archive:
            archive = f"{env.scratch_dir}/repo-{uuid.uuid4().hex[:8]}.tar.gz"
            env.write_file(archive, base64.b64decode(task.repo_archive))
            self._check(
                run(env, f"tar -xzf {shlex.quote(archive)} && rm -f {shlex.quote(archive)}", cwd=cwd),
                "unpack repo_archive",
            )
        elif task.repo_dir:
            src = task.resolve(task.repo_dir)
            if not src.is_dir():
                raise DatasetError(f"{task.instance_id}: repo_dir {src} is not a folder")
            env.copy_in(src, cwd)

    def ensure_git_base(self, env: Environment, cwd: str) -> None:
        """Make cwd a git repository (if it is not the top of one) and remember its base commit and git
        config on the host. A repository that came with history (an image's) has it cut at the base."""
        script = (
            'if [ "$(git rev-parse --show-toplevel 2>/dev/null)" != "$(pwd -P)" ]; then '
            f"git init -q && {GIT} add -A && {GIT} commit -q --allow-empty -m base || exit 1; echo made; "
            f"else echo existing; fi; {GIT} update-ref {BASE_REF} HEAD && {GIT} rev-parse HEAD"
        )
        res = self._check(run(env, script, cwd=cwd, extra_env=GIT_ENV), "create and record the base commit")
        words = res.output.split()
        sha = words[-1] if words else ""
        if len(sha) < 40:
            raise SandboxError(f"could not read the base commit: {tail(res.output, 500)}")
        if "existing" in words:
            self.history = cut_repository_history(env, cwd, sha)
        try:
            config = env.read_file(f"{cwd.rstrip('/')}/.git/config")
        except Exception:  # each backend reports a missing file its own way
            config = None
        self.bases[id(env)] = RepoBase(sha, config)

    def base_of(self, env: Environment) -> RepoBase | None:
        return self.bases.get(id(env))

    # --- the task's test infrastructure ------------------------------------------------------------
    def exempt_paths(self, task: Task) -> set[str]:
        """Paths the reference solution changes: its changes there are the task's own, never tampering."""
        gold = self.gold_submission(task)
        return (diff_paths(gold) if gold else set()) | self.solution_paths

    def protected_paths(self, task: Task) -> set[str]:
        """Paths the task itself names as its tests (beyond protected.py's rules): types override."""
        return set()

    def secure_repository(self, env: Environment, task: Task) -> list[Finding]:
        """Once the agent's processes are gone and before anything is collected: the repository's git
        config and test infrastructure back to the task's (datasets/tamper.py); what was changed is
        returned (and kept on this object for the grade and the patch sent to a separate verifier)."""
        base = self.base_of(env)
        if base is None:
            return []
        findings, paths = secure_repository(
            env, env.spec.cwd, base, exempt=self.exempt_paths(task), protected=self.protected_paths(task)
        )
        self.tamper_findings += findings
        self.tampered_paths |= paths
        return findings

    @staticmethod
    def _check(res: ExecResult, what: str) -> ExecResult:
        if res.returncode != 0:
            raise SandboxError(f"could not {what} (exit {res.returncode}): {tail(res.output, 2000)}")
        return res

    def run_script(
        self,
        env: Environment,
        task: Task,
        script: str,
        label: str,
        check: bool = False,
        timeout: float | None = None,
        cwd: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Write a bash script (paths mapped) to scratch and run it in the task's cwd."""
        pm = self.paths(env, task)
        path = f"{env.scratch_dir}/{label}-{uuid.uuid4().hex[:8]}.sh"
        env.write_file(path, pm.text(script).encode(), mode=0o755)
        res = run(
            env,
            f"bash {shlex.quote(path)}",
            cwd=cwd or env.spec.cwd,
            timeout=timeout,
            extra_env={**(extra_env or {}), **pm.env_vars()},
        )
        if check:
            self._check(res, f"run the task's {label} script")
        return res

    def write_files(self, env: Environment, task: Task, files: dict[str, Any], root: str) -> None:
        """Write a files map under `root` (a task path such as /tests), text files with paths mapped."""
        pm = self.paths(env, task)
        for rel, value in files.items():
            data = file_bytes(value)
            if not (isinstance(value, dict) and value.get("encoding") == "base64"):
                data = pm.text(data.decode()).encode()
            dest = pm.path(f"{root.rstrip('/')}/{rel}")
            run(env, f"mkdir -p {shlex.quote(dest.rsplit('/', 1)[0])}")
            env.write_file(dest, data, mode=0o755 if rel.endswith(".sh") else 0o644)

    def prepare_grading(self, env: Environment, task: Task) -> list[str]:
        """After `env.begin_grading()`: the task's verifier folders (/logs/verifier, /logs/artifacts,
        /tests, /solution) are made anew, empty. Returns what the agent had put there (a container's real
        /logs or /tests; on the local backend they live in the scratch folder, which is new anyway)."""
        pm = self.paths(env, task)
        roots = [pm.path(r) for r in ("/logs/verifier", "/logs/artifacts", "/tests", "/solution")]
        quoted = " ".join(shlex.quote(r) for r in roots)
        made = " ".join(shlex.quote(r) for r in roots[:2])
        found = run(
            env,
            f'for d in {quoted}; do [ -L "$d" ] && echo "$d"; [ -d "$d" ] && '
            f'find "$d" -mindepth 1 -maxdepth 3 2>/dev/null | head -20; done; '
            f"rm -rf -- {quoted}; mkdir -p -- {made}",
            cwd=env.scratch_dir,
            timeout=120,
        )
        if found.returncode != 0:
            raise SandboxError(f"could not make the verifier's folders anew: {tail(found.output, 500)}")
        return [line for line in found.output.splitlines() if line.strip()][:20]

    # --- submissions ------------------------------------------------------------------------------
    def collect_submission(self, env: Environment, task: Task) -> str:
        """The tree against the base commit pinned at setup, through an index of our own (the agent's may
        hide changes: skip-worktree, assume-unchanged, forged stat data), with no external diff or textconv."""
        cwd = env.spec.cwd
        known = self.base_of(env)
        base = known.sha if known is not None else BASE_REF
        index = shlex.quote(f"{env.scratch_dir}/collect-index-{uuid.uuid4().hex[:8]}")
        res = run(
            env,
            f"export GIT_INDEX_FILE={index}; {HERMETIC_GIT} read-tree {base} && {HERMETIC_GIT} add -A && "
            f"{HERMETIC_GIT} diff --cached --binary --no-ext-diff --no-textconv {base}; s=$?; "
            f"rm -f {index}; exit $s",
            cwd=cwd,
            extra_env=HERMETIC_GIT_ENV,
        )
        if res.returncode != 0:
            raise SandboxError(f"could not collect the diff: {tail(res.output, 2000)}")
        return res.output

    def gold_submission(self, task: Task) -> str | None:
        return getattr(task, "gold_patch", None) or None

    def apply_submission(self, env: Environment, task: Task, submission: str) -> tuple[bool, str]:
        """Apply a saved submission; a failure is remembered (this object lives as long as the rollout),
        so `grade` reports `apply_failed` whoever called it."""
        ok, log = apply_patch(env, submission, env.spec.cwd)
        self.apply_failed_log = None if ok else log
        return ok, log

    def apply_gold(self, env: Environment, task: Task) -> tuple[bool, str]:
        """The reference solution: the gold patch, else the solution script (for the oracle and recalc gt)."""
        gold = self.gold_submission(task)
        if gold:
            return self.apply_submission(env, task, gold)
        script = getattr(task, "solution_script", None)
        if script:
            files = getattr(task, "solution_files", None) or {}
            if files:
                self.write_files(env, task, files, "/solution")
            res = self.run_script(env, task, script, "solve", extra_env=getattr(task, "solution_env", None))
            if res.returncode == 0 and self.base_of(env) is not None:  # what it changed is the task's own
                self.solution_paths |= diff_paths(self.collect_submission(env, task))
            return res.returncode == 0, res.output
        return False, f"{task.instance_id}: the row has no reference solution (gold_patch or solution_script)"

    def grade(self, env: Environment, task: Task, submission: str, new_env: EnvFactory) -> Grade:
        if self.apply_failed_log is not None:
            return apply_failed_grade(self.apply_failed_log)
        return self._grade(env, task, submission, new_env)

    def _grade(self, env: Environment, task: Task, submission: str, new_env: EnvFactory) -> Grade:
        raise NotImplementedError
