"""Two processes changing one file at once, on local disk and on S3: nothing is lost.

Each worker (``_cas_worker.py``) runs in its own Python process and starts when the test
releases all of them together. ``update`` appends with compare-and-swap; ``edit`` runs the
agent's ``edit_file`` tool. Without conditional writes both lose updates: a read-modify-write
that another process's write overtakes silently drops that write.

The S3 server here is moto over HTTP, with one difference from the shared fixture: requests
are served one at a time. moto checks a conditional PUT's ``If-Match`` and then stores the
object in two steps that another request can run between; S3 does both atomically. Serving
one request at a time gives moto S3's atomicity, so a lost update here is ctxfs's fault.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxfs import TranscriptArchive, Workspace
from tests._zygote import PIPE, Zygote
from tests.conftest import s3_client, s3_server

WORKER = os.path.join(os.path.dirname(__file__), "_cas_worker.py")
COUNT = 40
WHO = ("A", "B")


class _OneAtATime:
    """A WSGI application serving one request at a time (see the module docstring)."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        with self._lock:
            return list(self._app(environ, start_response))


@pytest.fixture(scope="module")
def atomic_s3() -> Iterator[dict[str, Any]]:
    """storage_options of a fresh bucket on a moto server serving one request at a time."""
    with s3_server(_OneAtATime) as endpoint:
        options = {
            "endpoint_url": endpoint,
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"region_name": "us-east-1"},
        }
        s3_client(endpoint).create_bucket(Bucket="ctxfs-cas")
        yield options


def _target(backend: str, tmp_path: Path, options: dict[str, Any] | None) -> dict[str, Any]:
    if backend == "local":
        return {"target": str(tmp_path / "ws")}
    return {"target": f"s3://ctxfs-cas/{tmp_path.name}", "storage_options": options}


def _run_together(zygote: Zygote, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Start one worker per name in WHO, release them at once, return their reports."""
    workers = [
        zygote.popen([sys.executable, WORKER, json.dumps(config | {"who": who})], stdin=PIPE)
        for who in WHO
    ]
    for worker in workers:
        assert worker.stdout is not None
        assert worker.stdout.readline() == "ready\n"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err
        reports.append(json.loads(out))
    return reports


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "s3"])
def test_two_processes_updating_one_file_lose_nothing(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, zygote: Zygote
) -> None:
    options = request.getfixturevalue("atomic_s3") if backend == "s3" else None
    config = _target(backend, tmp_path, options)
    workspace = Workspace(config["target"], storage_options=config.get("storage_options"))
    workspace.write_text("/shared/log.txt", "")

    reports = _run_together(
        zygote, config | {"mode": "update", "count": COUNT, "path": "/shared/log.txt"}
    )

    lines = workspace.read_text("/shared/log.txt").splitlines()
    assert sorted(lines) == sorted(f"{who}-{i}" for who in WHO for i in range(COUNT))
    for who in WHO:  # each process's own appends stay in its order
        assert [line for line in lines if line.startswith(who)] == [
            f"{who}-{i}" for i in range(COUNT)
        ]
    assert all(report["computed"] >= COUNT for report in reports)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "s3"])
def test_two_processes_editing_one_file_lose_no_edit(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, zygote: Zygote
) -> None:
    options = request.getfixturevalue("atomic_s3") if backend == "s3" else None
    config = _target(backend, tmp_path, options)
    workspace = Workspace(config["target"], storage_options=config.get("storage_options"))
    slots = [f"slot {who}-{i}" for i in range(COUNT) for who in WHO]
    workspace.write_text("/notes/plan.md", "".join(f"{slot}: todo\n" for slot in slots))

    reports = _run_together(
        zygote, config | {"mode": "edit", "count": COUNT, "path": "/notes/plan.md"}
    )

    # Every edit the agent was told about is in the file, and every one was told "Edited".
    answers = [answer for report in reports for answer in report["answers"]]
    assert answers == ["Edited /notes/plan.md: replaced 1 occurrence"] * (2 * COUNT)
    assert workspace.read_text("/notes/plan.md") == "".join(f"{slot}: done\n" for slot in slots)


TWO_WRITERS = os.path.join(os.path.dirname(__file__), "_two_writers_worker.py")
ROUNDS = 12


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "s3"])
def test_two_processes_compacting_one_thread_get_a_branch_each_and_lose_nothing(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, zygote: Zygote
) -> None:
    # The two take turns, one compaction each, so that every run interleaves them the same
    # way; each continues its own conversation on the one thread "shared".
    options = request.getfixturevalue("atomic_s3") if backend == "s3" else None
    config = _target(backend, tmp_path, options)
    workers = {
        who: zygote.popen(
            [sys.executable, TWO_WRITERS, json.dumps(config | {"who": who})], stdin=PIPE
        )
        for who in WHO
    }

    def ask(who: str, line: str) -> dict[str, Any]:
        worker = workers[who]
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(line + "\n")
        worker.stdin.flush()
        answer = worker.stdout.readline()
        assert answer, worker.stderr.read() if worker.stderr else ""
        return dict(json.loads(answer))

    reports: dict[str, list[dict[str, Any]]] = {who: [] for who in WHO}
    for _ in range(ROUNDS):
        for who in WHO:
            reports[who].append(ask(who, "step"))
    endings = {who: ask(who, "end") for who in WHO}
    for worker in workers.values():
        worker.communicate(timeout=120)
        assert worker.returncode == 0

    # Nothing lost: each writer's conversation is its own segments plus its context.
    assert endings == {who: {"lossless": True} for who in WHO}
    # Every committed segment is in the index, and every summary's segment with it.
    workspace = Workspace(config["target"], storage_options=config.get("storage_options"))
    archive = TranscriptArchive(workspace, "shared")
    indexed = {s.number for s in archive.segments()}
    records = {
        int(e.name[len("segment-") : -len(".json")])
        for e in workspace.ls(archive.directory)
        if e.name.startswith("segment-") and e.name.endswith(".json")
    }
    assert records == indexed
    summarized = {path for rs in reports.values() for r in rs for path in r["summarized"]}
    assert summarized == {s.markdown_path for s in archive.segments()}
    # Each conversation is a branch of its own: neither is refused, nothing is merged.
    failures = [r for rs in reports.values() for r in rs if r["failed"]]
    assert not failures, failures
    assert all(any(r["summarized"] for r in rs) for rs in reports.values())
    branches = archive.branches()
    assert len(branches) == len(WHO)
    assert {p for b in branches for p in (s.markdown_path for s in b.segments)} == summarized
