"""The driver: keep `--workers` rollouts in flight on the cluster, write each result as it comes back.

Ray schedules each rollout on a node that has its resource request free (`RayResources`); the driver
only bounds how many are out at once, so `--workers` keeps its meaning cluster-wide and a plan of
10,000 rollouts holds 10,000 small jobs in the driver, not 10,000 tasks. A rollout whose node is lost is
retried by Ray on another node (`max_retries`); it reaches the driver once, as one record, because only
the driver writes. When Ray gives up, the rollout gets an infrastructure record (done again on resume).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mimo_core.errors import ConfigError
from mimo_core.records.results import ResultRecord, ResultsStore
from mimo_core.run.disk_full import disk_full, is_disk_full
from mimo_core.run.job import RolloutJob
from mimo_core.run.ray.files import commit
from mimo_core.run.ray.options import LOCAL, RayOptions
from mimo_core.run.ray.remote import CANCEL_GRACE_S, RemoteResult, pack_dir, run_remote
from mimo_core.run.rollout_record import write_failure
from mimo_core.status import ExitStatus


def run_jobs_on_ray(
    jobs: list[RolloutJob],
    workers: int,
    on_result: Callable[[ResultRecord], None] | None,
    options: RayOptions,
    cancel: threading.Event,
) -> list[ResultRecord]:
    """The Ray counterpart of `batch.run_jobs`: same records, same files, same order of writes per rollout."""
    started = _connect(options, workers)
    import ray

    inflight: dict[Any, RolloutJob] = {}
    results: list[ResultRecord] = []
    try:
        _check_feasible(options)
        task = ray.remote(run_remote).options(
            max_retries=options.max_retries, retry_exceptions=False, **options.resources.as_ray_options()
        )
        todo: Iterator[RolloutJob] = iter(jobs)
        stores: dict[Path, ResultsStore] = {}
        while True:
            while len(inflight) < max(1, workers) and (job := next(todo, None)) is not None:
                inflight[task.remote(job)] = job
            if not inflight:
                break
            if cancel.is_set():
                raise KeyboardInterrupt
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.5)
            if ready:
                ready, _ = ray.wait(list(inflight), num_returns=len(inflight), timeout=0)
            for ref in ready:
                job = inflight.pop(ref)
                store = stores.setdefault(job.output_dir, ResultsStore(job.output_dir))
                record = _finish(ray, ref, job, store, options.max_retries)
                results.append(record)
                if on_result is not None:
                    on_result(record)
    except BaseException:
        _cancel(ray, list(inflight))
        raise
    finally:
        if started:
            ray.shutdown()
    return results


def _finish(ray: Any, ref: Any, job: RolloutJob, store: ResultsStore, retries: int) -> ResultRecord:
    from ray.exceptions import RayError, RayTaskError

    try:
        result: RemoteResult = ray.get(ref)
        record, files, node = result.record, result.files, result.node
    except RayTaskError as e:  # the rollout code itself raised on the worker (a full disk there, a bug)
        record, files = _failure(job, ExitStatus.INTERNAL_ERROR, f"on a Ray worker: {e.cause!r}")
        node = ""
    except RayError as e:  # its node or worker was lost more often than the retries allow
        error = f"Ray gave up after {retries + 1} tries: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
        record, files = _failure(job, ExitStatus.ENVIRONMENT_ERROR, error)
        node = ""
    try:
        return commit(job, record, files, store, node)
    except OSError as e:
        if is_disk_full(e):
            raise disk_full(e, f"rollout {job.rel_dir}") from None
        raise


def _failure(job: RolloutJob, status: ExitStatus, error: str) -> tuple[ResultRecord, bytes]:
    """The files and record of a rollout that never came back, made as a worker would send them."""
    with tempfile.TemporaryDirectory(prefix="mimoagent-ray-") as scratch:
        local = job.model_copy(update={"output_dir": Path(scratch)})
        record = write_failure(local, status, error)
        return record, pack_dir(Path(scratch) / job.rel_dir)


def _cancel(ray: Any, refs: list[Any]) -> None:
    """Ctrl-C, SIGTERM or an error: queued rollouts never start; running ones stop their commands and
    remove their sandboxes (`remote.run_remote`), which this waits for before the cluster may go away.
    Their records are not written: a rerun does them again."""
    if not refs or not ray.is_initialized():
        return
    for ref in refs:
        try:
            ray.cancel(ref)
        except Exception:
            pass
    ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S + 5)


def _connect(options: RayOptions, workers: int) -> bool:
    """Join the cluster (or start a local one); True when this call connected, so the run disconnects.

    A local cluster, or one reached at a loopback address, is one machine: Ray's single-machine mode keeps
    every address on 127.0.0.1 (otherwise Ray swaps 127.0.0.1 for the host's network address and the
    cluster listens there). It is read when Ray is first imported."""
    address = options.resolved_address()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no reports to the internet from our runs
    # Workers run the Python of the node they are on (mimoagent installed there), not `uv run` in a copy of
    # the working directory uploaded by the driver (Ray's default when the driver runs under `uv run`).
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    if address == LOCAL or _is_loopback(address):
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if ray.is_initialized():  # the caller's own connection (a benchmark, a notebook)
        return False
    common: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
    }  # no notices on the run's stderr
    with _own_signal_handlers():
        _init(ray, address, options, workers, common)
    return True


@contextmanager
def _own_signal_handlers() -> Iterator[None]:
    """Ray's core worker installs its own SIGTERM/SIGINT handlers (log and exit 1); the run keeps the CLI's
    (stop_signals.py, SIGHUP too), under which a SIGTERM cancels the tasks and removes their sandboxes like
    a Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)


