"""The docker backend: one container per rollout through the docker SDK (`environment.py`; files as tar
in `files.py`, images pulled or built in `images.py`, the persistent shell in `shell.py`, leftovers in
`cleanup.py`)."""
