"""`mimoagent view` in real headless Chromium over a real scripted run: two configs on three tasks,
config `a` fixes the task (its first command's output cut by the tool), config `b` hits its step limit.
The browser is driven as a person would: menus picked, links and headers clicked. Screenshots go to
outputs/test-artifacts/ (git-ignored)."""

from __future__ import annotations

import re
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mimo_core.records.results import ResultsStore
from mimo_core.records.trajectory import read_trajectory
from mimo_core.viewer.urls import rollout_url
from testkit.cdp import Browser
from testkit.chromium import visible_text
from tests.viewer.conftest import ARTIFACTS, Viewer, snapshot

ROW = re.compile(r'<tr class="rollout">(.*?)</tr>', re.S)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as b:
        yield b


def rows(html: str) -> list[str]:
    return [visible_text(r).strip() for r in ROW.findall(html)]


def pick(name: str, value: str) -> str:
    """Choose `value` in the run page's `name` menu, as a person does (its change submits the form)."""
    return (
        f"const s = document.querySelector('select[name={name}]'); s.value = {value!r}; "
        "s.dispatchEvent(new Event('change'));"
    )


def click(selector: str) -> str:
    return f"document.querySelector({selector!r}).click();"


def test_run_page_lists_every_rollout_with_the_summary_per_config(viewer: Viewer, browser: Browser) -> None:
    browser.load(viewer.url)
    html = browser.html()
    listed = rows(html)
    assert len(listed) == 6, listed
    assert sum(" a 0 submitted 1 " in r for r in listed) == 3 and sum(" b 0 step_limit 0 " in r for r in listed) == 3
    assert "6 of 6 rollouts" in visible_text(html)
    summary = visible_text(re.search(r'<table class="summary">.*?</table>', html, re.S).group(0))
    assert "pass rate (of graded) pass rate (of attempted)" in summary, summary  # mimo_core.records.rates' names
    assert re.search(r"a 3 3 0 3 3 100\.0% 100\.0% - 3\.0", summary) and re.search(
        r"b 3 3 0 3 0 0\.0% 0\.0% - 2\.0", summary
    ), summary
    print(f"screenshot: {browser.screenshot(ARTIFACTS / 'viewer_run_page.png')}")


def test_filters_by_status_config_reward_and_text_change_the_list(viewer: Viewer, browser: Browser) -> None:
    browser.load(viewer.url)
    browser.act(pick("status", "step_limit"))
    assert "status=step_limit" in browser.url()
    only_limit = rows(browser.html())
    assert len(only_limit) == 3 and all("step_limit" in r and "submitted" not in r for r in only_limit)
    browser.act(pick("config", "a"))
    assert rows(browser.html()) == [] and "0 of 6 rollouts" in visible_text(browser.html())
    browser.load(viewer.url)
    browser.act(pick("reward", "pass"))
    browser.act("document.querySelector('input[name=q]').value = 'greet-1'; " + click("#filters button"))
    passed = rows(browser.html())
    assert len(passed) == 1 and passed[0].startswith("greet-1 a 0 submitted"), passed
    browser.load(viewer.url)
    browser.act(click("th a[href*='sort=reward']"))
    browser.act(click("th a[href*='sort=reward']"))  # a second click: descending
    assert [" 1 " in r for r in rows(browser.html())] == [True] * 3 + [False] * 3


