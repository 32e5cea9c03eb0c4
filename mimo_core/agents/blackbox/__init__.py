"""Blackbox CLI agents: third-party coding CLIs behind the Agent seam, one small module each.

Adding a CLI is one module with a CliSpec subclass plus its row in `mimo_core/plugins.py` (with the
protocol it speaks, so config validation needs no import of the adapters; a test checks it against the
module) and a row in the README's table. A package of your own adds one as a `mimoagent.agents` entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mimo_core import plugins
from mimo_core.errors import ConfigError

if TYPE_CHECKING:
    from mimo_core.agents.blackbox.spec import CliSpec


def spec_for(name: str) -> CliSpec | None:
    """The CLI agent `agent.type: name` runs, or None for an agent that is not a CLI (or no agent)."""
    from mimo_core.agents.blackbox.spec import CliSpec

    try:
        cls = plugins.lookup("agents", name)
    except ConfigError:
        return None
    return cls() if isinstance(cls, type) and issubclass(cls, CliSpec) else None


def cli_agents() -> list[str]:
    """Every CLI agent's name: the built-ins (known unimported), then installed ones (imported to tell)."""
    found = [n for n in plugins.BUILT_INS["agents"] if plugins.find("agents", n).speaks is not None]
    for name in plugins.names("agents"):
        if name not in plugins.BUILT_INS["agents"]:
            try:
                if spec_for(name) is not None:
                    found.append(name)
            except (ImportError, AttributeError):  # a broken plug-in is not listed (`mimoagent plugins --check`)
                pass
    return found
