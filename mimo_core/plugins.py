"""Every kind of plug-in by name: backends, agents, dataset types, model protocols, tools, observers.

One table of the built-in ones (a name -> "module:attr", nothing imported until used) and one entry-point
group per kind, so an installed package adds its own without touching this project:

    [project.entry-points."mimoagent.environments"]
    my-sandbox = "my_pkg.sandbox:MySandbox"

A config names a plug-in by its name or as "package.module:Attr". `lookup(kind, name)` is the one way every
part of mimoagent finds one. Entry points are read once, on the first lookup of a name that is not built
in: `import mimo_core` and a run that uses only built-ins never read them. What each kind's object must
provide is in CONTRIBUTING.md ("Write a plug-in"); `mimoagent plugins` lists what is installed.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, NamedTuple

from mimo_core.errors import ConfigError, DatasetError

BUILT_IN = "built in"
PROJECT = "mimoagent"  # the distribution the built-ins come with (its extras name the install commands)


class Kind(NamedTuple):
    group: str  # the entry-point group third-party packages add to
    label: str  # what configs call it
    error: type[Exception]  # raised for an unknown name (the class each lookup raised before there was one)
    unknown: str  # the message: {name!r}, {known} (a list), {joined} (comma-separated)
    by_path: bool = True  # "package.module:Attr" names one too (not a dataset row's type: rows name no code)


KINDS: dict[str, Kind] = {
    "environments": Kind(
        "mimoagent.environments",
        "environment_class",
        ValueError,
        "unknown environment_class {name!r}; known: {known} or 'package.module:Class'",
    ),
    "agents": Kind("mimoagent.agents", "agent.type", ConfigError, "unknown agent type {name!r}; known: {known}"),
    "datasets": Kind(
        "mimoagent.datasets", "dataset_type", DatasetError, "unknown dataset_type {name!r}; known: {joined}", False
    ),
    "protocols": Kind("mimoagent.protocols", "model.protocol", ValueError, "unknown protocol {name!r}; known: {known}"),
    "tools": Kind("mimoagent.tools", "tool", ConfigError, "unknown tool {name!r}; known tools: {known}"),
    "observers": Kind(
        "mimoagent.observers", "observer", ValueError, "unknown observer {name!r}; known: {known}", False
    ),
}


class Builtin(NamedTuple):
    target: str  # module:attr
    speaks: str | None = None  # a CLI agent: the protocol it talks to its model in (checked unimported)
    main: bool = True  # an agent that may be `agent.type` (the judge runs only as environment.judge_agent)
    extra: str | None = None  # the optional extra of mimoagent that installs what it needs, if any
    needs: tuple[str, ...] = ()  # modules it imports only when used (its SDK): checked present at lookup


_CLI = "mimo_core.agents.blackbox"
BUILT_INS: dict[str, dict[str, Builtin]] = {
    "environments": {
        "local": Builtin("mimo_core.environments.local.environment:LocalEnvironment"),
        "docker": Builtin("mimo_core.environments.docker.environment:DockerEnvironment", needs=("docker",)),
        "kubernetes": Builtin(
            "mimo_core.environments.kubernetes.environment:KubernetesEnvironment", needs=("kubernetes",)
        ),
        "e2b": Builtin("mimo_core.environments.e2b.environment:E2BEnvironment", extra="e2b", needs=("e2b",)),
        "cube": Builtin("mimo_core.environments.e2b.environment:CubeEnvironment", extra="cube", needs=("e2b",)),
    },
    "agents": {
        "default": Builtin("mimo_core.agents.default:DefaultAgent"),
        "oracle": Builtin("mimo_core.agents.oracle:OracleAgent"),
        "claude-code": Builtin(f"{_CLI}.claude_code:ClaudeCode", speaks="anthropic"),
        "codex": Builtin(f"{_CLI}.codex:Codex", speaks="responses"),
        "opencode": Builtin(f"{_CLI}.opencode:OpenCode", speaks="chat"),
        "qwen-code": Builtin(f"{_CLI}.qwen_code:QwenCode", speaks="chat"),
        "gemini-cli": Builtin(f"{_CLI}.gemini_cli:GeminiCli", speaks="gemini"),
        "mini-swe-agent": Builtin(f"{_CLI}.mini_swe_agent:MiniSweAgent", speaks="chat"),
        "judge": Builtin("mimo_core.agents.judge:JudgeAgent", main=False),
    },
    "datasets": {
        "arvo": Builtin("mimo_core.datasets.arvo:ArvoDatasetType"),
        "deepswe": Builtin("mimo_core.datasets.deepswe:DeepSWEDatasetType"),
        "generic": Builtin("mimo_core.datasets.generic:GenericDatasetType"),
        "opensource-code": Builtin("mimo_core.datasets.opensource_code:OpenSourceCodeDatasetType"),
    },
    "protocols": {  # each a function ModelConfig -> Model
        "chat": Builtin("mimo_core.models.chat:make_chat_model", needs=("openai",)),
        "responses": Builtin("mimo_core.models.responses:make_responses_model", needs=("openai",)),
        "anthropic": Builtin("mimo_core.models.anthropic:make_anthropic_model", needs=("anthropic",)),
        "gemini": Builtin("mimo_core.models.factory:no_gemini_client"),  # spoken by gemini-cli only
    },
    "tools": {
        "bash": Builtin("mimo_core.tools.bash:BashTool"),
        "read": Builtin("mimo_core.tools.files:ReadTool"),
        "write": Builtin("mimo_core.tools.files:WriteTool"),
        "edit": Builtin("mimo_core.tools.files:EditTool"),
        "submit": Builtin("mimo_core.tools.submit:SubmitTool"),
    },
    "observers": {},  # ours comes as an entry point (mimo_assets), like anyone's
}
ALIASES: dict[str, dict[str, str]] = {
    "datasets": {
        "swe-bench": "opensource-code",
        "swebench": "opensource-code",
        "harbor": "deepswe",
        "opensource_code": "opensource-code",
    },
}


class Plugin(NamedTuple):
    kind: str
    name: str
    target: str  # module:attr
    source: str  # BUILT_IN, "dist version" for an entry point, or "module:attr" given as such
    dist: str | None = None  # the distribution that provides it (install hints read its extras)
    speaks: str | None = None
    main: bool = True
    extra: str | None = None
    needs: tuple[str, ...] = ()


class MissingDependency(ModuleNotFoundError):
    """A plug-in whose module imports a package that is not installed; the message names the install."""


_lock = threading.Lock()
_installed: dict[str, dict[str, list[Plugin]]] | None = None  # kind -> name -> entry points (read once)


def lookup(kind: str, name: str) -> Any:
    """The object behind a plug-in name (its class or function), imported now. An unknown name raises the
    kind's error listing the known ones; a missing dependency raises MissingDependency."""
    return load(find(kind, name))


