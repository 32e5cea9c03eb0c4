"""Recording a `mimoagent` CLI run into Dagster: the observer plug-in and the registry entry it leaves,
the ingestion that records finished runs (the `cli_run` job, its sensor), and the opt-in live recorder."""
