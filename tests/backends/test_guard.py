"""A store that lets a raw ``OSError`` through, and a conditional write whose reply is lost.

The store contract says a store raises ctxfs errors only; one of your own (or a wrapper, as
tests use) may not. Whatever it lets through reaches the workspace's callers as the ctxfs
error it means, so every layer's ``except WorkspaceError`` handles a storage failure: a
memory that learns requeues its turns, the collector reports the family and goes on, the
``task`` tool answers with an error. And ``Workspace.update`` tells a write that landed with
its reply lost from one that did not: an append is never made twice; and a write a store
without atomic writes tore mid-way is undone, so the file is never left half-written.
"""

from __future__ import annotations

import errno
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import (
    BackendError,
    ConflictError,
    PathExistsError,
    PathNotFoundError,
    Workspace,
)
from ctxfs.backends import GuardedStore, guard_store
from ctxfs.testing import Fault, FaultyStore, RecordingStore


class RawErrors(RecordingStore):
    """Raises ``errors[method]`` (a raw exception) at each call of that method."""

    def __init__(self, inner: Any, **errors: BaseException) -> None:
        super().__init__(inner)
        self.errors = errors

    def _record(self, method: str, path: str) -> None:
        super()._record(method, path)
        if method in self.errors:
            raise self.errors[method]


def test_a_raw_os_error_of_a_store_is_a_backend_error() -> None:
    raw = Workspace("memory://guard-raw")
    raw.write_text("/a.txt", "hello")
    store = RawErrors(raw.store, read_bytes=ConnectionResetError(errno.ECONNRESET, "reset"))
    workspace = Workspace(store, check=False)
    with pytest.raises(BackendError, match="storage could not be reached") as caught:
        workspace.read_text("/a.txt")
    assert isinstance(caught.value.__cause__, ConnectionResetError)
    assert workspace.store is store  # the workspace still names the store it was given


