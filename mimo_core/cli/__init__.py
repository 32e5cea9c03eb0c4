"""The `mimoagent` command line: parsing, input checks, signals and the end-of-run report. Only the
command line lives here; what to run is planned in `mimo_core.run`."""
