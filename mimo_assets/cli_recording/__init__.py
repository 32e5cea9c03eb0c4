"""Recording a `mimoagent` CLI run into Dagster: the observer plug-in, the recorder kept warm between runs,
the feed between."""
