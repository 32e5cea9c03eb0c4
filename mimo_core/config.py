"""Config files: YAML → pydantic, `${VAR:-default}` expansion, JSON overrides, A/B config sets.

Every validation error names the file and the dotted path of the bad key, because users keep many
profiles and an error without a location wastes their time.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mimo_core import plugins
from mimo_core.base.bounded import MAX_CONFIG_BYTES, TooBig, load_json, load_yaml, read_capped
from mimo_core.base.redaction import is_secret_name, register, secrets_in, strip_userinfo
from mimo_core.base.strict_model import NumbersAreNumbers, dotted, problem_text
from mimo_core.base.values import MAX_SECONDS, TaskCwd, http_url_problem
from mimo_core.errors import ConfigError
from mimo_core.limits import LimitsConfig

MAX_COUNT = 10_000_000
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")
REDACTED = "***"


class _Strict(NumbersAreNumbers):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ToolSpec(_Strict):
    tool: str
    config: dict[str, Any] = Field(default_factory=dict)


class AgentConfig(_Strict):
    type: str = "default"  # an agent plug-in's name (mimo_core/plugins.py): default, oracle, a CLI agent, judge
    tools: list[ToolSpec] = Field(
        default_factory=lambda: [
            ToolSpec(tool="bash"),
            ToolSpec(tool="read"),
            ToolSpec(tool="write"),
            ToolSpec(tool="edit"),
            ToolSpec(tool="submit"),
        ]
    )
    system_template: str = "You are a helpful coding agent. Your working directory is {{cwd}}."
    instance_template: str = "{{task}}"
    step_limit: int = Field(250, ge=0, le=MAX_COUNT)  # 0 = unlimited
    cost_limit: float = Field(0.0, ge=0)  # dollars; 0 = unlimited
    time_limit: float = Field(0.0, ge=0, le=MAX_SECONDS)  # seconds of wall time for the agent loop; 0 = unlimited
    max_format_errors: int = Field(3, ge=0, le=MAX_COUNT)  # consecutive malformed tool calls before the rollout ends
    observation_max_chars: int = Field(10000, gt=0, le=1 << 30)  # longer tool output keeps head + tail
    # Blackbox CLI agents only (agent.type claude-code, codex, ...): see mimo_core/agents/blackbox/.
    version: str | None = None  # the CLI's pinned version; None = the adapter's default
    allow_latest: bool = False  # `version: latest` is refused unless this is set
    install_env: dict[str, str] = Field(default_factory=dict)  # mirrors: NPM_REGISTRY, PIP_INDEX_URL, ...
    payload_path: str | None = None  # an archive from `mimoagent payload build`: install with no network
    payload_url: str | None = None  # the same archive fetched from a URL (http, https, file)
    cli_args: list[str] = Field(default_factory=list)  # extra flags appended to the CLI's command line

    @field_validator("type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        if problem := plugins.problem("agents", v):
            raise ValueError(problem)
        return v


class RetryConfig(_Strict):
    max_attempts: int = Field(6, ge=1, le=1000)
    initial_delay: float = Field(1.0, ge=0, le=MAX_SECONDS)
    max_delay: float = Field(60.0, ge=0, le=MAX_SECONDS)
    timeout: float = Field(600.0, gt=0, le=MAX_SECONDS)  # per-request timeout, seconds


class PricingConfig(_Strict):
    """Dollars per million tokens. Unknown prices cost zero rather than crash."""

    input: float = Field(0.0, ge=0)
    output: float = Field(0.0, ge=0)
    cached_input: float | None = Field(None, ge=0)  # cache reads; defaults to `input`
    cache_write: float | None = Field(None, ge=0)  # cache writes (Anthropic's cache creation); defaults to `input`
    reasoning: float | None = Field(None, ge=0)  # reasoning tokens (of the output); defaults to `output`


class ModelConfig(_Strict):
    model_name: str = "gpt-5"
    protocol: str = "chat"  # a protocol plug-in: chat | responses | anthropic | gemini (gemini-cli only) | ...
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    pricing: PricingConfig | None = None
    # vLLM: each reply carries the prompt's and the completion's token ids and logprobs (the rl export)
    return_token_ids: bool = False
    # The endpoint's limits, shared by every rollout of the process that calls it (base URL + model name;
    # models/endpoint_budget.py). Unset: adaptive concurrency from the endpoint's overload answers.
    max_concurrency: int | None = Field(None, ge=1, le=100_000)
    requests_per_minute: float | None = Field(None, gt=0, le=1e9)
    tokens_per_minute: float | None = Field(None, gt=0, le=1e12)

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, v: str) -> str:
        if problem := plugins.problem("protocols", v):
            raise ValueError(problem)
        return v

    @field_validator("model_kwargs")
    @classmethod
    def _http_base_url(cls, v: dict[str, Any]) -> dict[str, Any]:
        """A base URL that is not http(s) fails every request the same way: an error now, not retries."""
        url = v.get("base_url")
        if url is not None:
            problem = http_url_problem(url)
            if problem:
                raise ValueError(f"base_url: {problem}")
        return v

    @model_validator(mode="after")
    def _token_ids_need_chat(self) -> ModelConfig:
        if self.return_token_ids and self.protocol != "chat":
            raise ValueError(f"return_token_ids needs protocol: chat (vLLM's Chat Completions), not {self.protocol}")
        return self


class JudgeAgentConfig(_Strict):
    """An in-environment judge: its own agent block and model block."""

    agent: AgentConfig = Field(default_factory=lambda: AgentConfig(type="judge"))
    model: ModelConfig = Field(default_factory=ModelConfig)


class EnvironmentConfig(_Strict):
    environment_class: str = "local"  # a backend plug-in: local | docker | kubernetes | ... | package.module:Class
    cwd: TaskCwd | None = None  # for rows that name no cwd (a row's own cwd wins), else the type's default
    timeout: float = Field(300.0, gt=0, le=MAX_SECONDS)  # default per-command timeout, seconds
    sandbox: Literal["none", "bwrap"] = "none"  # local backend only
    image_prefix: str = ""
    # local only: rows that need their image (docker_image / Dockerfile, no seed of their own) are refused
    # at plan time unless this says to run them on the host anyway
    run_image_tasks_on_host: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    startup_timeout: float = Field(600.0, gt=0, le=MAX_SECONDS)
    # Budgets of every sandbox (docs/sandboxes.md, "Budgets"); a row's own memory_mb / storage_mb wins,
    # null: none. Memory counts the private /tmp and /dev/shm; 2 GiB fits 8 workers on a 24 GiB host.
    memory_mb: int | None = Field(2048, gt=0, le=1 << 30)
    storage_mb: int | None = Field(10240, gt=0, le=1 << 30)  # disk the sandbox's own files may take
    # The run stops starting rollouts when the free space of the output folder (or the local sandboxes'
    # root) falls below this many MB (0: never)
    host_min_free_mb: int = Field(2048, ge=0, le=1 << 30)
    judge_agent: JudgeAgentConfig | None = None
    backend_kwargs: dict[str, Any] = Field(default_factory=dict)  # checked by the backend's options_model

    @field_validator("environment_class")
    @classmethod
    def _known_backend(cls, v: str) -> str:
        if problem := plugins.problem("environments", v):
            raise ValueError(problem)
        return v


class GradingConfig(_Strict):
    """How a rollout's result is collected for grading. `strict` grades exactly what the benchmark's own
    harness grades (a Harbor task's collect hooks, verbatim: committed work only); `lenient` also counts
    uncommitted work. The value is written into every results.jsonl record and traj.json. `tamper`: what
    an agent's change to the tests or the test runner's configuration costs it."""

    collect: Literal["strict", "lenient"] = "strict"
    # What a changed test infrastructure costs (docs/sandboxes.md): `revert` puts it back to the task's
    # version and grades the rest of the change; `zero` also gives the rollout reward 0. Either way the
    # change is recorded as a containment event with its paths.
    tamper: Literal["revert", "zero"] = "revert"


class MimoConfig(_Strict):
    use_dataset_env: bool = True
    agent: AgentConfig = Field(default_factory=AgentConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    grading: GradingConfig = Field(default_factory=GradingConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)  # bytes read of agent-made data (limits.py)
    # dollars for the whole run (every config's rollouts summed; the lowest of the run's configs wins): once
    # the finished rollouts cost this much, no more rollouts start (a resume runs them). 0: no limit
    cost_limit: float = Field(0.0, ge=0)

    @model_validator(mode="after")
    def _cli_protocol(self) -> MimoConfig:
        """A CLI agent speaks one protocol; our own agents speak every protocol but Gemini's."""
        speaks = plugins.find("agents", self.agent.type).speaks
        if speaks is not None and self.model.protocol != speaks:
            raise ValueError(
                f"agent.type {self.agent.type} talks to its model in the {speaks!r} "
                f"protocol: set model.protocol: {speaks}"
            )
        if speaks is None and self.model.protocol == "gemini" and self.agent.type != "oracle":
            raise ValueError("model.protocol 'gemini' is only spoken by agent.type gemini-cli")
        return self


class NamedConfig(BaseModel):
    """A validated config with the name recorded in every output (the file's stem)."""

    name: str
    path: str
    config: MimoConfig

    def redacted(self) -> dict[str, Any]:
        return mask_secret_keys(self.config.model_dump(mode="json"))


def expand_vars(value: Any, source: str) -> Any:
    """Expand `${VAR}` / `${VAR:-default}` in every string of a parsed YAML tree."""
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            var, default = m.group(1), m.group(2)
            if var in os.environ:
                return os.environ[var]
            if default is not None:
                return default
            raise ConfigError(f"{source}: environment variable ${{{var}}} is not set and has no default")

        return _VAR.sub(sub, value)
    if isinstance(value, dict):
        return {k: expand_vars(v, source) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_vars(v, source) for v in value]
    return value


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, val in patch.items():
        if isinstance(val, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], val)
        else:
            out[key] = copy.deepcopy(val)
    return out


