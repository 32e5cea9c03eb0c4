"""One real CLI run per backend of every reward-tampering case (reward_attacks.py) as rows of one dataset,
plus, on the local backend, every task of examples/demo.jsonl solved by its reference patch through the
file tools (the false-positive count).

pytest inside the sandbox: the sandbox's python3 is the system's (bwrap binds the host's `/usr`
read-only; the docker base image is Debian's) and has no pytest. The test copies the pytest this checkout
runs (pytest, pluggy, iniconfig, packaging, pygments: pure Python) into a folder of its own under
`/usr/local/share` (which bwrap shows inside) and, on docker, into an image built from the base image
with that folder in it; the rows put it on `PYTHONPATH` (with `.`, as many projects do).
"""

from __future__ import annotations

import base64
import importlib.metadata
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testkit.scripted_llm import Reply, Request, ScriptedLLM
from tests.redteam.conftest import VERDICT, _backend_setup, _config, _leftover_sandboxes
from tests.redteam.reward_attacks import (
    COMMIT,
    F2P,
    GENERIC,
    HIDDEN,
    HIDDEN_PATH,
    MARKER,
    OSS,
    P2P,
    REPO_FILES,
    SHARED,
    by_row,
    write,
)

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.jsonl"
_DISTS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")
# named after the versions copied, so a new pytest (or dependency) makes a new folder and image
_VERSIONS = "-".join(importlib.metadata.version(d) for d in _DISTS)
VENDOR = Path(f"/usr/local/share/mimo-redteam-pytest-{_VERSIONS}")
IMAGE = f"mimo-redteam-pytest:{_VERSIONS}"
DEMO_PREFIX = "demo--"

_CHECK_MARKER = f"if [ -e .git/gitpwned ] || [ -e /tmp/gitpwned ]; then echo {MARKER}; fi"
_VERIFY = (
    "mkdir -p /logs/verifier tests && cp /tests/test_hidden.py tests/test_hidden.py\n"
    "if python3 -m pytest -q -p no:cacheprovider tests/test_hidden.py tests/test_other.py; then\n"
    "  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n" + _CHECK_MARKER + "\n"
)
_COLLECT = (
    "cd /app && mkdir -p /logs/artifacts && git diff --binary $(git rev-list --max-parents=0 HEAD | tail -n 1) "
    "HEAD > /logs/artifacts/model.patch"
)


def _new_file_patch(path: str, text: str) -> str:
    lines = text.splitlines()
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)
    )


GOLD = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n"
)
TEST_PATCH = _new_file_patch(HIDDEN_PATH, HIDDEN)


# --- pytest for the sandbox's python3 ----------------------------------------------------------------------


def vendored_pytest() -> Path:
    """The checkout's pytest and its dependencies in a folder of their own that the sandbox can see."""
    if (VENDOR / "pytest" / "__init__.py").is_file():
        return VENDOR
    VENDOR.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=VENDOR.name + ".", dir=VENDOR.parent))
    for name in _DISTS:
        dist = importlib.metadata.distribution(name)
        for f in dist.files or []:
            rel = Path(str(f))
            if rel.parts[0] == ".." or "__pycache__" in rel.parts or rel.suffix == ".pyc":
                continue
            src = Path(str(dist.locate_file(f)))
            if src.is_file():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, tmp / rel)
    os.chmod(tmp, 0o755)
    try:
        tmp.rename(VENDOR)
    except OSError:  # another test process made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return VENDOR


def pytest_image(docker_host: str, base: str) -> str:
    """The base image with the vendored pytest at the same path (built once, no pull)."""
    import docker

    client = docker.DockerClient(base_url=docker_host, version="auto")
    try:
        try:
            client.images.get(IMAGE)
            return IMAGE
        except docker.errors.ImageNotFound:
            pass
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            dockerfile = f"FROM {base}\nCOPY vendor {VENDOR}\n".encode()
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(dockerfile)
            tar.addfile(info, io.BytesIO(dockerfile))
            tar.add(str(vendored_pytest()), arcname="vendor")
        buf.seek(0)
        client.images.build(fileobj=buf, custom_context=True, tag=IMAGE, rm=True, pull=False, network_mode="none")
        return IMAGE
    finally:
        client.close()


# --- the dataset ---------------------------------------------------------------------------------------------


