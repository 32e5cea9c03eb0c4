"""One scripted run shared by the export tests: two instances, each run by a config whose endpoint
returns token ids and logprobs (as vLLM does on request) and by one whose endpoint returns none."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from testkit.scripted_llm import ScriptedLLM, call, turns
from testkit.tasks import write_config, write_tasks
from tests.core.conftest import run_cli

SOLVE = turns(call("edit", path="greeting.txt", old_string="hello", new_string="goodbye"), call("submit"))


@dataclass
class ScriptedRun:
    out: Path
    llm: ScriptedLLM


@pytest.fixture(scope="package")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScriptedRun]:
    work = tmp_path_factory.mktemp("export-run")
    data = write_tasks(work, n=2)
    tok = write_config(work, "tok")
    cfg = yaml.safe_load(tok.read_text())
    cfg["model"]["return_token_ids"] = True  # sends vLLM's logprobs / return_tokens_as_token_ids / return_token_ids
    tok.write_text(yaml.safe_dump(cfg))
    plain = write_config(work, "plain")
    out = work / "out"
    with ScriptedLLM(SOLVE) as llm:
        proc = run_cli(["-c", str(tok), "-c", str(plain), "--paired", "--dataset", str(data), "-o", str(out)], llm)
        assert proc.returncode == 0, proc.stderr
        yield ScriptedRun(out, llm)
