"""The fsspec store: batched fetches bounded by files and bytes, and how it maps paths."""

from __future__ import annotations

from typing import Any

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from ctxfs import FileInfo, Workspace
from ctxfs.backends import FsspecStore


class BatchRecordingMemory(MemoryFileSystem):
    """A private memory filesystem that notes the paths of each batched ``cat``."""

    cachable = False  # fsspec would otherwise hand every test the same instance

    def __init__(self) -> None:
        super().__init__(global_store=False)
        self.batches: list[list[str]] = []

    def cat(self, path: Any, recursive: bool = False, on_error: str = "raise", **kw: Any) -> Any:
        self.batches.append(list(path))
        return super().cat(path, recursive=recursive, on_error=on_error, **kw)


def _store_with(sizes: dict[str, int], **limits: int) -> tuple[FsspecStore, list[FileInfo]]:
    fs = BatchRecordingMemory()
    store = FsspecStore(fs, "/root", **limits)
    files = []
    for name, size in sizes.items():
        store.write(f"/{name}", b"x" * size)
        files.append(store.info(f"/{name}"))
    return store, files


def test_fetch_batches_are_bounded_by_bytes_in_flight() -> None:
    sizes = {"a": 60, "b": 30, "c": 20, "d": 10, "big": 150, "e": 5}
    store, files = _store_with(sizes, fetch_batch_files=10, fetch_batch_bytes=100)
    fetched = list(store.fetch(files))
    assert [(info.path, len(data)) for info, data in fetched] == [
        (f"/{name}", size) for name, size in sizes.items()
    ]
    assert isinstance(store.fs, BatchRecordingMemory)
    assert store.fs.batches == [
        ["/root/a", "/root/b"],
        ["/root/c", "/root/d"],
        ["/root/big"],  # larger than the budget: alone
        ["/root/e"],
    ]


def test_fetch_batches_are_bounded_by_file_count_and_unknown_sizes_take_a_share() -> None:
    store, files = _store_with(dict.fromkeys("abcde", 1), fetch_batch_files=3)
    list(store.fetch(files))
    unknown = [FileInfo(info.path, "file", None) for info in files]
    list(store.fetch(unknown))
    assert isinstance(store.fs, BatchRecordingMemory)
    assert [len(batch) for batch in store.fs.batches] == [3, 2, 3, 2]


def test_batch_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"must be >= 1"):
        FsspecStore(MemoryFileSystem(skip_instance_cache=True), fetch_batch_bytes=0)


def test_paths_map_onto_the_root_and_back() -> None:
    fs = MemoryFileSystem(global_store=False, skip_instance_cache=True)
    fs.pipe_file("/elsewhere.txt", b"not mine")
    store = FsspecStore(fs, "/inner/")
    assert store.root == "/inner"
    assert store.url == "memory://inner"
    workspace = Workspace(store)
    workspace.write_text("/a/b.txt", "mine")
    assert fs.cat_file("/inner/a/b.txt") == b"mine"
    assert workspace.glob("**").paths == ("/a/b.txt",)
    assert store.real_path("/a/b.txt") == "/a/b.txt"
    assert store.local_path("/a/b.txt") is None
    assert repr(store) == "FsspecStore('memory://inner')"
