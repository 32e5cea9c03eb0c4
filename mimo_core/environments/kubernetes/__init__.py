"""The kubernetes backend: one pod per rollout through the official client (`environment.py`; pod
manifests in `pods.py`, the exec websocket in `exec.py`, files as tar over exec in `files.py`, the
persistent shell in `shell.py`, leftovers in `cleanup.py`)."""
