"""What the container backends (docker, kubernetes) share: the keep-alive PID 1, process kills by
marker, the persistent shell's stream reading, and the start-up probe."""
