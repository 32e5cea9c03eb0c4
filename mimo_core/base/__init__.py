"""Foundations every layer uses and that use nothing of mimoagent's but each other: parsing with
limits, redaction of secrets, atomic files, the strict pydantic base and checked config values."""
