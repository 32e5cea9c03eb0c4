"""Reward tampering through the real CLI on local+bwrap and docker: every case of reward_attacks.py on every
row kind it applies to, in one run per backend (reward_world.py).

Each attack gets exactly the honest reward (0.0, a graded 0, never a grading error) and its containment
kind in results.jsonl; no git program of the agent's ran in grading (the verifiers print a marker when one
did) and the recorded submission shows no fix the tree lacks. Each family's honest control gets 1.0 with no
tamper event. On local+bwrap, every task of examples/demo.jsonl solved by its reference patch through the
file tools scores 1 with no tamper event (the false positives, counted and printed).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redteam.reward_attacks import CASES, FIX_SHOWN, MARKER, TAMPER_KINDS, Case, kinds_on
from tests.redteam.reward_world import DEMO, DEMO_PREFIX, RewardOutcome, run_reward_backend

BACKENDS = ("local-bwrap", "docker")
_outcomes: dict[str, RewardOutcome] = {}


@pytest.fixture
def reward_run(request: pytest.FixtureRequest) -> Iterator[RewardOutcome]:
    backend = request.node.callspec.params["backend"]
    if backend not in _outcomes:
        _outcomes[backend] = run_reward_backend(backend)
        o = _outcomes[backend]
        print(f"\n[reward-tamper] {backend}: {len(o.records)} rollouts in {o.seconds:.0f} s (exit {o.returncode})")
    yield _outcomes[backend]


ROWS = [pytest.param(b, c, k, id=f"{b}-{c.name}-{k}") for b in BACKENDS for c in CASES for k in kinds_on(c, b)]


def _why(rec: dict, extra: dict) -> str:
    grading = {k: v for k, v in extra.items() if k != "verifier_output_tail"}
    return (
        f"status={rec.get('exit_status')} reward={rec.get('reward')} error={rec.get('error')!r} "
        f"containment={rec.get('containment')} grading={grading} "
        f"tail={str(extra.get('verifier_output_tail', ''))[-600:]!r}"
    )


@pytest.mark.parametrize(("backend", "case", "kind"), ROWS)
def test_reward_tampering_gets_the_honest_reward_and_is_recorded(
    reward_run: RewardOutcome, backend: str, case: Case, kind: str
) -> None:
    assert reward_run.returncode == 0, reward_run.stderr
    rid = f"{case.name}--{kind}"
    rec = reward_run.records.get(rid)
    assert rec is not None, f"no record for {rid}: {reward_run.stderr}"
    extra = reward_run.extra.get(rid, {})
    seen = set(rec.get("containment") or {})
    if case.honest:
        assert (rec["exit_status"], rec["reward"]) == ("submitted", 1.0), _why(rec, extra)
        assert not seen & TAMPER_KINDS, _why(rec, extra)
    else:
        assert rec["exit_status"] != "grading_error", _why(rec, extra)
        assert rec["reward"] == 0.0 and not rec["passed"], _why(rec, extra)
        missing = case.expected(kind) - seen
        assert not missing, f"not recorded: {sorted(missing)}; " + _why(rec, extra)
    assert MARKER not in str(extra.get("verifier_output_tail", "")), "a git program of the agent's ran in grading"
    if case.forged_fix:
        submission = str(reward_run.trajectories.get(rid, {}).get("submission") or "")
        assert FIX_SHOWN not in submission, "the recorded submission shows a fix the tree does not hold"
    if case.judge is not None:
        seen_by_judge = reward_run.judge_saw.get(rid, "")
        assert seen_by_judge, "the judge never ran"
        assert FIX_SHOWN not in seen_by_judge.replace("\\n", "\n"), "the judge was shown a fix the tree lacks"


@pytest.mark.parametrize("backend", BACKENDS)
def test_reward_run_leaves_no_sandbox(reward_run: RewardOutcome, backend: str) -> None:
    assert reward_run.returncode == 0, reward_run.stderr
    assert reward_run.leftover_sandboxes == [], reward_run.leftover_sandboxes


@pytest.mark.parametrize("backend", ["local-bwrap"])
def test_reference_solutions_through_the_tools_are_not_flagged(reward_run: RewardOutcome, backend: str) -> None:
    """False positives: the demo tasks and this suite's own task, each solved by its reference patch
    written with the file tools and committed, must score 1 with no tamper event."""
    demo = {rid: rec for rid, rec in reward_run.records.items() if rid.startswith(DEMO_PREFIX)}
    assert len(demo) == len(DEMO.read_text().splitlines()), sorted(demo)
    controls = {
        rid: rec
        for rid, rec in reward_run.records.items()
        if any(rid.startswith(c.name + "--") for c in CASES if c.honest)
    }
    flagged = {
        rid: _why(rec, reward_run.extra.get(rid, {}))
        for rid, rec in {**demo, **controls}.items()
        if rec["reward"] != 1.0 or set(rec.get("containment") or {}) & TAMPER_KINDS
    }
    print(
        f"\n[reward-tamper] false positives: {len(flagged)} of {len(demo) + len(controls)} reference/honest "
        f"solutions ({len(demo)} demo tasks, {len(controls)} honest controls)"
    )
    assert flagged == {}
