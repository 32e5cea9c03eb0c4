"""The evaluate job's `rerun_status` reaches the planner's RunRequest, as the CLI's --rerun-status does."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mimo_assets.evaluate import EvaluateConfig
from mimo_core.status import ExitStatus


def test_evaluate_config_passes_rerun_status_to_the_request(tmp_path: Path) -> None:
    resolved = {"dataset": "d.jsonl", "configs": ["c.yaml"], "output_dir": tmp_path}
    request = EvaluateConfig(rerun_status=["model_error", "grading_error"]).to_request(**resolved)
    assert request.rerun_status == [ExitStatus.MODEL_ERROR, ExitStatus.GRADING_ERROR]
    assert EvaluateConfig().to_request(**resolved).rerun_status == []
    with pytest.raises(ValidationError, match="modle_error"):
        EvaluateConfig(rerun_status=["modle_error"]).to_request(**resolved)
