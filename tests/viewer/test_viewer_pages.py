"""The viewer over a generated output folder (testkit/output_folders.py, the bench's generator
in small): paging, per-test outcomes and the judge, read over HTTP from a real `mimoagent view`."""

from __future__ import annotations

import html
import re
import socket
import subprocess
import urllib.request
from pathlib import Path

from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.viewer.urls import DEFAULT_VIEWER_URL, VIEWER_URL_ENV, folder_slug, rollout_url, viewer_base_url
from testkit.chromium import visible_text
from testkit.output_folders import write_output_folder
from tests.viewer.conftest import Viewer, serve, snapshot


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=20) as resp:
        return resp.read().decode()


def test_run_page_is_paged_and_a_rollout_page_shows_tests_and_judge(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_output_folder(out, 250, long_steps=30)
    before = snapshot(out)
    with serve(out, tmp_path / "stderr") as (_, url):
        first, last = get(url), get(url + "?page=3")
        assert first.count('<tr class="rollout">') == 100 and "250 of 250 rollouts · page 1 of 3" in first
        assert 'id="next"' in first and last.count('<tr class="rollout">') == 50 and 'id="next"' not in last
        assert "inst-00124" in last and "inst-00124" not in first  # the pages hold different rollouts
        raw = get(rollout_url(out, "inst-00000/a/0", base=url.split("/runs/")[0]))
        page = html.unescape(visible_text(raw))
        assert re.search(r"f2p passed 1 test_goodbye", page) and re.search(r"p2p failed 1 test_hello_kept", page)
        assert "score 0.5" in page and "the file says goodbye" in page and "hello is gone" in page
        assert "the judge's transcript (3 turns)" in page and "weighing rubric 2 against the diff" in page
        transcript = raw.split('<div id="conversation">', 1)[1].split("<h3>Usage per call</h3>", 1)[0]
        assert transcript.count('<div class="msg assistant">') == 30
    assert snapshot(out) == before


def test_the_link_base_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(VIEWER_URL_ENV, raising=False)
    assert viewer_base_url() == DEFAULT_VIEWER_URL
    monkeypatch.setenv(VIEWER_URL_ENV, "http://viewer.example:9000/")
    assert rollout_url("/data/out", "i/c/0").startswith("http://viewer.example:9000/runs/out-")


def test_a_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    write_output_folder(tmp_path / "out", 2, long_steps=2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [*Viewer.command(), str(tmp_path / "out"), "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and f"--port {port}: cannot listen" in proc.stderr


def test_two_output_folders_are_listed_and_compared_across(tmp_path: Path) -> None:
    first, second = tmp_path / "run1", tmp_path / "run2"
    write_output_folder(first, 4, configs=("a", "b"), long_steps=2)
    write_output_folder(second, 2, configs=("c",), long_steps=2, seed=1)
    with serve([first, second], tmp_path / "stderr") as (_, url):
        assert url.endswith("/") and "/runs/" not in url  # several folders: it prints the home page
        home = visible_text(get(url))
        assert str(first) in home and str(second) in home
        slug1, slug2 = folder_slug(first), folder_slug(second)
        page = get(f"{url}instance?id=inst-00000&a={slug1}:a&b={slug2}:c")
        assert f'data-arm="{slug1}:a"' in page and f'data-arm="{slug2}:c"' in page
        assert "a (run1)" in page and "c (run2)" in page  # arms named by config and folder


def test_a_run_still_writing_is_followed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_output_folder(out, 3, long_steps=2)
    with serve(out, tmp_path / "stderr") as (_, url):
        assert "3 of 3 rollouts" in get(url)
        record = ResultRecord.model_validate_json((out / "results.jsonl").read_text().splitlines()[0])
        ResultsStore(out).put(record.model_copy(update={"rollout_index": 1, "config_name": "late"}))
        page = get(url)
        assert "4 of 4 rollouts" in page and "<td>late</td>" in page


def test_a_rollout_page_lists_its_containment_events(tmp_path: Path) -> None:
    """What the agent tried that the sandbox refused is on its page, step by step."""
    import json

    out = tmp_path / "out"
    write_output_folder(out, 1)
    traj_path = next(out.rglob("traj.json"))
    traj = json.loads(traj_path.read_text())
    traj["containment_events"] = [
        {"step": 2, "tool": "bash", "kind": "protected_path", "detail": "echo 1 > /logs/verifier/reward.txt"},
        {"step": None, "tool": None, "kind": "lingering_processes", "detail": "1 process(es) still running"},
    ]
    traj_path.write_text(json.dumps(traj))
    store = ResultsStore(out)
    [rec] = store.load().values()
    store.put(
        rec.model_copy(
            update={"containment_attempts": 1, "containment": {"protected_path": 1, "lingering_processes": 1}}
        )
    )
    with serve(out, tmp_path / "stderr") as (_, url):
        page = html.unescape(visible_text(get(rollout_url(out, rec.output_dir, base=url.split("/runs/")[0]))))
    assert "1 attempt(s) to leave the sandbox or reach the grade" in page
    assert "2 bash protected_path echo 1 > /logs/verifier/reward.txt" in page
    assert "lingering_processes" in page
