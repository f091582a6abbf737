"""A throwaway PostgreSQL server for the tests (the class board's second store): `initdb` and
`pg_ctl` into a temporary folder, listening on 127.0.0.1 only at a free port, its Unix socket in
that folder, a random password. PostgreSQL refuses to run as root: as root the server runs as
`nobody`. conftest.py starts one for the session (`postgres_server`) when a test asks for it;
each test gets the board database emptied (`board_database`)."""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

HOST = "127.0.0.1"
USER = "postgres"  # the server's superuser (initdb -U)
RUN_AS = "nobody"  # when we are root
DATABASE = "board_tests"
BOARD_TABLES = ("boards", "entries", "live", "nicknames", "names")
SERVER_CONF = {
    "listen_addresses": f"'{HOST}'",
    "fsync": "off",  # a test database: nothing to keep across a crash
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "100",
    "shared_buffers": "'32MB'",
}


def find_program(name: str) -> str | None:
    """A PostgreSQL program on PATH, else in Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name)
    if found:
        return found
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / name).is_file():
            return str(Path(folder) / name)
    return None


def why_not() -> str | None:
    """Why no server can be started here, or None."""
    for name in ("initdb", "pg_ctl"):
        if find_program(name) is None:
            return f"PostgreSQL's {name} is not installed (Debian: apt-get install postgresql)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -r requirements-cluster.txt)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class PostgresServer:
    """One PostgreSQL server in its own folder; `init` once, then `start`, `stop`, `remove`."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="bert-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.port = free_port()
        self.password = secrets.token_urlsafe(16)
        self.as_user: dict = {}
        if os.geteuid() == 0:
            who = pwd.getpwnam(RUN_AS)
            os.chown(self.dir, who.pw_uid, who.pw_gid)
            self.as_user = {"user": who.pw_uid, "group": who.pw_gid, "extra_groups": []}
        self._made = False  # the board database

    def init(self) -> None:
        """initdb: the superuser with a password, nothing listening but 127.0.0.1 and the folder's socket."""
        pwfile = self.dir / "password"
        pwfile.write_text(self.password)
        if self.as_user:
            os.chown(pwfile, self.as_user["user"], self.as_user["group"])
        self._run(
            find_program("initdb"),
            *("-D", self.data, "-U", USER, "--auth=scram-sha-256", f"--pwfile={pwfile}"),
            *("-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"),
        )
        pwfile.unlink()
        conf = {**SERVER_CONF, "port": str(self.port), "unix_socket_directories": f"'{self.dir}'"}
        with open(self.data / "postgresql.conf", "a") as f:
            f.writelines(f"{k} = {v}\n" for k, v in conf.items())

    def _run(self, *args) -> None:
        done = subprocess.run(
            [str(a) for a in args], cwd=self.dir, capture_output=True, text=True, timeout=120, **self.as_user
        )
        if done.returncode != 0:
            raise RuntimeError(f"{Path(args[0]).name} failed: {done.stdout}{done.stderr}{self._log_tail()}")

    def _log_tail(self) -> str:
        return self.log.read_text()[-2000:] if self.log.exists() else ""

    def start(self) -> None:
        self._run(find_program("pg_ctl"), "-D", self.data, "-l", self.log, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """`fast`: every connection is closed at once, as when a database server goes down."""
        self._run(find_program("pg_ctl"), "-D", self.data, "-m", mode, "-w", "-t", "60", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{self.password}@{HOST}:{self.port}/{database}"

    def board_database(self) -> str:
        """The URL of the session's board database, emptied of every board (a new database costs
        0.1-0.8 s here, emptying it 1 ms)."""
        import psycopg

        from app.class_store.postgres import SCHEMA_NAME

        if not self._made:
            with psycopg.connect(self.url(), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {DATABASE}")
            self._made = True
        with psycopg.connect(self.url(DATABASE), autocommit=True) as conn:
            if conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA_NAME}.boards",)).fetchone()[0]:
                tables = ", ".join(f"{SCHEMA_NAME}.{t}" for t in BOARD_TABLES)
                conn.execute(f"TRUNCATE {tables} RESTART IDENTITY")
        return self.url(DATABASE)

    def remove(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self.stop("immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def started() -> PostgresServer:
    """A new server, started (about 1-2 s here: initdb, then start)."""
    server = PostgresServer()
    try:
        server.init()
        server.start()
    except BaseException:
        server.remove()
        raise
    return server
