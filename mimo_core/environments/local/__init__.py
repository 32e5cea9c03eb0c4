"""The local backend: a fresh folder per rollout on this host, optionally confined by bubblewrap
(`environment.py`; the sandbox in `bwrap.py`, processes by marker in `procs.py`, leftovers in `cleanup.py`)."""
