"""mimoagent core library: configs, models, tools, agents, environments, datasets, grading, rollouts.

Never imports dagster; the Dagster code location lives in `mimo_assets`.
"""

__version__ = "0.1.0"
