"""No answers in history: a repository holding its future (another branch, a tag, a remote-tracking ref, a
reflog entry, a stash, a note, a replace ref, a dangling commit, ORIG_HEAD/FETCH_HEAD, packed and loose)
is cut at the base in a real sandbox; none of the ways an agent looks finds the future afterwards, and
the base, its past, the current branch and the working tree (uncommitted work included) are unchanged."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mimo_core.datasets.git import BASE_REF
from mimo_core.datasets.history import cut_history
from mimo_core.environments.base import Environment, SandboxSpec
from tests.host_needs import in_ci

pytestmark = pytest.mark.skipif(shutil.which("git") is None and not in_ci(), reason="git is not installed on this host")
Factory = Callable[[SandboxSpec], Environment]

# Built in the sandbox with the agent's plain git (no hermetic flags: the image's maker used plain git too).
POISONED = r"""
set -e
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
git init -q .
git symbolic-ref HEAD refs/heads/main
printf 'def add(a, b):\n    return a - b\n' > calc.py
echo readme > README
git add calc.py README && git commit -qm past
git tag v0.1
echo more >> README && git commit -qam base
base=$(git rev-parse HEAD)
# the fix on another branch, an annotated tag on it
git checkout -qb fix
printf 'def add(a, b):\n    return a + b  # FUTURE_FIX\n' > calc.py
git commit -qam "FUTURE_FIX the fix"
fix=$(git rev-parse HEAD)
git tag -a v1.0 -m "FUTURE_TAG release"
git checkout -q main
# a remote with a remote-tracking ref and an upstream
git remote add origin https://example.invalid/repo.git
git update-ref refs/remotes/origin/main "$fix"
git config branch.main.remote origin && git config branch.main.merge refs/heads/main
# a commit reachable only from the reflog (made, then reset away)
echo FUTURE_REFLOG > later.py && git add later.py && git commit -qm "FUTURE_REFLOG later"
reflog=$(git rev-parse HEAD)
git reset -q --hard "$base"
# everything so far packed: the future is inside a pack once its refs are gone
git pack-refs --all && git repack -a -d -q
# a stash
echo 'FUTURE_STASH' >> calc.py && git stash -q
stash=$(git rev-parse refs/stash)
# a note on the base
git notes add -m "FUTURE_NOTE the answer is a + b" "$base"
# a replace ref for the past commit, a pull-request ref, a dangling commit and a dangling blob (loose)
repl=$(echo "FUTURE_REPLACE" | git commit-tree "$fix^{tree}")
git replace "$base~1" "$repl"
pr=$(echo "FUTURE_PR" | git commit-tree "$fix^{tree}" -p "$base")
git update-ref refs/pull/7/head "$pr"
dangling=$(echo "FUTURE_DANGLING" | git commit-tree "$fix^{tree}" -p "$base")
blob=$(echo "FUTURE_BLOB" | git hash-object -w --stdin)
git update-ref ORIG_HEAD "$fix"
echo "$fix	branch 'fix' of https://example.invalid/repo" > .git/FETCH_HEAD
# the working tree: an untracked file, an edited tracked file, a staged new file
echo wip > untracked.txt
echo edited >> README
echo staged > staged.txt && git add staged.txt
echo "BASE=$base"
for v in fix reflog stash repl pr dangling blob; do eval "echo FUTURE=\$$v"; done
echo "TAGOBJ=$(git rev-parse v1.0)"
echo "FIXTREE=$(git rev-parse "$fix^{tree}")"
echo "NOTE=$(git rev-parse refs/notes/commits)"
"""


def sh(env: Environment, command: str, check: bool = True, cwd: str | None = None) -> str:
    res = env.execute(command, cwd=cwd or env.spec.cwd)
    if check:
        assert res.returncode == 0, res.output
    return res.output


def poisoned(env: Environment, cwd: str | None = None) -> tuple[str, list[str]]:
    out = sh(env, POISONED, cwd=cwd)
    values = [line.split("=", 1) for line in out.splitlines() if "=" in line]
    base = next(v for k, v in values if k == "BASE")
    future = [v for k, v in values if k in ("FUTURE", "TAGOBJ", "FIXTREE", "NOTE")]
    assert len(future) == 10
    return base, future


def state(env: Environment) -> dict[str, str]:
    """What must not change: the base's past (its own, not what a replace ref showed), the branch, the
    working tree and the index."""
    git = "git --no-replace-objects -c safe.directory='*'"
    return {
        "head": sh(env, f"{git} rev-parse HEAD"),
        "branch": sh(env, f"{git} symbolic-ref HEAD"),
        "past": sh(env, f"{git} rev-list --format='%H %T %s' HEAD"),
        "past_tag": sh(env, f"{git} rev-parse v0.1"),
        "status": sh(env, f"{git} status --porcelain=v1 --untracked-files=all"),
        "diff": sh(env, f"{git} diff HEAD --binary"),
        "index": sh(env, f"{git} ls-files -s"),
        "files": sh(env, "find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha1sum"),
    }


def finds_the_future(env: Environment, future: list[str], cwd: str | None = None) -> list[str]:
    """Every way the issue names (and a few more) an agent digs for the fix; empty when none works."""
    cwd = cwd or env.spec.cwd
    found = []
    for sha in future:
        if env.execute(f"git cat-file -e {sha}", cwd=cwd).returncode == 0:
            found.append(f"cat-file -e {sha}")
    looks = {
        "log --all": "git log --all --format='%H %B' -p",
        "log --reflog": "git log -g --all --format='%H %B' 2>/dev/null; git reflog 2>/dev/null",
        "fsck": "git fsck --lost-found --unreachable --dangling 2>&1; ls -R .git/lost-found 2>/dev/null",
        "stash": "git stash list; git stash show -p 2>&1",
        "notes": "git notes list; git log --notes --format='%N'",
        "tags": "git tag -n; git for-each-ref",
        "remote": "git remote -v; git branch -a",
        "replace": "git replace -l; git log --all --format=%B",
        "raw files": "grep -rl FUTURE .git 2>/dev/null; true",
        "objects": "git cat-file --batch-all-objects --batch 2>/dev/null | grep -a FUTURE; true",
    }
    for name, command in looks.items():
        out = env.execute(command, cwd=cwd).output
        if "FUTURE" in out or any(sha in out for sha in future):
            found.append(f"{name}: {out[-300:]}")
    return found


@pytest.fixture
def env(new_env: Factory) -> Environment:
    return new_env(SandboxSpec(cwd="/testbed"))


def test_the_future_is_gone_and_the_present_is_kept(env: Environment) -> None:
    base, future = poisoned(env)
    before = state(env)
    assert len(finds_the_future(env, future)) >= 10  # the digging works on the poisoned repository
    report = cut_history(env, env.spec.cwd, base)
    assert report.error is None, report
    assert report.checked
    assert finds_the_future(env, future) == []
    assert state(env) == before
    assert sh(env, f"git rev-parse {BASE_REF}").strip() == base
    assert (report.branch, report.branches, report.tags, report.tags_kept) == ("refs/heads/main", 1, 1, 1)
    assert (report.remotes, report.remote_refs, report.stashes, report.notes) == (1, 1, 1, 1)
    assert (report.replace_refs, report.other_refs, report.pruned) == (1, 1, True)
    assert report.reflogs >= 8 and {"ORIG_HEAD", "FETCH_HEAD", "COMMIT_EDITMSG"} <= set(report.state_files)
    assert report.objects_after == report.reachable < report.objects_before
    # the repository still works for the agent and for grading: commit, diff against the base
    sh(env, "git -c user.name=a -c user.email=a@b commit -qam next && git diff --stat refs/mimo/base")
    assert "branch.main.remote" not in sh(env, "git config --local --list")


def test_detached_head_and_all_tags_removed(env: Environment) -> None:
    base, future = poisoned(env)
    sh(env, f"git checkout -q --detach {base}")
    report = cut_history(env, env.spec.cwd, base, keep_ancestor_tags=False)
    assert report.checked and report.error is None, report
    assert (report.branch, report.branches, report.tags, report.tags_kept) == (None, 2, 2, 0)
    assert finds_the_future(env, future) == []
    assert sh(env, "git rev-parse HEAD").strip() == base
    assert sh(env, "git for-each-ref --format='%(refname)'").split() == [BASE_REF]


def test_borrowed_objects_are_copied_in_and_the_link_cut(env: Environment) -> None:
    """A `clone --shared` borrows its objects (alternates): the base's past is copied in, the rest is not."""
    src, work = f"{env.spec.cwd}/src", f"{env.spec.cwd}/work"
    sh(env, "mkdir -p src")
    base, future = poisoned(env, cwd=src)
    sh(
        env,
        f"git -c safe.directory='*' clone -q --shared --no-checkout src work && cd work && "
        f"git checkout -q -B main {base}",
    )
    assert sh(env, "cat .git/objects/info/alternates", cwd=work).strip()
    report = cut_history(env, work, base)
    assert report.checked and report.error is None, report
    assert report.alternates and report.pruned and report.remotes == 1 and report.remote_refs >= 1
    sh(env, "rm -rf src")
    assert finds_the_future(env, future, cwd=work) == []
    assert sh(env, "git fsck --strict --no-dangling 2>&1 && git rev-list --count HEAD", cwd=work).split()[-1] == "2"


