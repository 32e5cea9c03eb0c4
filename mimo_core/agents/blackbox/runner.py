"""The Agent behind every CLI adapter: install (pinned), place in the sandbox, run headless through the
recording proxy, keep the native log, convert it, and return the same AgentResult as the default agent."""

from __future__ import annotations

import shlex
import threading
from typing import Any

from mimo_core.agents.base import AgentContext, AgentResult
from mimo_core.agents.blackbox import install, placement
from mimo_core.agents.blackbox.proxy import RecordingProxy
from mimo_core.agents.blackbox.spec import CliRun, CliSpec, Conversation, system_prompt_from_request, tools_from_request
from mimo_core.agents.stop import stopped_status
from mimo_core.agents.templates import render
from mimo_core.config import AgentConfig, ModelConfig
from mimo_core.datasets.base import Task
from mimo_core.environments.base import Environment
from mimo_core.errors import ConfigError
from mimo_core.models.base import Usage
from mimo_core.models.endpoint import api_key, base_url
from mimo_core.models.endpoint_budget import budget_for
from mimo_core.models.messages import Message
from mimo_core.models.retry import is_context_overflow
from mimo_core.status import ExitStatus

NO_TIME_LIMIT = 7 * 24 * 3600.0


def endpoint(spec: CliSpec, model: ModelConfig) -> tuple[str, str]:
    """(base URL, key) of the model block, with the protocol's usual variables as the fallback."""
    return base_url(model, spec.protocol), api_key(model, spec.protocol)


class _Recorder:
    """Hands each proxied call to the rollout and remembers the first request (tools, system prompt), the
    last call's HTTP status and the endpoint's own words when it refused one."""

    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        self.first: dict[str, Any] | None = None
        self.last_status: int | None = None
        self.last_error: str | None = None
        self.answered = 0  # calls the endpoint answered with HTTP 200
        self.lock = threading.Lock()

    def __call__(self, step: int, request: dict[str, Any], response: dict[str, Any], request_text: str) -> None:
        with self.lock:
            if self.first is None and (request.get("tools") or request.get("messages") or request.get("input")):
                self.first = request
            self.last_status = response.get("_http_status", 200)
            if self.last_status == 200:
                self.answered += 1
            else:
                self.last_error = provider_message(response)
        # Not request_text: agent_msgs/ proves its rebuilds against its own encoding of the request, and a
        # CLI's spacing differs; the parsed body is the same JSON either way.
        self.ctx.record_call(step, request, response)


def provider_message(response: dict[str, Any]) -> str | None:
    """What an endpoint said when it refused a call, from the recorded body (each protocol's error shape)."""
    err = response.get("error")
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:1000]
    if isinstance(err, str):
        return err[:1000]
    if isinstance(response.get("detail"), str):
        return response["detail"][:1000]
    text = response.get("raw_text")
    return str(text)[:1000] if text else None


