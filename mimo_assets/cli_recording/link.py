"""A CLI run's connection to its recorder: connect to the warm one, or start one and connect."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from mimo_assets.cli_recording.address import recorder_name, socket_address, token_line
from mimo_assets.cli_recording.recorder import HELLO, LOG_NAME

START_S = 60.0  # a recorder starting on a loaded machine: Python and the socket, not Dagster (imported later)


class RecordingError(Exception):
    """The run cannot be recorded: no recorder could be started or reached."""


def _connect(address: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(address)
        return sock
    except OSError:
        sock.close()
        return None


class RecorderLink:
    """Lines to the recorder, then its one-line reply."""

    def __init__(self, sock: socket.socket, log: Path, started: int | None):
        self.sock = sock
        self.log = log
        self.started = started  # pid of the recorder this run started (cold), None when it found one warm
        self.pid = started  # the recorder's pid, once known (its greeting, read with the reply)
        self._reader = sock.makefile("r", encoding="utf-8", newline="\n")
        self._greeted = False

    @classmethod
    def open(cls) -> RecorderLink:
        from mimo_assets.instance.home import dagster_home

        try:
            home = dagster_home()
        except (OSError, ValueError) as e:
            raise RecordingError(f"no Dagster home: {e}") from e
        log = home / LOG_NAME
        name = recorder_name(home)
        address = socket_address(name)
        try:
            proof = token_line(home)
        except OSError as e:
            raise RecordingError(f"no recorder token in {home}: {e}") from e
        sock = _connect(address)
        if sock is not None:
            link = cls(sock, log, started=None)
            link.send(proof)
            return link
        with open(log, "a") as out:  # a file, not a pipe: a chatty recorder can never block on it
            proc = subprocess.Popen(
                [sys.executable, "-m", "mimo_assets.cli_recording.recorder", name],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=os.environ.copy(),
                start_new_session=True,
                cwd="/",
            )
        deadline = time.monotonic() + START_S
        while (sock := _connect(address)) is None:
            if proc.poll() is not None and proc.returncode != 0:
                raise RecordingError(f"the recorder exited with code {proc.returncode} (log: {log})")
            if time.monotonic() > deadline:
                raise RecordingError(f"the recorder did not listen within {START_S:g} s (log: {log})")
            time.sleep(0.01)
        # (its exit status 0: another CLI's recorder bound the name first, and serves this run too)
        link = cls(sock, log, started=proc.pid if proc.poll() is None else None)
        link.send(proof)
        return link

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\n")

    def end_input(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    def result(self, timeout: float | None) -> str | None:
        """`ok`, `error <message>`, or None when the timeout passed first (the recording goes on). The
        recorder's greeting comes first: it is read here, not at connect, so a recorder still warming up
        (importing Dagster) never holds up the CLI."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if not self._greeted:
                hello = self._line(deadline)
                if hello is None:
                    return None
                words = hello.split()
                if len(words) != 2 or words[0] != HELLO or not words[1].isdigit():
                    return f"error the recorder answered {hello.strip()[:80]!r} (see its log)"
                self.pid, self._greeted = int(words[1]), True
            line = self._line(deadline)
        except OSError as e:
            return f"error the connection to the recorder broke: {e}"
        if line is None:
            return None
        return line.strip() or "error the recorder ended without a reply (see its log)"

    def _line(self, deadline: float | None) -> str | None:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
        else:
            self.sock.settimeout(None)
        try:
            return self._reader.readline()
        except TimeoutError:
            return None