def test_rollout_page_shows_prompts_tool_calls_with_output_truncation_and_the_diff(
    viewer: Viewer,
    browser: Browser,
) -> None:
    browser.load(viewer.url)
    browser.act(click("a[href$='/r/greet-0/a/0']"))
    html = browser.html()
    text = visible_text(html)
    system = read_trajectory(viewer.out / "greet-0/a/0/traj.json").messages[0]
    assert system.role == "system" and "system prompt" in text
    assert " ".join((system.content or "").split()[:8]) in text
    assert "Make greeting.txt say goodbye (task 0)" in text  # the task prompt
    assert "look first" in text  # the reasoning
    assert '"command": "seq 1 5000"' in html.replace("&quot;", '"')  # a tool call's arguments
    assert "output truncated by the tool" in text and re.search(r"\[\.\.\. \d+ characters elided \.\.\.\]", text)
    assert "4999" in text  # the tail of that call's output, after the cut
    diff = re.search(r'<div id="diff">.*?</div></div>', html, re.S).group(0)
    assert '<div class="del">-hello</div>' in diff and '<div class="add">+goodbye</div>' in diff
    calls = visible_text(re.search(r'<table id="calls">.*?</table>', html, re.S).group(0))
    assert re.search(r"1 10 5 0 0 ", calls) and "rebuilt" in calls  # usage per call, link to the request
    assert "reward 1.0" in visible_text(re.search(r'<table id="verifier">.*?</table>', html, re.S).group(0))
    raw = re.search(r'<a href="(/runs/[^"]+/files/greet-0/a/0/instance\.log)">', html).group(1)
    with urllib.request.urlopen(viewer.base + raw, timeout=10) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain") and b"submitted" in resp.read()
    print(f"screenshot: {browser.screenshot(ARTIFACTS / 'viewer_rollout_page.png')}")


def test_ab_page_puts_both_configs_side_by_side(viewer: Viewer, browser: Browser) -> None:
    browser.load(viewer.url + "r/greet-2/b/0")
    browser.act(click("#ab"))  # from config b's rollout: A is b, B the other config
    html = browser.html()
    arms = re.findall(
        r'<div class="arm" data-arm="[^"]+:(\w+)">(.*?)</div>\s*</div>\s*(?=<div class="arm"|</div>)', html, re.S
    )
    assert [name for name, _ in arms] == ["b", "a"], html[:3000]
    b, a = (visible_text(body) for _, body in arms)
    assert "submitted" in a and "+goodbye" in a and "edit" in a
    assert "step_limit" in b and "no diff submitted" in b and "2 tool calls" in b
    print(f"screenshot: {browser.screenshot(ARTIFACTS / 'viewer_ab_page.png')}")


def test_a_link_built_for_dagster_opens_that_rollout(viewer: Viewer) -> None:
    record = next(r for r in ResultsStore(viewer.out).load().values() if r.config_name == "b")
    with urllib.request.urlopen(rollout_url(viewer.out, record.output_dir, base=viewer.base), timeout=10) as resp:
        page = resp.read().decode()
    assert f"{record.instance_id} <small>· b #0</small>" in page and "step_limit" in page


def test_torn_last_line_is_reported_and_the_rest_is_served(viewer: Viewer, browser: Browser) -> None:
    assert "warning:" in viewer.stderr() and "line(s) 7 not complete records" in viewer.stderr()
    browser.load(viewer.url)
    assert "not complete records" in visible_text(browser.html()) and len(rows(browser.html())) == 6


def test_browsing_never_writes_to_the_output_folder(viewer: Viewer, browser: Browser) -> None:
    before = viewer.snapshot
    record = next(iter(ResultsStore(viewer.out).load().values()))
    for path in [
        "",
        f"r/{record.output_dir}",
        f"files/{record.output_dir}/traj.json",
        f"step?r={record.output_dir}&n=1",
        "?sort=cost&desc=1",
    ]:
        browser.load(viewer.url + path)
    browser.load(viewer.base + f"/instance?id={record.instance_id}")
    assert snapshot(viewer.out) == before


def test_view_refuses_what_is_not_an_output_folder(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "results.jsonl").write_text('not json\n{"also": "not a record"}\n')
    cases = {
        "missing": "no such folder",
        "a_file": "not a folder",
        "plain": "not an output folder (no results.jsonl)",
        "garbage": "none of its 2 line(s) is a results record",
    }
    for name, message in cases.items():
        proc = subprocess.run([*Viewer.command(), str(tmp_path / name)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (name, proc.stderr)
        assert proc.stderr.count("\n") == 1 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
