"""The process that records CLI runs into Dagster: `python -m mimo_assets.cli_recording.recorder <name>`.

Its own process, so `import dagster` and the event-log writes never take the CLI's GIL from the rollout
threads; kept warm between CLI runs, so a run does not pay Dagster's start-up (~1.5 s of CPU: the imports,
the instance) again. It listens on the abstract unix socket `<name>` (address.py). Each connection is one
CLI run, recorded by one in-process `evaluate` run in a fork of this process (two CLI runs at once are two
Dagster runs side by side). Live recording is opt-in (MIMOAGENT_DAGSTER_LIVE=1): by default Dagster
records a CLI run after it ends (ingest.py). Protocol, one line each way:

    recorder -> CLI   `mimoagent-recorder <pid>` on accept
    CLI -> recorder   `mimoagent-token <the home's token>` (address.token: a wrong or missing token gets
                      `error unauthorized` and nothing is read), a RecordingHeader (the RunRequest and the
                      planned rollouts), then one ResultRecord per finished rollout, then END_OF_RUN; the end
                      of input ends the run (without END_OF_RUN the CLI died: the run fails after recording
                      what it finished)
    recorder -> CLI   `ok` when recorded, else `error <message>`

While it records a run it holds the run's registry entry (registry.claimed), so the ingestion never
records the same run, and it removes the entry once recorded.

With no run in progress for $MIMOAGENT_DAGSTER_RECORDER_IDLE seconds (120 by default; 0 = as soon as its
run is recorded) it exits. Its output goes to `mimoagent-recorder.log` in the Dagster home.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import struct
import sys
import threading
import time
from typing import IO, TYPE_CHECKING

from mimo_assets.cli_recording.address import idle_seconds, socket_address, token, valid_token_line

if TYPE_CHECKING:
    from mimo_assets.cli_recording.feed import Feed

HELLO = "mimoagent-recorder"
LOG_NAME = "mimoagent-recorder.log"
# Bookkeeping yields the CPU to the rollouts: on a busy machine it records in their idle moments and
# catches up after the last one, instead of slowing every rollout (and the user's wait) down.
FIRST_CONNECTION_S = 30.0  # a recorder nobody connects to (its CLI died while starting it) gives up
AUTH_S = 10.0  # a connection must prove itself within this


def niceness() -> int:
    """$MIMOAGENT_DAGSTER_NICE (default 10; a value that is not an integer: 10)."""
    from mimo_core.settings import RecordingSettings

    return RecordingSettings.read().recorder_nice


def _say(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {message}", flush=True)


def _pump(reader: IO[str], feed: Feed) -> None:
    from mimo_assets.cli_recording.feed import END_OF_RUN
    from mimo_core.records.results import ResultRecord

    try:
        for line in reader:
            if line.strip() == END_OF_RUN:
                feed.complete = True
            elif line.strip():
                feed.put(ResultRecord.model_validate_json(line))
    except (OSError, ValueError) as e:  # a broken connection or a line cut short: the CLI died
        _say(f"input ended: {type(e).__name__}: {e}")
    finally:
        feed.close()


class Recorder:
    """Accepts CLI runs until idle. Each run is recorded by a fork of this warm process: Dagster is
    imported once, yet runs stay apart (Dagster's per-run logging set-up deadlocks two runs in threads of
    one process) and run side by side."""

    def __init__(self, sock: socket.socket, idle: float, secret: str):
        self.sock = sock
        self.idle = idle
        self.secret = secret
        self.children: set[int] = set()
        self.served = 0
        self.last = time.monotonic()

    def warm_up(self) -> None:
        """Import what recording a run needs and open (then close) the instance once, before any fork."""
        try:
            from mimo_assets.cli_recording.execute import execute_feed  # noqa: F401
            from mimo_assets.instance.home import get_instance

            with get_instance():
                pass
        except Exception as e:  # each run reports it to its CLI, with the real traceback here
            _say(f"warm-up failed: {type(e).__name__}: {e}")
        # Objects made so far live as long as this process: frozen, no fork's collection visits them,
        # so the forks do not copy the pages they sit on (a 2-rollout run's recording: ~0.38 s -> ~0.25 s of
        # CPU here).
        gc.collect()
        gc.freeze()

    def serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._expired():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            if not _same_user(conn):  # the socket is reachable by every user of this host: record only ours
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:  # the run's own process
                code = 1
                try:
                    self.sock.close()
                    code = _record(conn, self.secret)
                finally:
                    sys.stdout.flush()
                    os._exit(code)
            conn.close()
            self.children.add(pid)
            self.served += 1
        self.sock.close()

    def _reap(self) -> None:
        for pid in list(self.children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.children.discard(pid)
                self.last = time.monotonic()

    def _expired(self) -> bool:
        self._reap()
        if self.children:
            return False
        quiet = time.monotonic() - self.last
        return quiet >= self.idle if self.served else quiet >= max(self.idle, FIRST_CONNECTION_S)


def _same_user(conn: socket.socket) -> bool:
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid == os.getuid()


def _record(conn: socket.socket, secret: str) -> int:
    """Record one CLI run from its connection; the exit status of its process."""
    reply = "ok"
    try:
        conn.settimeout(AUTH_S)
        try:
            conn.sendall(f"{HELLO} {os.getpid()}\n".encode())
        except OSError:  # the CLI sent its whole run and left (MIMOAGENT_DAGSTER_WAIT): the run is still here
            pass
        from mimo_assets.cli_recording.feed import Feed, RecordingHeader

        reader = conn.makefile("r", encoding="utf-8", newline="\n")
        if not valid_token_line(reader.readline(200), secret):
            _say("a connection without the home's token: refused")
            reply = "error unauthorized"
            return 1
        conn.settimeout(None)
        feed = Feed(RecordingHeader.model_validate_json(reader.readline()))
        threading.Thread(target=_pump, args=(reader, feed), name="mimo-record-input", daemon=True).start()
        from mimo_assets.cli_recording import registry
        from mimo_assets.cli_recording.execute import execute_feed
        from mimo_assets.instance.home import dagster_home, get_instance

        req = feed.header.request
        path = registry.entry_path(dagster_home(), req.run_id)
        with registry.claimed(path, wait=True) as entry:
            if entry is None:  # recorded meanwhile by the ingestion (or it never had an entry)
                _say(f"run {req.run_id}: already recorded from its registry entry")
                for _ in feed:
                    pass
                return 0
            _say(f"recording run {req.run_id} ({feed.n_planned} planned rollouts, {req.output_dir})")
            with get_instance() as instance:
                error = execute_feed(feed, instance, entry.date)
            _say(f"run {req.run_id}: {error or 'recorded'}")
            if error:
                reply = "error " + " ".join(error.split())
            else:
                registry.done(path)
    except Exception as e:  # a header that does not parse, a storage that does not open
        reply = f"error {type(e).__name__}: {' '.join(str(e).split())}"
        _say(reply)
    finally:
        try:
            conn.sendall((reply + "\n").encode())
        except OSError:  # the CLI stopped waiting (MIMOAGENT_DAGSTER_WAIT): the record is done anyway
            pass
        conn.close()
    return 0 if reply == "ok" else 1


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the CLI; its runs end at end of input
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(socket_address(argv[1]))
    except OSError:  # another CLI started this recorder a moment before us: it serves both
        return 0
    sock.listen(64)  # first, at full priority: the CLI that started us waits for this (not for Dagster)
    from mimo_assets.instance.home import dagster_home

    secret = token(dagster_home())
    os.nice(niceness())
    recorder = Recorder(sock, idle_seconds(), secret)
    recorder.warm_up()
    _say(f"listening (idle timeout {idle_seconds():g} s)")
    recorder.serve()
    _say("idle: exiting")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
