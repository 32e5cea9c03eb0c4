"""Reward-hacking and escape attempts, recorded: what an agent tried that the sandbox refused, or that
reached for the task's protected files (`events.py`, `detect.py`). A trainer filters or penalises on
them; nothing here blocks anything (the sandbox and the grading order do that)."""
