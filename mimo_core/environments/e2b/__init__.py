"""The E2B-protocol backend (`e2b`, and `cube` for CubeSandbox): environment.py."""