class CliAgent:
    def __init__(
        self, spec: CliSpec, agent: AgentConfig, model: ModelConfig, cancel: threading.Event | None = None
    ) -> None:
        self.spec = spec
        self.config = agent
        self.model = model
        self.cancel = cancel
        self.version = install.resolve_version(spec, agent.version, agent.allow_latest)

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> AgentResult:
        spec, cfg = self.spec, self.config
        prompt = render(cfg.instance_template, {**task.template_vars(), "cwd": env.spec.cwd}, "agent.instance_template")
        proxy_host, bind = placement.proxy_address(env, spec.name)  # before the install: a sandbox without
        host_dir = placement.obtain(spec, self.version, cfg, ctx.log, env)  # a way to the model fails at once
        home = placement.place(env, host_dir, spec, self.version)
        state = f"{env.scratch_dir.rstrip('/')}/{spec.name}"
        env.execute(f"mkdir -p {shlex.quote(state)}", timeout=60)
        prompt_file = f"{state}/prompt.txt"
        env.write_file(prompt_file, prompt.encode())
        upstream, key = endpoint(spec, self.model)
        recorder = _Recorder(ctx)
        inside = getattr(env, "listen_inside", None)  # a sandbox with a loopback of its own (bwrap)
        listening = inside() if inside is not None else None
        with RecordingProxy(
            upstream,
            recorder,
            self.model.pricing,
            bind=bind,
            timeout=self.model.retry.timeout,
            listening=listening,
            cost_limit=cfg.cost_limit,
            budget=budget_for(self.model),
            cancel=self.cancel,
        ) as proxy:
            run = CliRun(
                name=spec.name,
                home=home,
                state_dir=state,
                prompt_file=prompt_file,
                workdir=env.spec.cwd,
                base_url=proxy.url(proxy_host),
                api_key=key,
                model_name=self.model.model_name,
                step_limit=cfg.step_limit,
                max_retries=max(self.model.retry.max_attempts - 1, 0),
                request_timeout=self.model.retry.timeout,
                extra_args=cfg.cli_args,
            )
            for path, text in spec.setup_files(run).items():
                env.write_file(path, text.encode())
            command = (
                f"{{ {spec.command(run)}\n}} > {shlex.quote(state + '/stdout.log')}"
                f" 2> {shlex.quote(state + '/stderr.log')}"
            )
            ctx.log(f"{spec.name} {self.version}: {command}")
            result = env.execute(command, timeout=cfg.time_limit or NO_TIME_LIMIT, cwd=env.spec.cwd, env=spec.env(run))
        stdout = _read(env, f"{state}/stdout.log")
        stderr = _read(env, f"{state}/stderr.log")
        files = self._keep_logs(env, state, stdout, stderr, ctx)
        try:
            conv = spec.convert(stdout, files, run)
        except Exception as e:  # a log we cannot read is recorded, not fatal: the calls are in agent_msgs
            ctx.log(f"{spec.name}: could not convert the native log: {type(e).__name__}: {e}")
            conv = Conversation(error=f"native log not converted: {e}")
        # The rollout's own deadline (agent_deadline) may kill the CLI a moment before our timeout fires.
        timed_out = result.timed_out or bool(cfg.time_limit and result.duration_s >= cfg.time_limit * 0.98)
        stopped = stopped_status(self.cancel)
        if stopped is ExitStatus.TIME_LIMIT:
            timed_out = True
        status, error = _status(timed_out, result.returncode, conv, recorder, proxy, stderr, cfg)
        if stopped is ExitStatus.INTERRUPTED:  # a stopped run is never scored: whatever the CLI did when killed
            status, error = ExitStatus.INTERRUPTED, f"the run was stopped while {spec.name} ran ({status.value})"
        ctx.log(
            f"{spec.name} exited {result.returncode} after {result.duration_s:.3f}s: {status.value}"
            + (f" ({error})" if error else "")
        )
        return self._result(status, error, conv, prompt, recorder, proxy)

    def _keep_logs(self, env: Environment, state: str, stdout: str, stderr: str, ctx: AgentContext) -> dict[str, str]:
        """Native logs go under the rollout folder (agent_logs/), before the sandbox goes away."""
        files: dict[str, str] = {}
        globs = " ".join(self.spec.session_globs)
        if globs:
            listing = env.execute(f"cd {shlex.quote(state)} && ls -1d {globs} 2>/dev/null", timeout=60)
            for rel in listing.output.split():
                files[rel] = _read(env, f"{state}/{rel}")
        keep = getattr(ctx, "keep_file", None)
        if keep is not None:
            keep("agent_logs/stdout.log", stdout.encode())
            keep("agent_logs/stderr.log", stderr.encode())
            for rel, text in files.items():
                keep(f"agent_logs/session/{rel}", text.encode())
        return files

    def _result(
        self,
        status: ExitStatus,
        error: str | None,
        conv: Conversation,
        prompt: str,
        recorder: _Recorder,
        proxy: RecordingProxy,
    ) -> AgentResult:
        first = recorder.first or {}
        protocol = self.spec.protocol
        system = system_prompt_from_request(protocol, first)
        head = ([Message(role="system", content=system)] if system else []) + [Message(role="user", content=prompt)]
        usage = proxy.usage
        return AgentResult(
            exit_status=status,
            error=error,
            messages=head + conv.messages,
            tools=tools_from_request(protocol, first),
            calls=proxy.calls,
            steps=len(proxy.calls) or conv.steps,
            usage=usage if proxy.calls else Usage(),
            cost=sum(c.cost for c in proxy.calls),
        )


