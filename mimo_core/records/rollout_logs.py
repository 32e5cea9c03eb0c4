"""Per-rollout files written as things happen: instance.log (for people) and agent_msgs/ (for trainers)."""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path
from typing import Any

from mimo_core.base.redaction import redact, redact_bytes
from mimo_core.containment.detect import ContainmentLog, Watch
from mimo_core.records.model_calls import StepWriter


class RolloutFiles:
    """Implements AgentContext. One per rollout directory; closed by the rollout."""

    def __init__(self, rollout_dir: Path, watch: Watch | None = None):
        self.dir = rollout_dir
        self.containment = ContainmentLog(watch)  # attempts seen in tool calls and by the rollout
        self.msgs_dir = rollout_dir / "agent_msgs"
        self.msgs_dir.mkdir(parents=True, exist_ok=True)
        self._steps = StepWriter(self.msgs_dir)
        self._log = open(rollout_dir / "instance.log", "a", buffering=1)  # noqa: SIM115 - lives as long as the rollout

    def log(self, text: str) -> None:
        self._log.write(f"{time.strftime('%H:%M:%S')} {redact(text)}\n")

    def log_exception(self, where: str) -> None:
        self.log(f"{where}:\n{traceback.format_exc()}")

    def record_call(
        self, step: int, request: dict[str, Any], response: dict[str, Any], request_json: str | None = None
    ) -> None:
        """The exact request and the response of one call: a training sample, written as the delta from
        the previous call's request (mimo_core/records/model_calls.py), so a rollout's writes stay linear."""
        self._steps.record(step, request, response, request_json)

    def note_tool_call(self, step: int, tool: str, arguments: str, output: str) -> None:
        """A tool call and what it returned: checked for attempts to leave the sandbox or reach the grade."""
        self.containment.tool_call(step, tool, arguments, output)

    def keep_file(self, rel_path: str, data: bytes) -> None:
        """A file an agent wants kept beside its trajectory (a CLI agent's native session log)."""
        target = self.dir / rel_path
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        part.write_bytes(redact_bytes(data))
        os.replace(part, target)

    def close(self) -> None:
        self._log.close()
