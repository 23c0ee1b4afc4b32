"""The shipped workspace conformance suite, run on memory, local disk and S3 (moto over HTTP),
and the tests that are about one backend only.

:class:`TestWorkspaceConformance` runs every test of :mod:`ctxfs.testing.conformance` once per
backend of the parametrized ``make_workspace`` fixture (tests/conftest.py). The tests below it
say in their names which backend they are about: a dead S3 endpoint, a real permission
failure, atomic rename on local disk, private memory stores.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from ctxfs import BackendError, PathExistsError, PathNotFoundError, ReadOnlyPathError, Workspace
from ctxfs.testing.conformance import WorkspaceConformance, WorkspaceFactory


class TestWorkspaceConformance(WorkspaceConformance):
    @pytest.fixture
    def make_workspace(self, make_workspace: WorkspaceFactory) -> WorkspaceFactory:
        return make_workspace  # tests/conftest.py: memory, local disk and S3 in turn


# -- "missing" versus "could not ask" -----------------------------------------------------------


def _dead_endpoint() -> str:
    """An http URL on loopback where nothing listens (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return f"http://127.0.0.1:{port}"


def test_s3_dead_endpoint_raises_backend_error_never_missing() -> None:
    endpoint = _dead_endpoint()
    options = {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
    }
    with pytest.raises(BackendError) as opening:
        Workspace("s3://ctxfs-test/ws", storage_options=options)
    assert str(opening.value) == (
        f"could not connect to the storage at {endpoint} (EndpointConnectionError); check the "
        "endpoint URL and that the server is running"
    )
    # Unchecked, every operation still says "could not ask", never "missing".
    workspace = Workspace("s3://ctxfs-test/ws", storage_options=options, check=False)
    with pytest.raises(BackendError, match=r"could not connect to the storage"):
        workspace.exists("/notes.md")
    with pytest.raises(BackendError):
        workspace.info("/notes.md")
    with pytest.raises(BackendError):
        workspace.ls("/")
    with pytest.raises(BackendError):
        workspace.read_text("/notes.md")
    with pytest.raises(BackendError) as caught:
        workspace.write_text("/notes.md", "x")
    assert not isinstance(caught.value, PathNotFoundError)


NOBODY = 65534


@contextlib.contextmanager
def _unprivileged() -> Iterator[None]:
    """Run the block without root's override of file permissions.

    Root's CAP_DAC_OVERRIDE ignores chmod, so as root the block runs with the effective uid of
    "nobody": the kernel then refuses with a real EACCES, nothing is simulated.
    """
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


def test_local_permission_denied_raises_backend_error_never_missing() -> None:
    top = tempfile.mkdtemp(prefix="ctxfs-perm-")
    try:
        os.chmod(top, 0o755)
        workspace = Workspace(os.path.join(top, "ws"))
        workspace.write_text("/locked/secret.txt", "secret")
        workspace.write_text("/open.txt", "open")
        os.chmod(workspace.url, 0o755)
        os.chmod(os.path.join(workspace.url, "locked"), 0o700)
        with _unprivileged():
            assert workspace.exists("/open.txt")
            assert not workspace.exists("/absent.txt")
            assert workspace.exists("/locked")
            with pytest.raises(BackendError, match=r"refused access"):
                workspace.exists("/locked/secret.txt")
            with pytest.raises(BackendError):
                workspace.info("/locked/secret.txt")
            with pytest.raises(BackendError):
                workspace.ls("/locked")
            with pytest.raises(BackendError):
                workspace.read_text("/locked/secret.txt")
        assert workspace.read_text("/locked/secret.txt") == "secret"
    finally:
        for folder, dirs, _files in os.walk(top):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(top)


def _locked_tree() -> tuple[str, Workspace]:
    top = tempfile.mkdtemp(prefix="ctxfs-perm-")
    os.chmod(top, 0o755)
    return top, Workspace(os.path.join(top, "ws"))


def _unlock(top: str) -> None:
    for folder, dirs, _files in os.walk(top):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
    shutil.rmtree(top)


def test_local_walk_that_cannot_look_into_a_folder_raises_never_skips() -> None:
    # Readable but not searchable: the names can be listed, but not one file can be looked at.
    top, workspace = _locked_tree()
    try:
        workspace.write_text("/listable/secret.txt", "needle\n")
        workspace.write_text("/open.txt", "needle\n")
        os.chmod(workspace.url, 0o755)
        os.chmod(os.path.join(workspace.url, "listable"), 0o744)
        with _unprivileged():
            assert workspace.read_text("/open.txt") == "needle\n"
            with pytest.raises(BackendError, match=r"/listable/secret.txt: storage refused"):
                workspace.glob("*.txt")
            with pytest.raises(BackendError, match=r"refused access"):
                workspace.grep("needle")
            assert workspace.grep("needle", "/open.txt").files[0].path == "/open.txt"
        assert workspace.glob("*.txt").paths == ("/listable/secret.txt", "/open.txt")
    finally:
        _unlock(top)


def test_local_walk_that_cannot_list_a_folder_or_read_a_file_raises() -> None:
    top, workspace = _locked_tree()
    try:
        workspace.write_text("/locked/secret.txt", "needle\n")
        workspace.write_text("/unreadable.txt", "needle\n")
        os.chmod(workspace.url, 0o755)
        os.chmod(os.path.join(workspace.url, "locked"), 0o700)
        os.chmod(os.path.join(workspace.url, "unreadable.txt"), 0o600)
        with _unprivileged():
            with pytest.raises(BackendError, match=r"^/locked: storage refused access"):
                workspace.glob("*.txt")
            with pytest.raises(BackendError, match=r"^/unreadable.txt: storage refused access"):
                workspace.grep("needle", "/unreadable.txt")
    finally:
        _unlock(top)


# -- writing ----------------------------------------------------------------------------------


def test_local_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("/a/f.txt", "one")
    workspace.write_text("/a/f.txt", "two")
    workspace.write_text("/a/g.txt", "three", create_only=True)
    with pytest.raises(PathExistsError):
        workspace.write_text("/a/g.txt", "four", create_only=True)
    assert sorted(os.listdir(tmp_path / "ws" / "a")) == ["f.txt", "g.txt"]
    assert (tmp_path / "ws" / "a" / "f.txt").read_text() == "two"


def test_local_write_failure_keeps_the_old_content(tmp_path: Path) -> None:
    # A real failure from the kernel: RLIMIT_FSIZE makes writes past 1 KiB fail with EFBIG.
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("/f.txt", "old content")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, hard))
        with pytest.raises(BackendError) as caught:
            workspace.write_text("/f.txt", "new " * 10_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.EFBIG
    assert workspace.read_text("/f.txt") == "old content"
    assert os.listdir(tmp_path / "ws") == ["f.txt"]


def test_a_crashed_local_write_leaves_no_temp_file_in_listings(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("/a/f.txt", "kept")
    # What a write killed between creating its temporary file and renaming it leaves behind.
    (tmp_path / "ws" / "a" / f".ctxfs-{'0' * 32}.tmp").write_text("half")
    assert [e.path for e in workspace.ls("/a")] == ["/a/f.txt"]
    assert workspace.glob(".*", "/a").paths == ()
    assert workspace.grep("half", glob=".*").files == ()
    assert workspace.glob("**").paths == ("/a/f.txt",)


def test_temporary_names_are_never_listed_on_any_store(workspace: Workspace) -> None:
    # A write in progress, or cut short, or the probe of an access check: on local disk a
    # temporary file, on object storage a probe object; no listing shows either.
    workspace.write_text("/a/f.txt", "kept")
    workspace.store.write(f"/a/.ctxfs-{'0' * 32}.tmp", b"half")
    assert [e.path for e in workspace.ls("/a")] == ["/a/f.txt"]
    assert workspace.glob(".*", "/a").paths == ()
    assert workspace.grep("half", glob=".*").files == ()
    assert workspace.glob("**").paths == ("/a/f.txt",)


# -- isolation --------------------------------------------------------------------------------


def test_two_memory_workspaces_with_the_same_url_never_share_files() -> None:
    first = Workspace("memory://shared-name")
    second = Workspace("memory://shared-name")
    other = Workspace("memory://")
    first.write_text("/secret.txt", "first's")
    assert not second.exists("/secret.txt")
    assert second.ls("/") == []
    assert other.ls("/") == []
    second.write_text("/secret.txt", "second's")
    assert first.read_text("/secret.txt") == "first's"
    assert first.store is not second.store


def test_memory_workspaces_sharing_a_filesystem_object_share_files() -> None:
    fs = MemoryFileSystem(global_store=False, skip_instance_cache=True)
    first = Workspace(fs, root="/ws")
    second = Workspace(fs, root="/ws")
    first.write_text("/f.txt", "shared")
    assert second.read_text("/f.txt") == "shared"
    assert Workspace(first.store).read_text("/f.txt") == "shared"


def test_a_symlink_inside_the_root_does_not_open_a_read_only_area(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", read_only=["/tool_results"])
    full = Workspace(tmp_path / "ws")
    full.write_text("/tool_results/t/c.txt", "precious")
    (tmp_path / "ws" / "notes").symlink_to(tmp_path / "ws" / "tool_results" / "t")
    with pytest.raises(
        ReadOnlyPathError, match=r"/notes/c.txt \(a link to /tool_results/t/c.txt\)"
    ):
        ws.write_text("/notes/c.txt", "overwritten")
    with pytest.raises(ReadOnlyPathError):
        ws.edit("/notes/c.txt", "precious", "x")
    with pytest.raises(ReadOnlyPathError):
        ws.write_text("/notes/new.txt", "x")  # a new file in the area, through the link
    assert full.read_text("/tool_results/t/c.txt") == "precious"
    assert ws.read_text("/notes/c.txt") == "precious"  # reading through it is fine