def test_a_raw_file_not_found_is_not_found_and_a_disk_full_a_backend_error() -> None:
    raw = Workspace("memory://guard-missing")
    store = RawErrors(raw.store, info=FileNotFoundError("/gone"))
    assert not Workspace(store, check=False).exists("/gone")
    with pytest.raises(PathNotFoundError):
        Workspace(store, check=False).read_bytes("/gone")
    full = RawErrors(raw.store, write=OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(BackendError, match="No space left on device"):
        Workspace(full, check=False).write_text("/b.txt", "x")


def test_a_listing_that_fails_half_way_is_a_backend_error() -> None:
    raw = Workspace("memory://guard-walk")
    for n in range(3):
        raw.write_text(f"/d/{n}.txt", "needle")

    class Halfway(RecordingStore):
        def walk(self, path: str) -> Any:
            listed = super().walk(path)
            yield next(iter(listed))
            raise TimeoutError("the listing timed out")

    with pytest.raises(BackendError, match="timed out"):
        Workspace(Halfway(raw.store), check=False).grep("needle")


def test_what_is_not_an_os_error_passes_untouched() -> None:
    class Stopped(BaseException):
        pass

    raw = Workspace("memory://guard-stopped")
    store = RawErrors(raw.store, info=Stopped(), ls=KeyError("defect of the store"))
    with pytest.raises(Stopped):
        Workspace(store, check=False).exists("/x")
    with pytest.raises(KeyError):
        Workspace(store, check=False).ls("/")


def test_the_shipped_stores_are_not_wrapped(tmp_path: Any) -> None:
    memory = Workspace("memory://guard-shipped").store
    local = Workspace(tmp_path).store
    assert guard_store(memory) is memory and guard_store(local) is local
    guarded = guard_store(RecordingStore(memory))
    assert isinstance(guarded, GuardedStore) and guard_store(guarded) is guarded


def test_an_update_whose_reply_is_lost_is_done_once() -> None:
    raw = Workspace("memory://guard-lost-reply")
    raw.write_text("/log.txt", "one\n")
    store = FaultyStore(raw.store)
    store.add(Fault(method="write", kind="lost_response"))
    info = Workspace(store, check=False).update("/log.txt", lambda old: (old or b"") + b"two\n")
    assert info.size == 8 and raw.read_text("/log.txt") == "one\ntwo\n"
    assert [hit.method for hit in store.fired] == ["write"]


def test_an_update_whose_write_failed_still_fails() -> None:
    raw = Workspace("memory://guard-failed-write")
    raw.write_text("/log.txt", "one\n")
    for kind in ("error", "torn_write"):
        store = FaultyStore(raw.store)
        store.add(Fault(method="write", kind=kind))  # type: ignore[arg-type]
        with pytest.raises(BackendError):
            Workspace(store, check=False).update("/log.txt", lambda old: (old or b"") + b"x\n")
        assert raw.read_text("/log.txt") == "one\n"


class RetriedWrites(RecordingStore):
    """Does each write, then refuses it as its retry would be refused: a client that retried
    a write whose answer was lost (botocore retries a PUT) finds the write's own result
    there, and the condition fails (``If-None-Match``: it exists; ``If-Match``: it changed)."""

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        super().write(path, data, create_only=create_only, if_version=if_version)
        if create_only:
            raise PathExistsError(f"{path}: already exists", path=path)
        if if_version is not None:
            raise ConflictError(f"{path} changed since it was read", path=path)


def test_an_update_whose_retried_write_was_refused_is_done_once() -> None:
    # the refusal read as another writer's change: the change was applied again on the
    # update's own write, and each line was appended twice (a conversation log's turn)
    raw = Workspace("memory://guard-retried")
    workspace = Workspace(RetriedWrites(raw.store), check=False)
    for line in (b"one\n", b"two\n"):  # a new file (create-only), then an existing one
        info = workspace.update("/log.txt", lambda old, line=line: (old or b"") + line)
        assert info.size == raw.info("/log.txt").size
    assert raw.read_text("/log.txt") == "one\ntwo\n"


_fresh = itertools.count()


@settings(max_examples=60, deadline=None)
@given(
    old=st.none() | st.binary(max_size=40),
    new=st.binary(min_size=1, max_size=40),
    keep=st.integers(0, 40),
)
def test_an_update_torn_mid_write_leaves_what_was_there(
    old: bytes | None, new: bytes, keep: int
) -> None:
    # a store without atomic writes cut off mid-way: the file held a prefix of the new
    # content, which no later update could parse (a workflow's state file stayed
    # unreadable, its run could not be resumed); only memory put its document back
    raw = Workspace(f"memory://guard-torn-{next(_fresh)}")
    if old is not None:
        raw.write_bytes("/state.json", old)
    store = FaultyStore(raw.store)
    store.add(Fault(method="write", kind="torn_write", keep=min(keep, len(new) - 1)))
    workspace = Workspace(store, check=False)
    if new == old:
        workspace.update("/state.json", lambda _: new)  # nothing to write: nothing fails
    else:
        with pytest.raises(BackendError):
            workspace.update("/state.json", lambda _: new)
    assert (raw.read_bytes("/state.json") if raw.exists("/state.json") else None) == old
    workspace.update("/state.json", lambda there: new if there == old else b"changed twice")
    assert raw.read_bytes("/state.json") == new


@settings(max_examples=60, deadline=None)
@given(data=st.binary(min_size=1, max_size=40), keep=st.integers(0, 40), lost=st.booleans())
def test_a_create_only_write_is_there_whole_or_not_at_all(
    data: bytes, keep: int, lost: bool
) -> None:
    # torn, its part stayed for good and took the name (an offload, a transcript segment
    # written under the next name, the torn one left beside it); its answer lost, the
    # write-once file was reported as failed though it was written
    raw = Workspace(f"memory://guard-once-{next(_fresh)}")
    store = FaultyStore(raw.store)
    kind = "lost_response" if lost else "torn_write"
    keep_at = None if lost else min(keep, len(data) - 1)
    store.add(Fault(method="write", kind=kind, keep=keep_at))  # type: ignore[arg-type]
    workspace = Workspace(store, check=False)
    if lost:
        assert workspace.write_bytes("/once.bin", data, create_only=True).size == len(data)
        assert raw.read_bytes("/once.bin") == data
    else:
        with pytest.raises(BackendError):
            workspace.write_bytes("/once.bin", data, create_only=True)
        assert not raw.exists("/once.bin")
        workspace.write_bytes("/once.bin", data, create_only=True)  # the name is free
        assert raw.read_bytes("/once.bin") == data
