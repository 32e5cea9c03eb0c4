"""The one Dagster instance every door uses: its home folder and `dagster.yaml` (`home`, `yaml/`) and
the batched SQLite event log a new home gets (`storage`)."""
