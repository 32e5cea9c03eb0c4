"""A key never reaches a file in any encoding it travels in: exact, cut short, base64 and URL-safe base64
of any text that holds it (Basic auth's `user:key`), URL-encoded, or in a URL's userinfo."""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path
from urllib.parse import quote

import pytest

from mimo_core.base.atomic_files import atomic_write_text
from mimo_core.base.redaction import redact, register, strip_userinfo
from mimo_core.config import mask_secret_keys as redact_config
from mimo_core.config import validate_config
from mimo_core.records.model_calls import StepWriter, iter_steps
from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.records.rollout_logs import RolloutFiles
from mimo_core.status import ExitStatus


@pytest.fixture
def key() -> str:
    value = f"sk-live-{secrets.token_hex(12)}"
    register([value])
    return value


def _encodings(key: str) -> dict[str, str]:
    out = {"exact": key, "cut short": key[:11] + "...", "url-encoded": quote(key + "/x", safe="")}
    for user in ("", "a", "ab", "api-user"):  # every alignment of the key's bytes inside the encoded text
        out[f"basic {user!r}"] = base64.b64encode(f"{user}:{key}".encode()).decode()
        out[f"urlsafe {user!r}"] = base64.urlsafe_b64encode(f"{user}{key}".encode()).decode().rstrip("=")
    out["base64"] = base64.b64encode(key.encode()).decode()
    return out


def test_every_encoding_of_a_registered_key_is_redacted(key: str) -> None:
    for name, text in _encodings(key).items():
        red = redact(f"before {text} after")
        assert red.startswith("before ") and red.endswith(" after"), name
        core = text[4:-4] if len(text) > 12 else text[:8]
        assert core not in red, f"{name}: {red}"
    assert (
        redact(f"{key[:7]} is shorter than the 8 characters that count")
        == f"{key[:7]} is shorter than the 8 characters that count"
    )
    assert key[:8] not in redact(f"{key[:8]} is a run of its first 8")


def test_urls_lose_their_userinfo_and_configs_register_what_they_hold(tmp_path: Path) -> None:
    password = f"pw-{secrets.token_hex(8)}"
    url = f"https://user:{password}@llm.example.com/v1"
    assert strip_userinfo(url) == "https://***@llm.example.com/v1"
    cfg = validate_config({"model": {"model_kwargs": {"base_url": url}}}, "c.yaml")
    saved = json.dumps(redact_config(cfg.model_dump(mode="json")))
    assert password not in saved and "***@llm.example.com" in saved
    assert password not in redact(f"the proxy said: {password}")  # registered when the config loaded


def test_every_writer_redacts(tmp_path: Path, key: str) -> None:
    echoes = " | ".join(_encodings(key).values())
    store = ResultsStore(tmp_path)
    store.put(
        ResultRecord(
            run_id="r",
            instance_id="i",
            config_name="c",
            exit_status=ExitStatus.MODEL_AUTH_ERROR,
            error=f"401: {echoes}",
            output_dir="i/c/0",
        )
    )
    atomic_write_text(tmp_path / "traj.json", json.dumps({"error": echoes}))
    files = RolloutFiles(tmp_path / "rollout")
    files.log(f"provider said {echoes}")
    files.record_call(1, {"messages": [{"role": "tool", "content": echoes}]}, {"ok": True})
    files.record_call(
        2, {"messages": [{"role": "tool", "content": echoes}, {"role": "user", "content": "x"}]}, {"ok": True}
    )
    files.keep_file("native.log", echoes.encode())
    files.close()
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    for name, text in _encodings(key).items():
        core = text[4:-4] if len(text) > 12 else text[:8]
        assert core not in written, f"{name} reached a file"
    steps = list(iter_steps(tmp_path / "rollout" / "agent_msgs"))  # still readable: rebuilt from the redacted text
    assert [s.step for s in steps] == [1, 2] and "***" in steps[1].request["messages"][0]["content"]


def test_a_step_file_without_secrets_keeps_its_hashes(tmp_path: Path) -> None:
    writer = StepWriter(tmp_path)
    writer.record(1, {"messages": [{"role": "user", "content": "hello"}]}, {"ok": True})
    line = json.loads((tmp_path / "steps.jsonl").read_text().splitlines()[0])
    assert "request_sha1" in line and "redacted" not in line
