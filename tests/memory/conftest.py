"""Fixtures of the memory tests: a real PostgreSQL server, started in a temporary folder.

The server comes from the ``postgresql`` package (Debian's; ``.ci/run`` installs it when
missing). A missing or broken installation fails the tests that need it: they never skip.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator

import pytest


def _bin_dir() -> str:
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if not candidates:
        pytest.fail("PostgreSQL is not installed (no initdb): apt-get install postgresql")
    return os.path.dirname(candidates[-1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A connection URL to a fresh PostgreSQL server on 127.0.0.1 and a free port."""
    bindir = _bin_dir()
    base = tempfile.mkdtemp(prefix="ctxfs-pg-")
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root: run the server as 'postgres'
        shutil.chown(base, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    data, log, port = os.path.join(base, "data"), os.path.join(base, "server.log"), _free_port()

    def run(*command: str) -> None:
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            detail = done.stderr or done.stdout
            if os.path.exists(log):
                with open(log, encoding="utf-8", errors="replace") as handle:
                    detail += handle.read()
            pytest.fail(f"PostgreSQL could not be started ({' '.join(command[:2])}): {detail}")

    run(f"{bindir}/initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
    options = f"-F -p {port} -k {base} -c listen_addresses=127.0.0.1"
    run(f"{bindir}/pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "-t", "120", "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(base, ignore_errors=True)