def _init(ray: Any, address: str, options: RayOptions, workers: int, common: dict[str, Any]) -> None:
    if address == LOCAL:
        # One machine: --workers rollouts at once, whatever the request (the resources are logical).
        res = options.resources
        ray.init(
            address=LOCAL,
            num_cpus=max(os.cpu_count() or 1, int(res.num_cpus * workers + 0.999)),
            resources={k: v * workers for k, v in res.custom.items()},
            **common,
        )
    else:
        with _ray_native_log() as native:
            try:
                ray.init(address=address, **common)
                return
            except (ConnectionError, ValueError, RuntimeError) as e:
                error = str(e)
        if _AUTH_REFUSED in "".join(native):
            raise ConfigError(
                f"--ray-address {address}: the Ray cluster needs token authentication and refused "
                f"this driver's token ({_token_source()}): set RAY_AUTH_MODE=token and "
                "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to the cluster's token"
            )
        raise ConfigError(f"--ray-address {address}: cannot join that Ray cluster: {error}")


_AUTH_REFUSED = "InvalidAuthToken"  # what Ray's client logs for each refused attempt


def _token_source() -> str:
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN is set, but not to the cluster's token"
    if os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return f"RAY_AUTH_TOKEN_PATH={os.environ['RAY_AUTH_TOKEN_PATH']} is not the cluster's token"
    return "none is configured"


@contextmanager
def _ray_native_log() -> Iterator[list[str]]:
    """Ray's C++ client writes one warning per failed attempt straight to file descriptor 2 (tens of
    lines while it retries): keep them in a file instead; the list holds what it said once the block ends."""
    import sys

    said: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield said
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            said.append(captured.read(1 << 20).decode("utf-8", "replace"))


def _is_loopback(address: str) -> bool:
    host = address.split("://")[-1].rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_feasible(options: RayOptions) -> None:
    """A request no node can ever meet would wait forever: say so now, naming what the nodes offer."""
    import ray

    demand = options.resources.as_demand()
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    if any(all(node.get(k, 0) >= v for k, v in demand.items()) for node in nodes):
        return
    offered = "; ".join(", ".join(f"{k}={v:g}" for k, v in sorted(n.items()) if "node:" not in k) for n in nodes)
    raise ConfigError(
        f"--ray-resources: no node of the Ray cluster can hold one rollout "
        f"({', '.join(f'{k}={v:g}' for k, v in demand.items())}); the nodes offer: {offered or 'none'}"
    )
