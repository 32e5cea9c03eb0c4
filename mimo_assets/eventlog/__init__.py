"""The event log side of recording rollouts: each partition's materialization events (`events`), the
lineage pointers between events stored together (`pointers`), logging them in storage batches
(`batching`) and turning a stream of finished rollouts into those batches (`stream`)."""
