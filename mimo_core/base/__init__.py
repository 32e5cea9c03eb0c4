"""Foundations every layer uses, which use nothing of mimoagent's but each other and the root's errors and
statuses: parsing with limits, redaction of secrets, atomic files, the stop host-side work notices, the
strict pydantic base and checked config values."""
