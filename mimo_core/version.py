"""The framework's version, written into every traj.json (`framework_version`)."""

__version__ = "0.1.0"
