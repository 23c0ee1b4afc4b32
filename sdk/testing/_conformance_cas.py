"""The compare-and-swap part of the workspace conformance suite (see
:mod:`ctxfs.testing.conformance`, whose :class:`~ctxfs.testing.conformance.WorkspaceConformance`
inherits these tests).

What every store must do with a version: :meth:`~ctxfs.backends.Store.read_versioned` gives
the content and a token for exactly that content, and a write given that token as
``if_version`` happens only if the stored file still has it. Another writer is simulated
deterministically: :class:`Interloper` wraps the store under test and, right after a chosen
read, writes through the same store as a second process would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import BinaryIO, Protocol

import pytest

from ctxfs._errors import (
    ConflictError,
    EditError,
    PathNotFoundError,
    ReadOnlyPathError,
)
from ctxfs._workspace._results import FileInfo
from ctxfs._workspace._workspace import Workspace
from ctxfs.backends import Store
from ctxfs.sandbox import Limits

__all__ = ["ConditionalWriteConformance", "Interloper"]


class _Factory(Protocol):
    def __call__(
        self, *, read_only: Iterable[str] = ..., limits: Limits | None = ...
    ) -> Workspace: ...


class Interloper:
    """A store that lets "another writer" act right after some of its reads.

    Every call is forwarded to ``inner``. After each of the first ``times`` calls of
    ``read_versioned`` (or of ``info`` on a missing file, when ``on_missing``), ``act`` runs
    with the inner store: what another process could do between a read and the write that
    follows it.

    Args:
        inner: The store under test.
        act: The other writer's action.
        times: How many reads it follows.
        on_missing: Also act after an ``info`` that found nothing (a racing create).
    """

    def __init__(
        self,
        inner: Store,
        act: Callable[[Store], None],
        *,
        times: int = 1,
        on_missing: bool = False,
    ) -> None:
        self.inner = inner
        self.acted = 0
        self._act = act
        self._times = times
        self._on_missing = on_missing

    def _interlope(self) -> None:
        if self.acted < self._times:
            self.acted += 1
            self._act(self.inner)

    @property
    def url(self) -> str:
        """The inner store's."""
        return self.inner.url

    def local_path(self, path: str) -> str | None:
        """Forwarded."""
        return self.inner.local_path(path)

    def real_path(self, path: str) -> str:
        """Forwarded."""
        return self.inner.real_path(path)

    def info(self, path: str) -> FileInfo:
        """Forwarded; a miss may be followed by the other writer's action."""
        try:
            return self.inner.info(path)
        except PathNotFoundError:
            if self._on_missing and path != "/":
                self._interlope()
            raise

    def ls(self, path: str) -> list[FileInfo]:
        """Forwarded."""
        return self.inner.ls(path)

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Forwarded."""
        return self.inner.walk(path)

    def open_read(self, path: str) -> AbstractContextManager[BinaryIO]:
        """Forwarded."""
        return self.inner.open_read(path)

    def read_bytes(self, path: str) -> bytes:
        """Forwarded."""
        return self.inner.read_bytes(path)

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """Forwarded, then maybe the other writer's action."""
        found = self.inner.read_versioned(path)
        self._interlope()
        return found

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        """Forwarded."""
        return self.inner.fetch(files)

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        """Forwarded."""
        self.inner.write(path, data, create_only=create_only, if_version=if_version)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Forwarded."""
        self.inner.remove(path, recursive=recursive)


def _append(line: bytes) -> Callable[[bytes | None], bytes]:
    def change(data: bytes | None) -> bytes:
        return (data or b"") + line

    return change


def _other_writer_appends(path: str, line: bytes) -> Callable[[Store], None]:
    def act(store: Store) -> None:
        try:
            current = store.read_bytes(path)
        except PathNotFoundError:
            current = b""
        store.write(path, current + line)

    return act


class ConditionalWriteConformance:
    """Compare-and-swap tests; mixed into
    :class:`~ctxfs.testing.conformance.WorkspaceConformance`, which supplies the
    ``make_workspace`` and ``workspace`` fixtures."""

    def test_read_versioned_gives_the_content_and_a_version_of_exactly_it(
        self, workspace: Workspace
    ) -> None:
        workspace.write_bytes("/v.bin", b"\x00first\xff")
        data, version = workspace.read_versioned("/v.bin")
        assert data == b"\x00first\xff"
        assert isinstance(version, str) and version
        assert workspace.read_versioned("v.bin") == (data, version)  # stable while unchanged
        workspace.write_bytes("/v.bin", b"second")
        data2, version2 = workspace.read_versioned("/v.bin")
        assert (data2, version2 != version) == (b"second", True)
        with pytest.raises(PathNotFoundError, match=r"^/none\.txt: no such file or directory$"):
            workspace.read_versioned("/none.txt")
        workspace.write_text("/dir/f.txt", "x")
        with pytest.raises(IsADirectoryError):
            workspace.read_versioned("/dir")

    def test_a_write_with_the_current_version_happens(self, workspace: Workspace) -> None:
        workspace.write_text("/f.txt", "one")
        _, version = workspace.read_versioned("/f.txt")
        info = workspace.write_text("/f.txt", "two", if_version=version)
        assert info == FileInfo("/f.txt", "file", 3)
        assert workspace.read_text("/f.txt") == "two"
        # The version of the new content works for the next write, as a chain.
        _, after = workspace.read_versioned("/f.txt")
        workspace.write_bytes("/f.txt", b"three", if_version=after)
        assert workspace.read_text("/f.txt") == "three"

    def test_a_write_with_a_stale_version_conflicts_and_writes_nothing(
        self, workspace: Workspace
    ) -> None:
        workspace.write_text("/shared.txt", "base\n")
        _, first = workspace.read_versioned("/shared.txt")
        _, second = workspace.read_versioned("/shared.txt")
        workspace.write_text("/shared.txt", "base\nfrom A\n", if_version=first)
        with pytest.raises(ConflictError, match=r"^/shared\.txt changed since it was read"):
            workspace.write_text("/shared.txt", "base\nfrom B\n", if_version=second)
        assert workspace.read_text("/shared.txt") == "base\nfrom A\n"
        # The store refuses on its own too, for a writer that raced the Workspace's checks.
        with pytest.raises(ConflictError):
            workspace.store.write("/shared.txt", b"from the store", if_version=second)
        assert workspace.read_text("/shared.txt") == "base\nfrom A\n"

    def test_a_write_onto_a_file_deleted_since_it_was_read_conflicts(
        self, workspace: Workspace
    ) -> None:
        workspace.write_text("/gone.txt", "x")
        _, version = workspace.read_versioned("/gone.txt")
        workspace.rm("/gone.txt")
        with pytest.raises(ConflictError, match=r"^/gone\.txt was deleted since it was read"):
            workspace.write_text("/gone.txt", "y", if_version=version)
        with pytest.raises(ConflictError, match=r"was deleted since it was read"):
            workspace.store.write("/gone.txt", b"y", if_version=version)
        assert not workspace.exists("/gone.txt")

    def test_create_only_and_if_version_together_are_misuse(self, workspace: Workspace) -> None:
        workspace.write_text("/f.txt", "x")
        _, version = workspace.read_versioned("/f.txt")
        with pytest.raises(ValueError, match="exclude each other"):
            workspace.write_text("/f.txt", "y", create_only=True, if_version=version)
        with pytest.raises(ValueError, match="exclude each other"):
            workspace.store.write("/f.txt", b"y", create_only=True, if_version=version)
        assert workspace.read_text("/f.txt") == "x"

    def test_read_only_areas_refuse_conditional_writes_and_updates(
        self, workspace: Workspace
    ) -> None:
        workspace.write_text("/tool_results/r.txt", "kept")
        _, version = workspace.read_versioned("/tool_results/r.txt")
        view = workspace.view(read_only=["/tool_results"])
        assert view.read_versioned("/tool_results/r.txt") == (b"kept", version)
        with pytest.raises(ReadOnlyPathError):
            view.write_text("/tool_results/r.txt", "x", if_version=version)
        with pytest.raises(ReadOnlyPathError):
            view.update("/tool_results/r.txt", _append(b"x"))
        assert workspace.read_text("/tool_results/r.txt") == "kept"

    def test_update_creates_a_file_then_changes_it(self, workspace: Workspace) -> None:
        seen: list[bytes | None] = []

        def change(data: bytes | None) -> bytes:
            seen.append(data)
            return (data or b"") + b"line\n"

        assert workspace.update("/log/new.txt", change) == FileInfo("/log/new.txt", "file", 5)
        assert workspace.update("/log/new.txt", change).size == 10
        assert seen == [None, b"line\n"]
        assert workspace.read_bytes("/log/new.txt") == b"line\nline\n"

    def test_update_redoes_its_change_on_what_another_writer_wrote(
        self, make_workspace: _Factory
    ) -> None:
        full = make_workspace()
        full.write_bytes("/log.txt", b"start\n")
        other = _other_writer_appends("/log.txt", b"other\n")
        racing = Interloper(full.store, other, times=2)
        workspace = Workspace(racing)
        calls: list[bytes | None] = []

        def change(data: bytes | None) -> bytes:
            calls.append(data)
            return (data or b"") + b"mine\n"

        workspace.update("/log.txt", change)

        # Two reads were followed by another write; the third read's change was written.
        assert racing.acted == 2
        assert calls == [b"start\n", b"start\nother\n", b"start\nother\nother\n"]
        assert full.read_bytes("/log.txt") == b"start\nother\nother\nmine\n"

    def test_update_of_a_file_another_writer_created_meanwhile_keeps_both(
        self, make_workspace: _Factory
    ) -> None:
        full = make_workspace()
        racing = Interloper(
            full.store, _other_writer_appends("/new.txt", b"theirs\n"), on_missing=True
        )
        Workspace(racing).update("/new.txt", _append(b"mine\n"))
        assert racing.acted == 1
        assert full.read_bytes("/new.txt") == b"theirs\nmine\n"

    def test_update_gives_up_after_its_attempts_with_nothing_written(
        self, make_workspace: _Factory
    ) -> None:
        full = make_workspace()
        full.write_bytes("/busy.txt", b"")
        racing = Interloper(full.store, _other_writer_appends("/busy.txt", b"x"), times=100)
        with pytest.raises(ConflictError, match=r"^/busy\.txt: the file changed since it was"):
            Workspace(racing).update("/busy.txt", _append(b"mine"), attempts=3)
        assert full.read_bytes("/busy.txt") == b"xxx"
        with pytest.raises(ValueError, match="attempts must be >= 1"):
            full.update("/busy.txt", _append(b"mine"), attempts=0)

    def test_update_writes_nothing_when_the_change_fails_or_changes_nothing(
        self, workspace: Workspace
    ) -> None:
        workspace.write_text("/f.txt", "same")
        _, version = workspace.read_versioned("/f.txt")

        def refuse(data: bytes | None) -> bytes:
            raise EditError("no", path="/f.txt")

        with pytest.raises(EditError):
            workspace.update("/f.txt", refuse)
        assert workspace.update("/f.txt", lambda data: data or b"") == FileInfo("/f.txt", "file", 4)
        assert workspace.read_versioned("/f.txt") == (b"same", version)

    def test_edit_applies_to_the_content_it_read_never_over_another_writers(
        self, make_workspace: _Factory
    ) -> None:
        full = make_workspace()
        full.write_text("/code.py", "a = 1\nb = 1\n")

        def other(store: Store) -> None:
            text = store.read_bytes("/code.py").replace(b"b = 1", b"b = 2")
            store.write("/code.py", text)

        racing = Interloper(full.store, other)
        result = Workspace(racing).edit("/code.py", "a = 1", "a = 3")
        assert (result.replacements, racing.acted) == (1, 1)
        assert full.read_text("/code.py") == "a = 3\nb = 2\n"

    def test_an_edit_another_writer_made_impossible_fails_and_writes_nothing(
        self, make_workspace: _Factory
    ) -> None:
        full = make_workspace()
        full.write_text("/code.py", "a = 1\n")

        def other(store: Store) -> None:
            store.write("/code.py", b"a = 2\n")

        with pytest.raises(EditError, match="old_string was not found"):
            Workspace(Interloper(full.store, other)).edit("/code.py", "a = 1", "a = 3")
        assert full.read_text("/code.py") == "a = 2\n"

    def test_an_edit_racing_writers_at_every_attempt_conflicts(
        self, make_workspace: _Factory
    ) -> None:
        full = make_workspace()
        full.write_text("/hot.txt", "x\n")
        racing = Interloper(full.store, _other_writer_appends("/hot.txt", b"y\n"), times=100)
        with pytest.raises(ConflictError, match=r"the file changed since it was read"):
            Workspace(racing).edit("/hot.txt", "x", "z", attempts=2)
        assert full.read_text("/hot.txt") == "x\ny\ny\n"
