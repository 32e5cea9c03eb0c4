"""`mimoagent view`: a local, read-only web viewer over output folders (docs/viewer.md).

`urls` is import-light (the Dagster code location builds links with it); the server, its pages and
templates load only when `mimoagent view` runs.
"""
