"""Shared fixtures: one parametrized `workspace` over memory, local disk and S3 (moto server).

The S3 backend is real HTTP: moto's ThreadedMotoServer on 127.0.0.1 and a free port, started
once per session and reset before each test that uses it.
"""

from __future__ import annotations

import itertools
import logging
import socket
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxfs import Workspace

BUCKET = "ctxfs-test"
_counter = itertools.count()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """URL of a moto S3 server running on loopback for the whole session."""
    from moto.server import ThreadedMotoServer

    # werkzeug logs every request at INFO, and pytest keeps each record of each test:
    # thousands of formatted lines per S3 test for nothing.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


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
    import boto3

    request = urllib.request.Request(f"{s3_endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request) as response:
        assert response.status == 200
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)
    return BUCKET


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
