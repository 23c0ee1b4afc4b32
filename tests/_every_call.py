"""Failing each storage call of an operation in turn: the store and the sweep the layers share.

A sweep first runs an operation on a healthy store to count its calls, then runs it again
once per call with that call failing, each time on a fresh workspace: with an ``OSError``
(the storage failed: the operation goes on or raises a ctxfs error) and with :class:`Killed`
(the process dying at that call: nothing catches it, a fresh process takes over); and each
write and removal once more done, then failed with an ``OSError``, as if its reply was lost
(the caller cannot tell that it happened).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxfs.testing import RecordingStore, StoreCall

_SIDE_EFFECTS = frozenset({"write", "remove"})


class Killed(BaseException):
    """The process dying at this call: not an error anything should catch."""


class FailingAt(RecordingStore):
    """Records every call, and raises ``error`` at the ``at``-th (1-based) if ``at`` is set.

    The failing call is not forwarded (the storage never saw it), unless ``lost``: then a
    write or a removal is done and its reply lost.
    """

    def __init__(
        self,
        inner: Any,
        at: int | None = None,
        error: type[BaseException] = OSError,
        *,
        lost: bool = False,
    ) -> None:
        super().__init__(inner)
        self.at = at
        self.error = error
        self.lost = lost

    def _record(self, method: str, path: str) -> None:
        super()._record(method, path)
        if len(self.calls) == self.at and not (self.lost and method in _SIDE_EFFECTS):
            raise self.error(f"injected at call {self.at}: {method} {path}")

    def _reply_lost(self, method: str, path: str) -> None:
        if self.lost and len(self.calls) == self.at:
            raise self.error(f"reply lost at call {self.at}: {method} {path} (it was done)")

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        super().write(path, data, create_only=create_only, if_version=if_version)
        self._reply_lost("write", path)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        super().remove(path, recursive=recursive)
        self._reply_lost("remove", path)

    def heal(self) -> None:
        """The storage is well again: no call fails from now on."""
        self.at = None


class Fault(tuple[int, type[BaseException], bool]):
    """One failure of a sweep: the call number, the error, and whether the call was done."""

    @property
    def at(self) -> int:
        return self[0]

    @property
    def error(self) -> type[BaseException]:
        return self[1]

    @property
    def lost(self) -> bool:
        return self[2]

    def store(self, inner: Any) -> FailingAt:
        """A store over ``inner`` that fails so."""
        return FailingAt(inner, self.at, self.error, lost=self.lost)

    def __repr__(self) -> str:
        how = "reply lost" if self.lost else self.error.__name__
        return f"call {self.at}, {how}"


def faults(calls: list[StoreCall], *, both: bool = True) -> Iterator[Fault]:
    """Each call of a clean run failed: with an ``OSError`` and killed (both, or the two
    taking turns), and for a write or a removal, its reply lost."""
    for at, call in enumerate(calls, start=1):
        if both or at % 2:
            yield Fault((at, OSError, False))
        if both or not at % 2:
            yield Fault((at, Killed, False))
        if call.method in _SIDE_EFFECTS:
            yield Fault((at, OSError, True))