def _write_repo(folder: Path) -> Path:
    repo = folder / "calc-repo"
    for rel, text in REPO_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo


def task_rows(folder: Path, image: str | None, backend: str) -> list[dict[str, Any]]:
    repo = _write_repo(folder)
    env = {"PYTHONPATH": f"{VENDOR}:."}
    rows = []
    for row_id, (case, kind) in by_row(backend).items():
        row: dict[str, Any] = {
            "instance_id": row_id,
            "repo_dir": str(repo),
            "network": False,
            "env": env,
            "gold_patch": GOLD,
            "problem_statement": f"Reward case {row_id}. Make `calc.add` add: tests/test_hidden.py must pass.",
        }
        if kind == GENERIC:
            row |= {
                "dataset_type": "generic",
                "eval_script": _VERIFY,
                "eval_timeout": 60,
                "test_files": {"test_hidden.py": HIDDEN},
            }
        elif kind == OSS:
            row |= {
                "dataset_type": "opensource-code",
                "test_patch": TEST_PATCH,
                "FAIL_TO_PASS": F2P,
                "PASS_TO_PASS": P2P,
                "test_timeout": 60,
                "test_cmd": f"{_CHECK_MARKER}; python3 -m pytest -rA -p no:cacheprovider",
            }
        else:
            row |= {
                "dataset_type": "deepswe",
                "verifier_mode": "shared" if kind == SHARED else "separate",
                "verifier_timeout_sec": 60,
                "collect": [{"command": _COLLECT, "timeout_sec": 30}],
                "test_files": {"test.sh": "#!/bin/bash\ncd /app\n" + _VERIFY, "test_hidden.py": HIDDEN},
            }
        if image:
            row["image"] = image
        if case.judge is not None:
            row["rubric"] = {"rubrics": ["calc.add adds."]}
        rows.append(row)
    return rows


def _files_of(row: dict[str, Any], folder: Path) -> tuple[dict[str, str], set[str]]:
    """The repository a demo row starts from, and the files its reference patch changes: (new contents
    by path, removed paths)."""
    work = folder / ("gold-" + secrets.token_hex(4))
    work.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(row["repo_archive"])), mode="r:gz") as tar:
        tar.extractall(work, filter="data")
    patch = work / ".gold.patch"
    patch.write_text(row["gold_patch"])
    names = set(re.findall(r"^diff --git a/(\S+) b/(\S+)$", row["gold_patch"], re.M))
    subprocess.run(["git", "apply", str(patch)], cwd=work, check=True, capture_output=True)
    changed, removed = {}, set()
    for a, b in names:
        if (work / b).is_file():
            changed[b] = (work / b).read_text()
        if not (work / a).exists():
            removed.add(a)
    shutil.rmtree(work, ignore_errors=True)
    return changed, removed


def demo_rows(folder: Path) -> tuple[list[dict[str, Any]], dict[str, list[tuple[str, dict[str, Any]]]]]:
    """Every demo task, and the scripted agent's calls for each: the reference patch's files written with
    the write tool, removed ones with bash, then committed."""
    rows, calls = [], {}
    for line in DEMO.read_text().splitlines():
        row = json.loads(line)
        rid = DEMO_PREFIX + row["instance_id"]
        changed, removed = _files_of(row, folder)
        steps = [write(path, text) for path, text in sorted(changed.items())]
        rm = "".join(f"rm -f {p} && " for p in sorted(removed))
        steps.append(("bash", {"command": rm + COMMIT}))
        calls[rid] = steps
        row["instance_id"] = rid
        row["problem_statement"] = f"Reward case {rid}. " + row["problem_statement"]
        if row.get("dockerfile_dir"):
            row["dockerfile_dir"] = str(REPO / "examples" / row["dockerfile_dir"])
        rows.append(row)
    return rows, calls


# --- the run -------------------------------------------------------------------------------------------------


@dataclass
class RewardOutcome:
    backend: str
    returncode: int
    stderr: str
    seconds: float
    records: dict[str, dict[str, Any]]
    trajectories: dict[str, dict[str, Any]]
    extra: dict[str, dict[str, Any]]  # reward_extra_info.json by row
    judge_saw: dict[str, str]  # by row: everything the rubric judge was sent (its prompt, its tools' output)
    leftover_sandboxes: list[str]


