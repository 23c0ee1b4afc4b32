"""Opening a workspace target: local paths, file:// URLs, memory://, S3, filesystem objects
and stores; each opens the store that fits, once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from ctxfs import Workspace
from ctxfs.backends import FsspecStore, LocalStore, Store, open_storage
from ctxfs.backends._options import check_s3_options, s3_option_names
from ctxfs.testing import RecordingStore


def test_a_bare_path_creates_the_folder_and_is_local(tmp_path: Path) -> None:
    target = tmp_path / "does" / "not" / "exist"
    workspace = Workspace(target)
    assert target.is_dir()
    assert isinstance(workspace.store, LocalStore)
    assert workspace.store.local_path("/f.txt") == str(target / "f.txt")
    assert workspace.url == str(target)
    workspace.write_text("/f.txt", "on disk")
    assert (target / "f.txt").read_text() == "on disk"


def test_a_string_path_and_a_relative_path_are_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    workspace = Workspace("rel/ws")
    assert workspace.url == str(tmp_path / "rel" / "ws")
    assert (tmp_path / "rel" / "ws").is_dir()


def test_a_file_url_opens_the_local_folder(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "existing.txt").write_text("already here")
    workspace = Workspace(f"file://{tmp_path / 'ws'}")
    assert isinstance(workspace.store, LocalStore)
    assert workspace.read_text("/existing.txt") == "already here"


def test_a_memory_url_is_a_private_in_memory_store() -> None:
    workspace = Workspace("memory://scratch")
    store = workspace.store
    assert isinstance(store, FsspecStore) and isinstance(store.fs, MemoryFileSystem)
    assert workspace.url == "memory://scratch"
    assert store.local_path("/a.txt") is None
    workspace.write_text("/a.txt", "x")
    assert Workspace("memory://scratch").ls("/") == []
    # fsspec's process-wide memory store stays untouched.
    assert not any("scratch" in key for key in MemoryFileSystem.store)


def test_a_bare_memory_url_works_at_the_store_root() -> None:
    workspace = Workspace("memory://")
    workspace.write_text("/dir/a.txt", "x")
    assert [e.path for e in workspace.ls("/")] == ["/dir"]
    assert workspace.read_text("/dir/a.txt") == "x"


def test_an_unknown_protocol_is_refused_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match=r"unknown storage protocol 'nosuchproto'") as caught:
        Workspace("nosuchproto://bucket/x")
    assert "memory://" in str(caught.value) and "s3://" in str(caught.value)


def test_a_protocol_whose_package_is_missing_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fsspec.registry import known_implementations

    monkeypatch.setitem(
        known_implementations,
        "nopkg",
        {"class": "ctxfs_no_such_module.FS", "err": "Install nopkgfs to access NoPkg"},
    )
    with pytest.raises(ImportError) as caught:
        Workspace("nopkg://bucket/x")
    assert str(caught.value) == (
        "nopkg:// storage is not available here: Install nopkgfs to access NoPkg; "
        "module 'ctxfs_no_such_module' not found"
    )


@pytest.mark.parametrize("url", ["reference://x/y", "dir://x/y", "generic://x/y"])
def test_a_filesystem_a_url_alone_cannot_make_is_a_value_error(url: str) -> None:
    # they need arguments a URL does not carry (fo=, path=, ...): a TypeError or an
    # AttributeError from inside fsspec before
    with pytest.raises(ValueError, match=r"needs other options .*storage_options"):
        Workspace(url)


def test_root_with_a_url_or_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"root= is only for a filesystem object; put the folder"):
        Workspace("memory://x", root="/inner")
    with pytest.raises(ValueError, match=r"root= is only for a filesystem object"):
        Workspace(tmp_path / "ws", root="/inner")
    assert not (tmp_path / "ws").exists()


def test_storage_options_with_a_filesystem_object_are_refused() -> None:
    with pytest.raises(ValueError, match=r"storage_options apply only to a URL"):
        Workspace(MemoryFileSystem(), storage_options={"endpoint_url": "http://x"})


@pytest.mark.parametrize("target", ["memory://x", "local"])
def test_storage_options_that_a_backend_does_not_use_are_refused(
    tmp_path: Path, target: str
) -> None:
    url = str(tmp_path / "ws") if target == "local" else target
    with pytest.raises(ValueError, match=r"storage_options .*not used"):
        Workspace(url, storage_options={"endpoint_urll": "http://typo"})


def test_a_filesystem_object_with_a_root(tmp_path: Path) -> None:
    fs = MemoryFileSystem(skip_instance_cache=True)
    fs.pipe_file("/outside.txt", b"not mine")
    workspace = Workspace(fs, root="/inner/")
    workspace.write_text("/a.txt", "mine")
    assert fs.cat_file("/inner/a.txt") == b"mine"
    assert [e.path for e in workspace.ls("/")] == ["/a.txt"]
    assert workspace.url == "memory://inner"

    local = Workspace(LocalFileSystem(), root=str(tmp_path / "made"))
    assert isinstance(local.store, LocalStore)  # a local filesystem gets the link checks
    assert (tmp_path / "made").is_dir()


def test_open_storage_returns_an_absolute_local_root(tmp_path: Path) -> None:
    store = open_storage(str(tmp_path / "x" / ".." / "y"))
    assert isinstance(store, LocalStore)
    assert store.root == str(tmp_path / "y")
    assert os.path.isabs(store.root)
    assert store.url == store.root


def test_a_store_is_used_as_it_is_and_shared() -> None:
    first = Workspace("memory://one")
    recorded = RecordingStore(first.store)
    assert isinstance(recorded, Store)
    second = Workspace(recorded, read_only=["/areas"])
    assert second.store is recorded and second.url == "memory://one"
    first.write_text("/f.txt", "shared")
    assert second.read_text("/f.txt") == "shared"
    with pytest.raises(ValueError, match=r"root= is only for a filesystem object"):
        Workspace(recorded, root="/inner")
    with pytest.raises(ValueError, match=r"storage_options apply only to a URL"):
        Workspace(recorded, storage_options={"anon": True})


# -- S3 storage options ------------------------------------------------------------------------


def test_an_unknown_s3_option_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ValueError) as caught:
        Workspace("s3://b/p", storage_options={"endpoint_urll": "http://127.0.0.1:9"})
    message = str(caught.value)
    assert message.startswith(
        "unknown S3 storage option 'endpoint_urll'; did you mean 'endpoint_url'? valid options: "
    )
    for name in ["client_kwargs", "config_kwargs", "key", "secret", "use_listings_cache"]:
        assert name in message
    with pytest.raises(ValueError, match=r"unknown S3 storage option 'no_such_thing'; valid"):
        Workspace("s3a://b/p", storage_options={"no_such_thing": 1})


S3FS_OPTIONS = [
    "anon",
    "key",
    "secret",
    "token",
    "endpoint_url",
    "use_ssl",
    "client_kwargs",
    "config_kwargs",
    "session",
    "profile",
    "requester_pays",
    "default_block_size",
    "default_fill_cache",
    "default_cache_type",
    "version_aware",
    "cache_regions",
    "s3_additional_kwargs",
    "max_concurrency",
    "username",
    "password",
    "asynchronous",
    "loop",
    "skip_instance_cache",
    "use_listings_cache",
    "listings_expiry_time",
    "max_paths",
]


def test_every_option_s3fs_takes_is_accepted() -> None:
    import s3fs

    assert set(S3FS_OPTIONS) <= s3_option_names(s3fs.S3FileSystem)
    check_s3_options(S3FS_OPTIONS, s3fs.S3FileSystem)
    options = {"anon": True, "profile": "nobody", "config_kwargs": {"connect_timeout": 1}}
    workspace = Workspace("s3://bucket/prefix", storage_options=options, check=False)
    assert workspace.url == "s3://bucket/prefix"
