"""ATIF of trajectories the scripted run does not produce: malformed tool-call arguments, more calls than
agent messages (a CLI agent's), and a rollout whose trajectory is gone (reported, not fatal)."""

from __future__ import annotations

import json
from pathlib import Path

from mimo_core.exports.write import run_export
from testkit.harbor_atif import harbor_atif_errors
from testkit.output_folders import write_output_folder


def test_atif_keeps_malformed_arguments_and_notes_unaligned_calls(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = write_output_folder(out, 3, steps=2, long_steps=2)
    traj = json.loads((first / "traj.json").read_text())
    traj["messages"][2]["tool_calls"][0]["function"]["arguments"] = '{"command": "ls'  # cut off mid-string
    traj["calls"].append(dict(traj["calls"][-1], step=3))  # a call with no agent message of its own
    (first / "traj.json").write_text(json.dumps(traj))
    gone = out / "inst-00001" / "a" / "0"
    (gone / "traj.json").unlink()

    report = run_export("atif", [out], tmp_path / "exp")
    assert report.rollouts == 2
    [skipped] = report.skipped
    assert skipped.rollout == str(gone.resolve()) and "traj.json" in skipped.reason
    files = sorted((tmp_path / "exp" / "atif").rglob("*.json"))
    assert len(files) == 2 and harbor_atif_errors(files) == {}
    atif = json.loads((tmp_path / "exp" / "atif" / "inst-00000" / "a" / "0.json").read_text())
    call = atif["steps"][2]["tool_calls"][0]
    assert call["arguments"] == {} and call["extra"]["raw_arguments"] == '{"command": "ls'
    assert "3 model calls for 2 agent messages" in atif["notes"]
    assert all("metrics" not in s for s in atif["steps"])
    assert atif["final_metrics"]["extra"]["model_calls"] == 3
