"""Every storage call of a memory change failed in turn, on every backend.

``test_memory_every_call.py`` sweeps each operation on a memory filesystem. Here one change
(``forget``) is swept on memory, a local folder and S3 (moto over HTTP), where the
conditional writes differ (a hash under a lock, a flock and a rename, ``If-Match`` and
``If-None-Match``), with every way a call can fail: an ``OSError``, a timeout, the process
dying, a spurious "not found", a write done with its reply lost, a write done and its retry
refused, a write torn mid-way. Afterwards the document is the one before or the one after,
every version parses, and the same change again ends where a run without the fault ends.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

import pytest
from _memory_helpers import FakeTime, fact, update

from ctxfs import ConflictError, PathExistsError, Workspace, WorkspaceError
from ctxfs.memory import LongTermMemory, MemorySettings, fact_id
from ctxfs.memory._document import render_markdown
from tests._every_call import FailingAt, Killed

TEA = "Alice drinks green tea every morning."
RUST = "Alice writes her services in Rust."
_READS = frozenset({"info", "ls", "walk", "open_read", "read_bytes", "read_versioned", "fetch"})


def memory(workspace: Workspace) -> LongTermMemory:
    settings = MemorySettings(debounce_seconds=0)
    return LongTermMemory(workspace, ("alice",), settings=settings, now=FakeTime())


def forget(workspace: Workspace) -> None:
    memory(workspace).forget([fact_id(RUST)])


class Failing(FailingAt):
    """Fails the ``at``-th call the way ``how`` says (when it applies to that call)."""

    def __init__(self, inner: Any, at: int | None, how: str) -> None:
        super().__init__(inner, at)
        self.how = how

    def _here(self) -> bool:
        return len(self.calls) == self.at

    def _record(self, method: str, path: str) -> None:
        super(FailingAt, self)._record(method, path)  # recorded; failed below, or in write
        if not self._here() or self.how in ("lost", "retried", "torn"):
            return
        if self.how == "not found" and method in _READS:
            raise FileNotFoundError(2, "No such file or directory")
        if self.how in ("oserror", "timeout", "killed"):
            raise {"oserror": OSError, "timeout": TimeoutError, "killed": Killed}[self.how](
                f"injected at call {self.at}: {method} {path}"
            )

    def write(self, path: str, data: bytes, **options: Any) -> None:
        self._record("write", path)
        here = self._here()
        if here and self.how == "torn":
            self.inner.write(path, data[: len(data) // 2], **options)
            raise OSError(f"torn at call {self.at}: {path}")
        self.inner.write(path, data, **options)
        if here and self.how == "lost":
            raise OSError(f"reply lost at call {self.at}: {path}")
        if here and self.how == "retried" and options.get("create_only"):
            raise PathExistsError(f"{path}: already exists", path=path)
        if here and self.how == "retried" and options.get("if_version") is not None:
            raise ConflictError(f"{path} changed since it was read", path=path)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        self._record("remove", path)
        self.inner.remove(path, recursive=recursive)
        if self._here() and self.how == "lost":
            raise OSError(f"reply lost at call {self.at}: {path}")


HOW = ("oserror", "timeout", "killed", "not found", "lost", "retried", "torn")


def facts(workspace: Workspace) -> set[str]:
    return {f.content for f in memory(workspace).load().facts}


def whole(workspace: Workspace) -> None:
    """The versions run without a gap, each parses, and the Markdown is the document's."""
    ltm = memory(workspace)
    current = ltm.load()
    assert [d.revision for d in ltm.history()] == list(range(1, current.revision + 1))
    assert workspace.read_text(ltm.file.markdown_path) == render_markdown(current)


@pytest.mark.slow
def test_every_store_call_of_a_forget_may_fail_on_every_backend(
    make_workspace: Callable[[], Workspace], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="ctxfs")

    def prepared() -> Workspace:
        raw = make_workspace()
        memory(raw).apply(update(fact(TEA), fact(RUST)), thread_id="t0")
        return raw

    raw = prepared()
    before = facts(raw)
    store = FailingAt(raw.store)
    forget(Workspace(store, check=False))
    calls, after = store.calls, facts(raw)
    assert after == {TEA} and {"read_versioned", "write"} <= {c.method for c in calls}
    for at, call in enumerate(calls, start=1):
        for how in HOW:
            if how in ("lost", "retried", "torn") and call.method != "write":
                continue
            if how == "not found" and call.method not in _READS:
                continue
            raw = prepared()
            failing = Failing(raw.store, at, how)
            with contextlib.suppress(Killed, WorkspaceError):
                forget(Workspace(failing, check=False))
            failing.at = None
            fault = (at, call, how)
            assert facts(raw) in (before, after), fault
            forget(Workspace(failing, check=False))  # again, the storage well
            assert facts(raw) == after, fault
            whole(raw)
