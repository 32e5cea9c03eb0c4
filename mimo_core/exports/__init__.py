"""Training exports of finished rollouts: `sft` and `rl` parquet tables, `atif` files (docs/exports.md).

`source.py` picks the rollouts (output folders, filters), one module per format writes them, `report.py`
says what was written and which rollouts were left out and why; `cli.py` is `mimoagent export`.
"""