def find(kind: str, name: str) -> Plugin:
    """Where a name's plug-in lives, without importing it: a built-in, an alias of one, "module:attr", or an
    installed entry point (read now if the name is none of the others)."""
    spec = KINDS[kind]
    name = ALIASES.get(kind, {}).get(name, name)
    built = BUILT_INS[kind].get(name)
    if built is not None:
        return Plugin(kind, name, built.target, BUILT_IN, PROJECT, *built[1:])
    if spec.by_path and _is_path(name):
        return Plugin(kind, name, name, name)
    found = _entry_points().get(kind, {}).get(name, [])
    if len(found) > 1:
        raise spec.error(
            f"{spec.label} {name!r} is provided by several installed packages: "
            f"{', '.join(p.source for p in found)}; uninstall all but one"
        )
    if not found:
        known = names(kind)
        raise spec.error(spec.unknown.format(name=name, known=known, joined=", ".join(known)))
    return found[0]


def problem(kind: str, name: str) -> str | None:
    """Why `name` names no plug-in of this kind (the message `find` raises), or None: for validators."""
    try:
        find(kind, name)
    except KINDS[kind].error as e:
        return str(e)
    return None


def canonical(kind: str, name: str) -> str:
    """The name an alias stands for (every name that is not an alias is its own)."""
    return find(kind, name).name


