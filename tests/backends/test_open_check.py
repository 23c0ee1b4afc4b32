"""Opening a workspace checks its storage once and says, in words a person acts on, why not.

A missing bucket is not an empty workspace, a refused connection is not a missing file, and
a path the disk cannot use (a symbolic-link loop, a name too long) is not "storage could not
be reached". No message names the host path of a local workspace.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import BUCKET, s3_client, s3_options
from test_conformance import _dead_endpoint, _unprivileged

from ctxfs import BackendError, UnsafePathError, Workspace
from ctxfs.backends import translate_error
from ctxfs.testing import RecordingStore
from ctxfs.tools import tool_functions


def _s3(endpoint: str, session: Any, bucket: str, **kwargs: Any) -> Workspace:
    return Workspace(f"s3://{bucket}/ws", storage_options=s3_options(endpoint, session), **kwargs)


def test_a_missing_bucket_is_refused_when_the_workspace_is_opened(
    s3_endpoint: str, s3_bucket: str, aio_session: Any
) -> None:
    expected = "bucket 'no-such-bucket' does not exist; create it, or fix the workspace URL"
    for read_only in ([], ["/"]):
        with pytest.raises(BackendError) as caught:
            _s3(s3_endpoint, aio_session, "no-such-bucket", read_only=read_only)
        assert str(caught.value) == expected
    # Unchecked, the first operation says the same: the bucket is not an empty workspace.
    workspace = _s3(s3_endpoint, aio_session, "no-such-bucket", check=False)
    with pytest.raises(BackendError) as caught:
        workspace.ls("/")
    assert str(caught.value) == expected
    with pytest.raises(BackendError, match="bucket 'no-such-bucket' does not exist"):
        workspace.write_text("/a.txt", "x")


def test_opening_a_good_bucket_leaves_nothing_behind(
    s3_endpoint: str, s3_bucket: str, aio_session: Any
) -> None:
    workspace = _s3(s3_endpoint, aio_session, s3_bucket)  # reads, then writes a probe
    assert workspace.ls("/") == []
    client = s3_client(s3_endpoint)
    assert client.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_no_credentials_is_said_in_words(
    s3_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    options = {"endpoint_url": s3_endpoint, "client_kwargs": {"region_name": "us-east-1"}}
    with pytest.raises(BackendError) as caught:
        Workspace(f"s3://{s3_bucket}/ws", storage_options=options)
    assert str(caught.value) == (
        f"no credentials for bucket '{s3_bucket}': give key and secret in storage_options, or "
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an AWS profile"
    )


def test_a_refused_connection_names_the_endpoint_not_a_missing_file() -> None:
    endpoint = _dead_endpoint()
    options = {
        "endpoint_url": endpoint,
        "key": "k",
        "secret": "s",
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
    }
    with pytest.raises(BackendError) as caught:
        Workspace("s3://bucket-x/ws", storage_options=options)
    assert str(caught.value).startswith(f"could not connect to the storage at {endpoint} (")


def test_access_denied_and_refused_credentials_are_translated() -> None:
    from botocore.exceptions import ClientError

    def s3_error(code: str, operation: str) -> PermissionError:
        error = PermissionError("Access Denied")
        error.__cause__ = ClientError({"Error": {"Code": code, "Message": "no"}}, operation)
        return error

    denied = translate_error(s3_error("AccessDenied", "PutObject"), "/a.txt", bucket="b")
    assert isinstance(denied, BackendError)
    assert str(denied) == (
        "access denied to bucket 'b' (PutObject on /a.txt); check the credentials' permissions"
    )
    refused = translate_error(s3_error("InvalidAccessKeyId", "ListObjectsV2"), "/", bucket="b")
    assert str(refused) == (
        "the credentials for bucket 'b' were refused (InvalidAccessKeyId); check key, secret "
        "and token"
    )


def test_opening_memory_and_local_asks_the_store_one_cheap_question(tmp_path: Path) -> None:
    for inner in (Workspace("memory://one-call").store, Workspace(tmp_path / "ws").store):
        store = RecordingStore(inner)
        Workspace(store)
        assert store.methods() == ["info"]
        store.clear()
        Workspace(store).view(read_only=["/x"])
        assert store.methods() == ["info"]  # a view makes no new check


def test_a_local_folder_that_cannot_be_written_is_refused_unless_opened_read_only() -> None:
    top = tempfile.mkdtemp(prefix="ctxfs-open-")
    try:
        os.chmod(top, 0o755)
        root = os.path.join(top, "ws")
        Workspace(root).write_text("/a.txt", "a")
        os.chmod(root, 0o555)
        with _unprivileged():
            with pytest.raises(BackendError) as caught:
                Workspace(root)
            assert str(caught.value) == (
                "the workspace folder cannot be read and written: permission denied"
            )
            assert Workspace(root, read_only=["/"]).read_text("/a.txt") == "a"
    finally:
        os.chmod(os.path.join(top, "ws"), 0o755)
        shutil.rmtree(top)


def test_a_symlink_loop_is_a_path_error_and_a_long_path_works_without_host_paths(
    tmp_path: Path,
) -> None:
    workspace = Workspace(tmp_path / "ws")
    os.symlink("b", tmp_path / "ws" / "a")
    os.symlink("a", tmp_path / "ws" / "b")
    with pytest.raises(UnsafePathError) as caught:
        workspace.read_text("/a")
    assert str(caught.value) == (
        "path '/a' goes through a loop of symbolic links; it cannot be used"
    )
    # Under 4,096 bytes, over it with the root's host path: the store opens one name at a
    # time relative to a folder descriptor, so the host path's length never matters.
    deep = "/" + "/".join(["d" * 253] * 16) + "/x.txt"
    workspace.write_text(deep, "x")
    assert workspace.read_text(deep) == "x"
    read = {f.name: f for f in tool_functions(workspace)}["read_file"]
    out = read(file_path="/a")
    assert out.startswith("Error: path ")
    assert str(tmp_path) not in out


def test_a_filesystem_that_cannot_write_is_refused_unless_opened_read_only(
    tmp_path: Path,
) -> None:
    import zipfile

    from fsspec.implementations.zip import ZipFileSystem

    with zipfile.ZipFile(tmp_path / "docs.zip", "w") as archive:
        archive.writestr("docs/a.txt", "alpha\n")
    fs = ZipFileSystem(str(tmp_path / "docs.zip"))
    with pytest.raises(BackendError) as caught:
        Workspace(fs)
    assert str(caught.value).startswith("the storage cannot be written (")
    assert str(caught.value).endswith("); to only read it, open the workspace with read_only=['/']")
    assert Workspace(fs, read_only=["/"]).read_text("/docs/a.txt") == "alpha\n"
