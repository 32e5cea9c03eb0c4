"""Put the task's test infrastructure back before the verifier runs, and say what the agent had changed.

Grading runs what the agent wrote: a one-file `conftest.py` whose report hook turns failures into passes,
an `addopts` that deselects the failing test, a `pytest/` package at the root, a `.pth` file, a
`.gitattributes` filter. Once every process of the agent is dead, `secure_repository` compares the
repository's test infrastructure (protected.py) with the task's base commit (pinned on the host at setup,
so moving `refs/mimo/base` changes nothing), restores the repository's git config, and puts back or
removes every difference. Each is returned as a Finding with its paths, for the record and the
`grading.tamper` policy. Paths the reference solution touches are the task's own and left alone.
"""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from mimo_core.containment.events import Kind
from mimo_core.datasets.git import HERMETIC_GIT, HERMETIC_GIT_ENV
from mimo_core.environments.base import Environment, read_head
from mimo_core.errors import SandboxError
from mimo_core.grading.blame import GitDirReplaced, check_workdir
from mimo_core.grading.grade import Finding, Grade
from mimo_core.grading.protected import (
    CACHE_DIRS,
    IMPORT_HOOKS,
    RUNNER_FILES,
    SECTIONED_FILES,
    SHADOW_NAMES,
    TEST_DIRS,
    TEST_FILES,
    category,
    sections_changed,
    shadow_name,
)

# What `grading.tamper: zero` zeroes. Informational only: tests_added (honest agents write tests too) and
# system_files (an honest `pip install` changes site-packages and ~/.cache; it is put back all the same).
ZEROED_BY_POLICY = frozenset({"tampered_tests", "git_config"})
_SHOWN = 12  # paths named in one event's detail
_MAX_CONFIG = 4 * 1024 * 1024  # bytes of a config file compared; a git config is read the same way
_MAX_LISTING = 64 * 1024 * 1024  # bytes of the listing of the repository's test infrastructure
_DIFF_FILE = re.compile(r"^diff --git a/(.+?) b/(.+?)$", re.M)


@dataclass
class RepoBase:
    """What a rollout's repository started as, kept on the host: the base commit and its git config."""

    sha: str
    git_config: bytes | None = None


@dataclass
class Plan:
    restore: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (mode, sha) from the base
    remove: set[str] = field(default_factory=set)
    why: dict[str, str] = field(default_factory=dict)  # path -> kind (tampered_tests | tests_added)


def diff_paths(patch: str) -> set[str]:
    """Every path a unified git diff names (both sides)."""
    return {p for pair in _DIFF_FILE.findall(patch) for p in pair}


# --- git config ---------------------------------------------------------------------------------------

_SECTION = re.compile(r"^\s*\[\s*([^\]\s\"]+)(?:\s+\"([^\"]*)\")?\s*\]")
_KEY = re.compile(r"^\s*([A-Za-z][\w-]*)\s*(?:=\s*(.*))?$")
# Keys that make git run a program or read files the repository does not hold.
_RUNS_CODE = re.compile(
    r"^(filter\..*|diff\.external|diff\..*\.(command|textconv)|merge\..*\.driver|"
    r"core\.(hookspath|fsmonitor|attributesfile|worktree|gitproxy|sshcommand|pager|editor|"
    r"excludesfile)|include\..*|includeif\..*|alias\..*|gpg\..*program|credential\..*|"
    r"uploadpack\..*|protocol\..*)$"
)


def risky_git_keys(config: bytes | None) -> set[str]:
    """`section.key=value` entries of a git config that run code or read outside the repository."""
    found: set[str] = set()
    section = ""
    for line in (config or b"").decode("utf-8", errors="replace").splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0] if not line.lstrip().startswith("[") else line
        m = _SECTION.match(line)
        if m:
            section = m.group(1).lower() + (f".{m.group(2).lower()}" if m.group(2) is not None else "")
            line = line[m.end() :]
        k = _KEY.match(line)
        if k and section:
            name = f"{section}.{k.group(1).lower()}"
            if _RUNS_CODE.match(name):
                found.add(f"{name}={(k.group(2) or '').strip()}"[:200])
    return found


# --- the listing --------------------------------------------------------------------------------------

_MARK = "@@MIMO-SECTION@@"