def names(kind: str) -> list[str]:
    """Every name of the kind: the built-ins in their order, then the installed ones, sorted."""
    built = list(BUILT_INS[kind])
    return built + sorted(n for n in _entry_points().get(kind, {}) if n not in BUILT_INS[kind])


def installed(kind: str) -> list[Plugin]:
    """Every plug-in of the kind: the built-ins, then each entry point (shadowed and duplicate ones too)."""
    rows = [find(kind, n) for n in BUILT_INS[kind]]
    for name in sorted(_entry_points().get(kind, {})):
        rows.extend(_entry_points()[kind][name])
    return rows


def load(plugin: Plugin) -> Any:
    """Import a plug-in's object. Its own module missing is a plain ModuleNotFoundError (a wrong name);
    a package that module imports (or `needs`) missing is MissingDependency, naming how to install it."""
    from importlib.util import find_spec

    for needed in plugin.needs:
        if find_spec(needed) is None:
            raise MissingDependency(_missing_text(plugin, needed), name=needed)
    module_name, _, attr = plugin.target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if not missing or missing == module_name or module_name.startswith(missing + "."):
            raise
        raise MissingDependency(_missing_text(plugin, missing), name=missing) from e
    for part in attr.split(".") if attr else ():  # an entry point may name a module itself
        obj = getattr(obj, part)
    return obj


def _is_path(name: str) -> bool:
    """`package.module:Attr`, each part an identifier."""
    module, colon, attr = name.partition(":")
    return bool(colon) and all(p.isidentifier() for p in (*module.split("."), *attr.split(".")))


def refresh() -> None:
    """Forget the entry points read so far (a package installed since is seen on the next lookup)."""
    global _installed
    with _lock:
        _installed = None


def _entry_points() -> dict[str, dict[str, list[Plugin]]]:
    global _installed
    with _lock:
        if _installed is None:
            from importlib.metadata import entry_points

            every = entry_points()  # one scan of the installed distributions, each name once
            found: dict[str, dict[str, list[Plugin]]] = {kind: {} for kind in KINDS}
            for kind, spec in KINDS.items():
                for ep in every.select(group=spec.group):
                    dist = ep.dist
                    name, source = (dist.name, f"{dist.name} {dist.version}") if dist else (None, "an entry point")
                    target = f"{ep.module}:{ep.attr}" if ep.attr else ep.module  # (without its [extras])
                    found[kind].setdefault(ep.name, []).append(Plugin(kind, ep.name, target, source, name))
            _installed = found
        return _installed


def _missing_text(plugin: Plugin, missing: str) -> str:
    top = missing.split(".")[0]
    hint = install_hint(plugin, top)
    what = f"{KINDS[plugin.kind].label} {plugin.name!r} needs the module {top!r}, which is not installed"
    return f"{what}: {hint}" if hint else what


def install_hint(plugin: Plugin, package: str) -> str | None:
    """The pip command that installs `package` for this plug-in: its distribution's optional extra that
    requires it (the plug-in's own `extra`, else an extra named like the plug-in, else any), or the
    requirement itself when the distribution needs it outright. None when no distribution names it."""
    if plugin.extra:
        return f"pip install '{plugin.dist or PROJECT}[{plugin.extra}]'"
    import re
    from importlib import metadata

    dist = plugin.dist or _distribution_of(plugin.target.partition(":")[0])
    if dist is None:
        return None
    try:
        requires = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return None

    def norm(text: str) -> str:
        return re.sub(r"[-_.]+", "-", text).lower()

    extras: list[str] = []
    outright: str | None = None
    for line in requires:
        requirement, _, marker = line.partition(";")
        if norm(re.split(r"[<>=!~\[ (]", requirement.strip(), maxsplit=1)[0]) != norm(package):
            continue
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if extra:
            extras.append(extra.group(1))
        elif outright is None:
            outright = requirement.strip()
    if extras:
        best = next((e for e in extras if norm(e) == norm(plugin.name)), extras[0])
        return f"pip install '{dist}[{best}]'"
    return f"pip install '{outright}'" if outright else None


def _distribution_of(module: str) -> str | None:
    from importlib.metadata import packages_distributions

    dists = packages_distributions().get(module.split(".")[0]) or []
    return dists[0] if dists else None