def parse_override(text: str) -> dict[str, Any]:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise ConfigError(f"--override-config: larger than {MAX_CONFIG_BYTES // 1024} KiB")
    try:
        data = load_json(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"--override-config: not valid JSON ({e.msg} at column {e.colno})") from None
    except TooBig as e:
        raise ConfigError(f"--override-config: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError('--override-config: must be a JSON object, e.g. \'{"agent": {"step_limit": 50}}\'')
    return data


def yaml_error(e: yaml.YAMLError) -> str:
    """A YAML error on one line: what is wrong and where (PyYAML's own text spans several lines)."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    context = getattr(e, "context", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return " ".join(f"{context + ': ' if context else ''}{problem}{where}".split())


def _format_validation(source: str, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        path = dotted(e["loc"]) or "<root>"
        msg = problem_text(e)
        lines.append(f"{source}: {path}: {msg}")
    return "; ".join(lines)


def validate_config(data: Any, source: str) -> MimoConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping with agent/environment/model blocks")
    expanded = expand_vars(data, source)
    register(secrets_in(expanded))  # from now on, no writer lets them through (mimo_core/base/redaction.py)
    try:
        return MimoConfig.model_validate(expanded)
    except ValidationError as e:
        raise ConfigError(_format_validation(source, e)) from None


def read_config(path: str | Path, overrides: list[dict[str, Any]] | None = None) -> NamedConfig:
    """The file as a validated config. Checks that need the agents, tools and backends (a template that
    does not compile, an unknown tool or backend option) are `config_checks.load_configs`'s:
    every entry point (CLI, plan, Dagster) loads through that."""
    path = Path(path)
    try:
        raw = load_yaml(read_capped(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {yaml_error(e)}") from None
    except TooBig as e:
        raise ConfigError(f"{path}: {e}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, not a config file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not valid UTF-8 (at byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it ({e.strerror or e})") from None
    if raw is None:
        raise ConfigError(f"{path}: the config file is empty (write at least a model: block)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level must be a mapping with agent/environment/model blocks")
    for patch in overrides or []:
        raw = deep_merge(raw, patch)
    return NamedConfig(name=path.stem, path=str(path), config=validate_config(raw, str(path)))


def read_configs(paths: list[str], overrides: list[dict[str, Any]] | None = None) -> list[NamedConfig]:
    configs = [read_config(p, overrides) for p in paths]
    names = [c.name for c in configs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ConfigError(f"config names must be unique (file stems): {sorted(dupes)} given more than once")
    return configs


def assign_config(instance_id: str, configs: list[NamedConfig], seed: int = 0) -> NamedConfig:
    """Pick one config per instance at random, reproducibly and independently of dataset order."""
    if len(configs) == 1:
        return configs[0]
    return random.Random(f"{seed}:{instance_id}").choice(configs)


def mask_secret_keys(data: Any) -> Any:
    """Replace the values of secret-looking keys and URLs' userinfo, so saved configs never carry
    credentials ("token" only as a whole word part: max_tokens stays readable)."""
    if isinstance(data, dict):
        return {
            k: (REDACTED if is_secret_name(str(k)) and v not in (None, "") else mask_secret_keys(v))
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [mask_secret_keys(v) for v in data]
    if isinstance(data, str) and "@" in data:
        return strip_userinfo(data)
    return data