def _names_expr(names: Iterable[str]) -> str:
    return " -o ".join(f"-name {shlex.quote(n)}" for n in names)


def _listing_script(sha: str, tmp: str) -> str:
    prune = f"\\( {_names_expr(sorted(CACHE_DIRS))} \\) -prune"
    protected = " -o ".join(
        [
            _names_expr(
                (
                    "conftest.py",
                    "entry_points.txt",
                    "config",
                    "config.toml",
                    *IMPORT_HOOKS,
                    *RUNNER_FILES,
                    *sorted(SECTIONED_FILES),
                    *TEST_FILES,
                )
            ),
            *(f"-path '*/{d}/*'" for d in sorted(TEST_DIRS)),
        ]
    )
    shadow = _names_expr(n for name in sorted(SHADOW_NAMES) for n in (name, f"{name}.py"))
    g = HERMETIC_GIT
    q = shlex.quote(tmp)
    return "\n".join(
        [
            "set -u",
            f"exec > {shlex.quote(tmp + '.out')}",  # bytes, NULs and all, read back with read_head
            f"{g} ls-tree -r -z --full-tree {shlex.quote(sha)} || exit 3",
            f"printf '\\0{_MARK}\\0'",
            f"find . {prune} -o -type f \\( {protected} \\) -print0 > {q} || exit 4",
            f"cat {q}; printf '\\0{_MARK}\\0'",
            f"xargs -0 -r {g} hash-object --no-filters -- < {q} || exit 5",
            f"printf '\\0{_MARK}\\0'",
            f"find . {prune} -o -type l \\( {protected} \\) -print0 | while IFS= read -r -d '' p; do "
            'printf \'%s\\0%s\\0\' "$p" "$(readlink -- "$p")"; done',
            f"printf '\\0{_MARK}\\0'",
            f"find . {prune} -o \\( {shadow} \\) -print0",
            f"rm -f {q}",
        ]
    )


def _split(raw: str) -> list[list[str]]:
    return [[x for x in part.split("\0") if x] for part in raw.split(f"\0{_MARK}\0")]


