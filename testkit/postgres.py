"""A private PostgreSQL server for tests and benches: Debian's `postgresql` (installed with apt when
missing), its own data directory in a temporary folder, its own port on 127.0.0.1, stopped and deleted
after. Nothing is cached: each server is initialised from scratch (initdb takes about a second).

PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user the Debian package
creates (or `nobody`). Authentication is `trust` on 127.0.0.1 only; the socket lives in the data dir.

Run by hand: `uv run python -m testkit.postgres` starts one and prints its URL until Ctrl-C.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from testkit.host_packages import ensure_apt

SUPERUSER = "mimo"


class PostgresServer(BaseModel):
    host: str
    port: int
    user: str
    bin_dir: str
    data_dir: str

    def url(self, database: str) -> str:
        """A libpq URL (psql, pg_dump); Dagster gets it with `+psycopg2` added (see mimo_assets.instance.home)."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        subprocess.run(
            [f"{self.bin_dir}/createdb", "-h", self.host, "-p", str(self.port), "-U", self.user, name],
            check=True,
            capture_output=True,
            text=True,
        )
        return self.url(name)


def bin_dir() -> str | None:
    """Debian puts the server programs in /usr/lib/postgresql/<major>/bin, off PATH."""

    def found() -> list[str]:
        return sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))

    if not found():
        ensure_apt("pg_ctlcluster", "postgresql")
    paths = found()
    return str(Path(paths[-1]).parent) if paths else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a `postgres` nor a `nobody` user exists to run PostgreSQL")


def _cmd(user: pwd.struct_passwd | None, *args: str) -> list[str]:
    if user is None:
        return list(args)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--", *args]


@contextmanager
def postgres_server(durable: bool = False) -> Iterator[PostgresServer]:
    """`durable=False` turns fsync off (tests); benches keep it on, as a deployment would."""
    programs = bin_dir()
    if programs is None:
        raise FileNotFoundError("PostgreSQL is not installed and could not be installed (apt-get install postgresql)")
    user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="mimo-pg-"))
    data = root / "data"
    log = root / "server.log"
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    port = _free_port()
    try:
        subprocess.run(
            _cmd(
                user, f"{programs}/initdb", "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync"
            ),
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {data} -c max_connections=200"
        if not durable:
            options += " -c fsync=off"
        subprocess.run(
            _cmd(user, f"{programs}/pg_ctl", "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"),
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        yield PostgresServer(host="127.0.0.1", port=port, user=SUPERUSER, bin_dir=programs, data_dir=str(data))
    except subprocess.CalledProcessError as e:
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"{' '.join(e.cmd)} failed: {e.stderr.strip()}\n{tail}") from e
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                _cmd(user, f"{programs}/pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop"),
                capture_output=True,
                env=env,
            )
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    with postgres_server() as server:
        print(server.create_database("dagster"), flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
