"""Recording a `mimoagent` CLI run into Dagster: the observer plug-in, its child process, the feed between."""
