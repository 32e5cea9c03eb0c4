"""An example mimoagent plug-in package: a backend (`backend.py`), an agent (`agent.py`), a dataset type
(`dataset.py`) and tools (`tool.py`, `fancy.py`), each added by an entry point in pyproject.toml."""