def test_loose_garbage_is_pruned_without_a_repack(env: Environment) -> None:
    git = "git -c user.name=m -c user.email=m@l"
    sh(
        env,
        f"git init -q && echo a > a && git add a && {git} commit -qm base && "
        f"echo FUTURE_LOOSE > a && {git} commit -qam later && git reset -q --hard HEAD~1",
    )
    base = sh(env, "git rev-parse HEAD").strip()
    later = sh(env, "git rev-parse HEAD@{1}").strip()
    report = cut_history(env, env.spec.cwd, base)
    assert report.checked and report.pruned and report.reflogs == 6, report  # HEAD's and the branch's: 3 each
    assert (report.objects_before, report.objects_after) == (6, 3)
    assert finds_the_future(env, [later]) == []
    assert sh(env, "ls .git/objects/pack") == ""  # no repack was needed


def test_a_fresh_repository_costs_little_and_loses_nothing(
    env: Environment, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case of most rows: a repository of a few thousand files we just made, nothing to remove."""
    sh(
        env,
        'for d in $(seq 1 60); do mkdir -p pkg$d; for f in $(seq 1 50); do echo "$d $f" > pkg$d/m$f.py; done; '
        "done; git init -q && git add -A && git -c user.name=m -c user.email=m@l commit -qm base && "
        f"git update-ref {BASE_REF} HEAD",
    )
    base = sh(env, "git rev-parse HEAD").strip()
    files = sh(env, "git ls-files | wc -l").strip()
    assert int(files) == 3000
    before = sh(env, "git ls-files -s; git count-objects -v | grep -v size")
    start = time.monotonic()
    report = cut_history(env, env.spec.cwd, base)
    wall = time.monotonic() - start
    assert report.checked and report.error is None, report
    assert not report.pruned and report.objects_before == report.objects_after == report.reachable == 3000 + 60 + 2
    assert (report.branches, report.tags, report.remotes, report.stashes, report.other_refs) == (0, 0, 0, 0, 0)
    assert sh(env, "git ls-files -s; git count-objects -v | grep -v size") == before
    with capsys.disabled():
        print(f"\ncut_history on a fresh 3000-file repository: {wall * 1000:.0f} ms (report {report.duration_s} s)")
    again = cut_history(env, env.spec.cwd, base)
    assert again.checked and not again.removed_anything


def test_errors_are_reported_not_raised(env: Environment) -> None:
    assert "not a git repository" in (cut_history(env, env.spec.cwd, "a" * 40).error or "")
    assert "not a full commit id" in (cut_history(env, env.spec.cwd, "HEAD").error or "")
    base, future = poisoned(env)
    refs = sh(env, "git for-each-ref")
    # not a commit here, and HEAD elsewhere: nothing is touched
    assert "not a commit" in (cut_history(env, env.spec.cwd, "b" * 40).error or "")
    moved = cut_history(env, env.spec.cwd, future[0])
    assert moved.error and "not at the base" in moved.error and not moved.checked
    assert sh(env, "git for-each-ref") == refs
    # a broken repository: an object of the base's past is missing
    sh(
        env,
        f"git repack -a -d -q && git unpack-objects -q < $(ls .git/objects/pack/*.pack) 2>/dev/null; "
        f"rm -f .git/objects/pack/* && tree=$(git rev-parse {base}~1^{{tree}}) && "
        "rm -f .git/objects/${tree:0:2}/${tree:2}",
        check=False,
    )
    broken = cut_history(env, env.spec.cwd, base)
    assert broken.error and not broken.checked, broken


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[list[Path]]:
    paths: list[Path] = []
    yield paths
    for p in paths:
        subprocess.run(["chattr", "-i", str(p)], check=False)


def test_a_read_only_repository_says_so(env: Environment, immutable: list[Path]) -> None:
    base, _ = poisoned(env)
    git_dir = Path(sh(env, "cd .git && pwd -P").strip())
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(git_dir)], check=False).returncode:
        pytest.skip("cannot make a folder immutable here")
    immutable.append(git_dir)
    report = cut_history(env, env.spec.cwd, base)
    assert report.error and "read-only" in report.error and not report.checked, report


@pytest.fixture
def docker_env(make_docker_env: Callable[..., Environment]) -> Environment:
    return make_docker_env(cwd="/testbed", network=False)


def test_on_docker(docker_env: Environment, capsys: pytest.CaptureFixture[str]) -> None:
    env = docker_env
    sh(env, "mkdir -p /testbed")
    base, future = poisoned(env)
    before = state(env)
    start = time.monotonic()
    report = cut_history(env, env.spec.cwd, base)
    wall = time.monotonic() - start
    assert report.checked and report.error is None, report
    assert finds_the_future(env, future) == []
    assert state(env) == before
    sh(
        env,
        'for d in $(seq 1 60); do mkdir -p pkg$d; for f in $(seq 1 50); do echo "$d $f" > pkg$d/m$f.py; done; '
        "done; git add pkg* && git -c user.name=m -c user.email=m@l commit -qm more",
    )
    head = sh(env, "git rev-parse HEAD").strip()
    start = time.monotonic()
    again = cut_history(env, env.spec.cwd, head)
    fresh = time.monotonic() - start
    assert again.checked and not again.pruned and again.branches == 0, again
    with capsys.disabled():
        print(
            f"\ncut_history on docker: poisoned (repack + prune) {wall * 1000:.0f} ms; "
            f"3000 more files, nothing but reflogs to remove {fresh * 1000:.0f} ms"
        )
