"""The Ray-distributed batch runner (`--runner ray`): the thread runner's `run_one` on a Ray cluster.

`options.py` says what to ask of the cluster (no Ray import: the CLI checks flags without the extra),
`remote.py` is what runs on a worker node, `files.py` brings a rollout's folder into the driver's `-o`, and
`driver.py` keeps `--workers` tasks in flight, retries lost nodes and cancels on Ctrl-C. docs/ray.md.
"""
