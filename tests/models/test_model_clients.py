"""Model clients cost once per process, and nothing for a provider the run does not use: recording a
rollout's endpoint reads the config (no SDK client, no SDK import), and its credentials never reach it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.core.conftest import REPO


def _python(code: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_endpoint_host_comes_from_the_config_without_an_sdk_or_credentials() -> None:
    got = _python("""
        import json, sys
        from pathlib import Path
        from mimo_core.config import MimoConfig, NamedConfig
        from mimo_core.datasets.base import Task
        from mimo_core.run.job import RolloutJob
        from mimo_core.run.rollout_record import _model_info
        out = {}
        for agent, protocol in (("default", "chat"), ("claude-code", "anthropic"), ("codex", "responses")):
            cfg = MimoConfig.model_validate({"agent": {"type": agent}, "model": {"protocol": protocol,
                "model_kwargs": {"base_url": "https://user:s3cret@models.example:8443/v1?key=abc"}}})
            job = RolloutJob(task=Task(instance_id="i", problem_statement="p"), output_dir=Path("/tmp"),
                             config=NamedConfig(name="c", path="c.yaml", config=cfg), run_id="r")
            out[agent] = _model_info(job).endpoint_host
        out["sdks"] = sorted(m for m in ("openai", "anthropic", "httpx2", "httpx") if m in sys.modules)
        print(json.dumps(out))
    """)
    assert got == {
        "default": "models.example:8443",
        "claude-code": "models.example:8443",
        "codex": "models.example:8443",
        "sdks": [],
    }


def test_a_client_is_built_once_per_model_block_and_only_its_sdk_is_imported() -> None:
    got = _python("""
        import json, sys
        from mimo_core.agents.factory import shared_model
        from mimo_core.config import ModelConfig
        cfg = ModelConfig(protocol="chat", model_kwargs={"base_url": "http://127.0.0.1:9/v1", "api_key": "k" * 8})
        a, b = shared_model(cfg), shared_model(ModelConfig.model_validate(cfg.model_dump()))
        print(json.dumps({"same": a is b, "anthropic": "anthropic" in sys.modules, "openai": "openai" in sys.modules}))
    """)
    assert got == {"same": True, "anthropic": False, "openai": True}