def _read(env: Environment, path: str) -> str:
    """A log of the CLI agent's, at most `limits.max_artifact_bytes` of it (a cut one says so at its end)."""
    from mimo_core.environments.base import read_head
    from mimo_core.limits import current_limits, truncation_note

    try:
        head = read_head(env, path, current_limits().max_artifact_bytes)
        text = head.data.decode("utf-8", errors="replace")
        return f"{text}\n{truncation_note(head.size, len(head.data))}\n" if head.truncated else text
    except (OSError, FileNotFoundError):
        return ""
    except Exception:  # backends raise their own errors for a missing file
        return ""


def _status(
    timed_out: bool,
    returncode: int,
    conv: Conversation,
    recorder: _Recorder,
    proxy: RecordingProxy,
    stderr: str,
    cfg: AgentConfig,
) -> tuple[ExitStatus, str | None]:
    if timed_out:
        return ExitStatus.TIME_LIMIT, f"agent.time_limit: the CLI ran past {cfg.time_limit:g}s and was killed"
    if proxy.over_budget:
        return ExitStatus.COST_LIMIT, f"agent.cost_limit: ${proxy.cost:.6g} spent, limit ${cfg.cost_limit:g}"
    if conv.step_limit_hit:
        return ExitStatus.STEP_LIMIT, f"agent.step_limit: the CLI stopped at its turn limit ({cfg.step_limit})"
    failed = returncode != 0 or conv.error is not None
    if failed and proxy.errors:
        return ExitStatus.MODEL_ERROR, f"the model endpoint failed through the proxy: {proxy.errors[-1]}"
    if failed and recorder.last_status not in (None, 200):
        code = recorder.last_status or 0
        said = f": {recorder.last_error}" if recorder.last_error else ""
        first = recorder.answered == 0  # refused before the CLI ever got a reply to act on: not scored
        if is_context_overflow(code, recorder.last_error or ""):
            if first:
                return ExitStatus.REQUEST_REFUSED, f"the endpoint refused the first request (context_window){said}"
            return ExitStatus.CONTEXT_WINDOW, f"context window exceeded (HTTP {code}){said}"
        if code in (401, 403):
            return ExitStatus.MODEL_AUTH_ERROR, f"the endpoint refused the credentials (HTTP {code}){said}"
        if code == 400 or code == 404 or code == 422:
            if first and code != 404:
                return ExitStatus.REQUEST_REFUSED, f"the endpoint refused the first request (HTTP {code}){said}"
            return ExitStatus.MODEL_BAD_REQUEST, f"the endpoint rejected the request (HTTP {code}){said}"
        return ExitStatus.MODEL_ERROR, f"the endpoint kept failing (HTTP {code}){said}"
    if returncode != 0:
        tail = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:] or ["no stderr"]
        return ExitStatus.AGENT_ERROR, f"the CLI exited with code {returncode}: {tail[0][:300]}"
    if conv.error:
        return ExitStatus.AGENT_ERROR, conv.error
    return ExitStatus.SUBMITTED, None


def make_cli_agent(
    kind: str, agent: AgentConfig, model: ModelConfig, cancel: threading.Event | None = None
) -> CliAgent:
    from mimo_core.agents.blackbox import spec_for

    spec = spec_for(kind)
    if spec is None:
        raise ConfigError(f"agent.type: unknown CLI agent {kind!r}")
    return CliAgent(spec, agent, model, cancel)