def _rel(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _parse_base(entries: list[str]) -> dict[str, tuple[str, str, str]]:
    base = {}
    for entry in entries:
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and path:
            base[path] = (parts[0], parts[1], parts[2])
    return base


def _plan(env: Environment, cwd: str, sha: str, exempt: set[str], protected: set[str]) -> Plan:
    tmp = f"{env.scratch_dir}/tamper-{uuid.uuid4().hex[:8]}"
    res = env.execute(f"bash -c {shlex.quote(_listing_script(sha, tmp))}", cwd=cwd, timeout=300, env=HERMETIC_GIT_ENV)
    try:
        head = read_head(env, tmp + ".out", _MAX_LISTING) if res.returncode == 0 else None
        if head is not None and head.truncated:  # millions of test files: the agent's to answer for
            raise SandboxError(f"the repository's test files list over {_MAX_LISTING} bytes")
        raw = head.data.decode("utf-8", errors="surrogateescape") if head is not None else ""
    finally:
        env.execute(f"rm -f {shlex.quote(tmp + '.out')}", timeout=30)
    parts = _split(raw)
    if res.returncode != 0 or len(parts) != 5:
        raise SandboxError(f"could not list the repository's test files (exit {res.returncode}): {res.output[-500:]}")
    base = _parse_base(parts[0])
    paths = [_rel(p) for p in parts[1]]
    hashes = raw.split(f"\0{_MARK}\0")[2].split()
    if len(hashes) != len(paths):
        raise SandboxError("could not hash the repository's test files")
    found = dict(zip(paths, hashes, strict=True))
    links = {_rel(parts[3][i]): parts[3][i + 1] if i + 1 < len(parts[3]) else "" for i in range(0, len(parts[3]), 2)}
    plan = Plan()
    candidates = set(found) | set(links) | {p for p in base if category(p) or p in protected}
    for path in sorted(candidates):
        kind = category(path) or ("test_file" if path in protected else None)
        if kind is None or path in exempt:
            continue
        entry = base.get(path)
        if entry is not None and entry[1] == "blob":
            mode, _, blob = entry
            if mode == "120000":  # a link in the base too: the same target, or changed
                changed = path not in links or (_blob(env, cwd, blob) or b"").decode(errors="replace") != links[path]
            else:
                changed = path in links or found.get(path) != blob
            if changed and kind == "runner_sections" and path in found and path not in links:
                changed = sections_changed(path, _blob(env, cwd, blob), _file(env, cwd, path))
            if changed:
                plan.restore[path] = (mode, blob)
                plan.why[path] = "tampered_tests"
        elif entry is None:
            if kind == "runner_sections":
                empty = b"{}" if path.endswith("package.json") else b""
                if path in links or sections_changed(path, empty, _file(env, cwd, path)):
                    plan.remove.add(path)
                    plan.why[path] = "tampered_tests"
                continue
            plan.remove.add(path)
            plan.why[path] = "tests_added" if kind == "test_file" else "tampered_tests"
    test_dirs = {""} | {
        str(PurePosixPath(p).parent).strip(".") for p in [*base, *found] if category(p) in ("test_file", "conftest")
    }
    for path in (_rel(p) for p in parts[4]):
        parent = str(PurePosixPath(path).parent).strip(".")
        if (
            shadow_name(path)
            and parent in test_dirs
            and path not in base
            and path not in exempt
            and not any(b.startswith(path + "/") for b in base)
        ):
            plan.remove.add(path)
            plan.why[path] = "tampered_tests"
    return plan


def _blob(env: Environment, cwd: str, sha: str) -> bytes | None:
    tmp = f"{env.scratch_dir}/blob-{uuid.uuid4().hex[:8]}"
    res = env.execute(
        f"{HERMETIC_GIT} cat-file blob {shlex.quote(sha)} > {shlex.quote(tmp)}",
        cwd=cwd,
        timeout=60,
        env=HERMETIC_GIT_ENV,
    )
    try:
        return read_head(env, tmp, _MAX_CONFIG).data if res.returncode == 0 else None
    finally:
        env.execute(f"rm -f {shlex.quote(tmp)}", timeout=30)


def _file(env: Environment, cwd: str, path: str) -> bytes | None:
    """A repository file the agent may have made huge: at most _MAX_CONFIG bytes (more is no config of ours:
    then it counts as changed, since it cannot equal the base's)."""
    try:
        head = read_head(env, f"{cwd.rstrip('/')}/{path}", _MAX_CONFIG)
    except Exception:  # each backend reports a missing file its own way
        return None
    return head.data + (b"\0[truncated]" if head.truncated else b"")


def _revert_script(plan: Plan, sha_by_path: dict[str, tuple[str, str]]) -> str:
    g = HERMETIC_GIT
    lines = [
        "set -u",
        'unlink_parents() { d=$(dirname -- "$1"); while [ "$d" != . ] && [ "$d" != / ]; do '
        '[ -L "$d" ] && rm -f -- "$d"; d=$(dirname -- "$d"); done; }',
        "fail=0",
    ]
    for path in sorted(plan.remove):
        q = shlex.quote(path)
        lines.append(f"unlink_parents {q}; rm -rf -- {q} || fail=1")
    for path, (mode, blob) in sorted(sha_by_path.items()):
        q, b = shlex.quote(path), shlex.quote(blob)
        write = (
            f'ln -s -- "$({g} cat-file blob {b})" {q}'
            if mode == "120000"
            else f"{g} cat-file blob {b} > {q}" + (f" && chmod 755 {q}" if mode == "100755" else "")
        )
        lines.append(f'unlink_parents {q}; rm -rf -- {q}; mkdir -p -- "$(dirname -- {q})" && {write} || fail=1')
    # Compiled caches are the run's, never the task's: an unchecked hash-based .pyc would outlive its source.
    lines.append("find . -name .git -prune -o -name __pycache__ -type d -prune -exec rm -rf -- {} + 2>/dev/null")
    lines.append("exit $fail")
    return "\n".join(lines)


def _findings(plan: Plan) -> list[Finding]:
    out = []
    kinds: tuple[tuple[Kind, str], ...] = (
        ("tampered_tests", "put back to the task's version"),
        ("tests_added", "removed"),
    )
    for kind, verb in kinds:
        paths = sorted(p for p, k in plan.why.items() if k == kind)
        if paths:
            shown = ", ".join(paths[:_SHOWN]) + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")
            out.append(Finding(kind=kind, detail=f"{len(paths)} path(s) {verb} before grading: {shown}"))
    return out


def _restore_git_config(env: Environment, cwd: str, base: RepoBase) -> list[Finding]:
    """The repository's own git config and attributes go back to the base's before any grading git
    command: no filter, external diff, textconv, hook path or include of the agent's runs."""
    git_dir = f"{cwd.rstrip('/')}/.git"
    probe = env.execute(f"[ -d {shlex.quote(git_dir)} ] && [ ! -L {shlex.quote(git_dir)} ] && echo dir", timeout=60)
    if probe.output.strip() != "dir":
        check_workdir(env)  # an emptied working directory says so first
        raise GitDirReplaced(f"{git_dir} is no longer the repository's folder (a link, a file or gone)")
    findings = []
    if base.git_config is not None:
        now = _file(env, cwd, ".git/config")
        if now != base.git_config:
            risky = sorted(risky_git_keys(now) - risky_git_keys(base.git_config))
            if risky:
                findings.append(
                    Finding(
                        kind="git_config",
                        detail="the repository's git config was reset; it held " + ", ".join(risky[:_SHOWN]),
                    )
                )
            env.write_file(f"{git_dir}/config", base.git_config)
    env.execute(f"rm -f -- {shlex.quote(git_dir)}/info/attributes", timeout=60)
    return findings


def secure_repository(
    env: Environment,
    cwd: str,
    base: RepoBase,
    *,
    exempt: AbstractSet[str] = frozenset(),
    protected: AbstractSet[str] = frozenset(),
) -> tuple[list[Finding], set[str]]:
    """Restore the git config, then put the test infrastructure back (see the module's docstring).
    Returns the findings and every path put back or removed."""
    findings = _restore_git_config(env, cwd, base)
    plan = _plan(env, cwd, base.sha, set(exempt), set(protected))
    script = _revert_script(plan, plan.restore)
    path = f"{env.scratch_dir}/revert-{uuid.uuid4().hex[:8]}.sh"
    env.write_file(path, script.encode())
    res = env.execute(
        f"bash {shlex.quote(path)}; s=$?; rm -f {shlex.quote(path)}; exit $s",
        cwd=cwd,
        timeout=300,
        env=HERMETIC_GIT_ENV,
    )
    if res.returncode != 0:
        raise SandboxError(f"could not put the test files back (exit {res.returncode}): {res.output[-500:]}")
    return findings + _findings(plan), set(plan.why)


# --- patches ------------------------------------------------------------------------------------------


def split_patch(patch: str) -> list[tuple[set[str], str]]:
    """A git diff cut into its files' sections: (paths named, section text); text before the first
    section is kept with no paths."""
    starts = [m.start() for m in re.finditer(r"^diff --git ", patch, re.M)]
    if not starts:
        return [(set(), patch)] if patch else []
    sections: list[tuple[set[str], str]] = [(set(), patch[: starts[0]])] if starts[0] else []
    for i, s in enumerate(starts):
        text = patch[s : starts[i + 1] if i + 1 < len(starts) else len(patch)]
        m = _DIFF_FILE.match(text)
        sections.append(({m.group(1), m.group(2)} if m else set(), text))
    return sections


def drop_paths(patch: str, drop: set[str]) -> tuple[str, list[str]]:
    """The patch without the sections that touch `drop`; the paths dropped."""
    kept, dropped = [], []
    for paths, text in split_patch(patch):
        if paths & drop:
            dropped += sorted(paths & drop)
        else:
            kept.append(text)
    return "".join(kept), sorted(set(dropped))


def apply_policy(grade: Grade, findings: list[Finding], policy: str) -> Grade:
    """A void verdict (a finding that zeroes) is 0 whatever the verifier said or whether it broke; under
    `grading.tamper: zero` a changed test infrastructure is 0 too. The reason is in the details."""
    void = [f for f in findings if f.zeroes]
    policy_hit = [f for f in findings if policy == "zero" and f.kind in ZEROED_BY_POLICY]
    hits = void or policy_hit
    if not hits:
        return grade
    details = {
        **grade.details,
        "reward": 0.0,
        "verifier_reward": grade.reward,
        "tamper_zeroed": "; ".join(f"{f.kind}: {f.detail}" for f in hits)[:1000],
    }
    if grade.infra_error:
        details["grading_error_ignored"] = grade.infra_error
    return grade.model_copy(update={"reward": 0.0, "passed": False, "infra_error": None, "details": details})
