"""A real PostgreSQL server on 127.0.0.1 for tests: Debian's `postgresql` binaries.

Why these: `make install` installs the Debian package when the binaries are missing (as
root); pytest-postgresql needs the same binaries, and the embedded-server wheels download
a server at run time, which tests must not. The server runs from a fresh data folder on
a free port with its own socket folder, with password (scram) login over TCP, and is
stopped by its pid at teardown. initdb refuses to run as root: as root, the server runs
as the `postgres` system user, in a folder that user owns.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

USER = "harness"
PASSWORD = "pg-test-password-4e1f"


def find_bin() -> Path | None:
    """The folder holding initdb and postgres: on PATH, or Debian's versioned folder."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("postgres"):
        return Path(on_path).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "postgres").is_file():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """initdb + postgres in a temporary folder; `url(db)` to connect, `stop()` to end."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="harness-pg-"))
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
            self._owner: tuple[int, int] | None = (pw.pw_uid, pw.pw_gid)
        else:
            self._owner = None

    def _file(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text)
        if self._owner:
            os.chown(path, *self._owner)
        return path

    def start(self) -> None:
        """initdb, then postgres in the background; returns once it accepts logins."""
        pwfile = self._file("pw", PASSWORD + "\n")
        sockets = self.root / "sock"
        sockets.mkdir()
        if self._owner:
            os.chown(sockets, *self._owner)
        env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.root / "data"),
                "-U",
                USER,
                f"--pwfile={pwfile}",
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "-E",
                "UTF8",
            ],
            check=True,
            cwd=self.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            **self._as,
        )
        self.proc = subprocess.Popen(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(self.root / "data"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-k",
                str(sockets),
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
            cwd=self.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "server.log", "wb"),  # noqa: SIM115 - closed with the process
            **self._as,
        )
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (self.root / "server.log").read_text(errors="replace")
                    self.stop()
                    raise RuntimeError(f"PostgreSQL did not start:\n{log}") from None
                time.sleep(0.2)

    def url(self, db: str, password: str = PASSWORD) -> str:
        """A URL for database `db` with the test user and `password`."""
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{db}"

    def new_database(self, name: str) -> str:
        """Create database `name`; its URL."""
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server by its pid (fast shutdown, then kill) and remove its folder."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def postgres_server() -> Iterator[PostgresServer]:
    """The body of the session fixture: skip (with the reason) only without binaries."""
    import pytest

    bindir = find_bin()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, postgres) not found on PATH or in "
            "/usr/lib/postgresql/*/bin: install Debian's postgresql package (make install "
            "does, as root)"
        )
    server = PostgresServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
