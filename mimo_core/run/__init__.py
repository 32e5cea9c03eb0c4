"""Running rollouts: planning a run, the worker pool (threads or Ray), one rollout from sandbox to
verdict, its folder, logs, attempts and whose fault a failure is."""