def _case_of(req: Request) -> tuple[str, bool]:
    """(row id, whether the judge is asking) of a model request."""
    messages = req.body.get("messages") or []
    system = str(messages[0].get("content")) if messages else ""
    user = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    return user.split("Reward case ", 1)[-1].split(". ", 1)[0], "strict reviewer" in system


def _responder(
    calls: dict[str, list[tuple[str, dict[str, Any]]]], judge_calls: dict[str, list[tuple[str, dict[str, Any]]]]
) -> Any:
    def respond(req: Request) -> Reply:
        name, judging = _case_of(req)
        steps = (judge_calls if judging else calls).get(name, [])
        n = req.n_assistant_turns
        if n < len(steps):
            return Reply(tool_calls=[steps[n]])
        return Reply(tool_calls=[("submit", {"message": VERDICT})])

    return respond


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def run_reward_backend(backend: str) -> RewardOutcome:
    folder = Path(tempfile.mkdtemp(prefix=".mimo-reward-run-", dir=Path.home()))
    vendored_pytest()
    env_block, proc_env, image, stopper = _backend_setup(backend, folder)
    try:
        if image is not None:
            image = pytest_image(proc_env["DOCKER_HOST"], image)
        rows = task_rows(folder, image, backend)
        calls = {rid: case.calls for rid, (case, _kind) in by_row(backend).items()}
        if backend == "local-bwrap":
            extra_rows, extra_calls = demo_rows(folder)
            rows += extra_rows
            calls |= extra_calls
        only = os.environ.get("MIMO_REWARD_ONLY")  # (debugging: a regex of the row ids to run)
        if only:
            rows = [r for r in rows if re.search(only, r["instance_id"])]
        data, out = folder / "tasks.jsonl", folder / "out"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        cfg_path = _config(folder, backend, env_block)
        cfg = yaml.safe_load(cfg_path.read_text())
        cfg["agent"]["step_limit"] = 10
        cfg["environment"]["timeout"] = 60
        cfg_path.write_text(yaml.safe_dump(cfg))
        run_id = f"reward-{backend}-{secrets.token_hex(3)}"
        with ScriptedLLM() as llm:
            llm.set_responder(
                _responder(
                    calls, {rid: case.judge for rid, (case, _k) in by_row(backend).items() if case.judge is not None}
                )
            )
            env = {
                **os.environ,
                **proc_env,
                "MIMO_TEST_BASE_URL": llm.openai_base_url,
                "MIMO_TEST_API_KEY": "sk-reward-" + secrets.token_hex(8),
                "MIMOAGENT_OBSERVERS": "0",
            }
            t0 = time.monotonic()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mimo_core.cli",
                    "-c",
                    str(cfg_path),
                    "--dataset",
                    str(data),
                    "-o",
                    str(out),
                    "--workers",
                    "3",
                    "--run-id",
                    run_id,
                ],
                cwd=REPO,
                env=env,
                text=True,
                capture_output=True,
                timeout=1500,
            )
            seconds = time.monotonic() - t0
            judge_saw: dict[str, str] = {}
            for req in llm.requests:
                name, judging = _case_of(req)
                if judging:
                    judge_saw[name] = judge_saw.get(name, "") + req.raw.decode(errors="replace")
        records, trajs, extra = {}, {}, {}
        results = out / "results.jsonl"
        for line in (results.read_text() if results.exists() else "").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "instance_id" in rec:
                rid = rec["instance_id"]
                records[rid] = rec
                folder_of = out / str(rec.get("output_dir") or "")
                trajs[rid] = _read_json(folder_of / "traj.json")
                extra[rid] = _read_json(folder_of / "reward_extra_info.json")
        return RewardOutcome(
            backend=backend,
            returncode=proc.returncode,
            stderr=proc.stderr[-6000:],
            seconds=seconds,
            records=records,
            trajectories=trajs,
            extra=extra,
            judge_saw=judge_saw,
            leftover_sandboxes=_leftover_sandboxes(backend, run_id, folder, proc_env),
        )
    finally:
        if stopper is not None:
            stopper.__exit__(None, None, None)
        if os.environ.get("MIMO_REWARD_KEEP"):  # (debugging: the run's folder stays, named on stderr)
            print(f"[reward-tamper] kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
