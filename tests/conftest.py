"""Shared fixtures: one parametrized `workspace` over memory, local disk and S3 (moto server).

The S3 backend is real HTTP: moto's S3 server on 127.0.0.1 and a free port (:func:`s3_server`),
started once per session and reset before each test that uses it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxfs import Workspace
from tests._zygote import Zygote

BUCKET = "ctxfs-test"


def _unit(item: pytest.Item) -> str:
    """What must stay on one worker: a module whose tests share a module-scoped fixture
    (it is built once per worker), else the test itself."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    shared = any(d.scope == "module" for defs in definitions for d in defs)
    return item.nodeid.split("::")[0] if shared else item.nodeid


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each worker starts with its share of the tests marked ``slow``.

    The wall time is bounded by whichever worker ends last: a test of half a minute started
    near the end leaves the other worker idle meanwhile. pytest-xdist hands each worker a
    contiguous run of the collection at first (then moves tests to whichever runs out), so
    the slow tests are dealt in turn to the front of each worker's run, and every worker
    ends on short tests. Without workers they simply come first.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    units: dict[str, list[pytest.Item]] = {}
    rest = []
    for item in items:
        if item.get_closest_marker("slow") is None:
            rest.append(item)
        else:
            units.setdefault(_unit(item), []).append(item)
    hands: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for number, unit in enumerate(units.values()):
        hands[number % workers] += unit
    order: list[pytest.Item] = []
    left = len(items)
    for worker, hand in enumerate(hands):
        size = left // (workers - worker)  # xdist's first split: an even share of what is left
        left -= size
        taken = max(0, size - len(hand))
        order += [*hand, *rest[:taken]]
        del rest[:taken]
    items[:] = [*order, *rest]


_counter = itertools.count()


def s3_app() -> Any:
    """moto's WSGI application for S3 (and its ``/moto-api``), without the service guessing.

    moto's server guesses each request's service from its headers, and looking up the guess
    lists moto's ~200 service folders on disk (a ``stat`` each) twice per request: a third
    of the server's time per S3 request, which every S3 test waits for.
    """
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    class S3Only(DomainDispatcherApplication):
        def get_application(self, environ: dict[str, Any]) -> Any:
            path = environ.get("PATH_INFO", "")
            backend = "moto_api" if path.startswith("/moto-api") else "s3"
            with self.lock:
                app = self.app_instances.get(backend)
                if app is None:
                    app = self.app_instances[backend] = self.create_app(backend)  # type: ignore[arg-type]
            return app

    return S3Only(create_backend_app)


@contextlib.contextmanager
def s3_server(wrap: Callable[[Any], Any] = lambda app: app) -> Iterator[str]:
    """A moto S3 server on loopback and a free port, in a thread; yields its URL."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import make_server

    # werkzeug logs every request at INFO, and pytest keeps each record of each test:
    # thousands of formatted lines per S3 test for nothing.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server(
        "127.0.0.1", 0, wrap(s3_app()), threaded=True, request_handler=MotoRequestHandler
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """URL of a moto S3 server running on loopback for the whole session."""
    with s3_server() as endpoint:
        yield endpoint


# What the agents and workers of the crash and concurrency tests import (tests/_zygote.py)
PRELOAD = (
    "langchain.agents",
    "langchain_core.messages",
    "langgraph.checkpoint.sqlite",
    "s3fs",
    "ctxfs",
    "ctxfs._compaction._engine",
    "ctxfs.integrations.langchain",
    "ctxfs.memory",
    "ctxfs.subagents",
    "ctxfs.testing",
    "ctxfs.workflows",
)


@pytest.fixture(scope="session")
def zygote() -> Iterator[Zygote]:
    """Starts the tests' agent and worker scripts as processes forked from one that has
    already imported :data:`PRELOAD`: each saves the interpreter's start-up (about two seconds
    of CPU), and is still a process of its own, killed with a real SIGKILL."""
    server = Zygote(PRELOAD)
    yield server
    server.close()


@pytest.fixture(scope="session")
def aio_session() -> Any:
    """One aiobotocore session for all tests: each new one re-parses botocore's service
    models (about 0.4 s), which dominated the S3 tests' time."""
    from aiobotocore.session import AioSession

    return AioSession()


def s3_options(endpoint: str, session: Any = None) -> dict[str, Any]:
    """storage_options for s3fs pointing at the moto server."""
    options: dict[str, Any] = {"session": session} if session is not None else {}
    return options | {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
    }


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> str:
    """A fresh, empty bucket: the server is reset before each test."""
    request = urllib.request.Request(f"{s3_endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request) as response:
        assert response.status == 200
    s3_client(s3_endpoint).create_bucket(Bucket=BUCKET)
    return BUCKET


def s3_client(endpoint: str) -> Any:
    """A boto3 S3 client of the moto server at ``endpoint`` (its test credentials)."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


WorkspaceFactory = Callable[..., Workspace]


@pytest.fixture(params=["memory", "local", "s3"])
def make_workspace(request: pytest.FixtureRequest, tmp_path: Path) -> WorkspaceFactory:
    """A factory of fresh workspaces on one backend; every test using it runs on all three."""
    backend = request.param

    def factory(**kwargs: Any) -> Workspace:
        n = next(_counter)
        if backend == "memory":
            return Workspace(f"memory://ws{n}", **kwargs)
        if backend == "local":
            return Workspace(tmp_path / f"ws{n}", **kwargs)
        endpoint = request.getfixturevalue("s3_endpoint")
        bucket = request.getfixturevalue("s3_bucket")
        session = request.getfixturevalue("aio_session")
        options = s3_options(endpoint, session)
        return Workspace(f"s3://{bucket}/ws{n}", storage_options=options, **kwargs)

    factory.backend = backend  # type: ignore[attr-defined]
    return factory


@pytest.fixture
def workspace(make_workspace: WorkspaceFactory) -> Workspace:
    """A fresh, empty workspace on each backend in turn."""
    return make_workspace()


def _encodable(text: str) -> str:
    """``text`` with each lone surrogate as its escape (UTF-8 cannot carry one)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failure whose report quotes a lone surrogate (a generated example, a captured log)
    is reported as a failure: the test workers send reports as UTF-8, and such a report
    stopped the whole run with an internal error instead."""
    try:
        str(report.longrepr).encode("utf-8")
        for _, content in report.sections:
            content.encode("utf-8")
    except UnicodeEncodeError:
        if report.longrepr is not None:
            report.longrepr = _encodable(str(report.longrepr))
        report.sections = [(title, _encodable(body)) for title, body in report.sections]
