"""Failing each storage call of an operation in turn: the store and the sweep the layers share.

A sweep first runs an operation on a healthy store to count its calls, then runs it again
once per call with that call failing, each time on a fresh workspace: with an ``OSError``
(the storage failed: the operation goes on or raises a ctxfs error) and with :class:`Killed`
(the process dying at that call: nothing catches it, a fresh process takes over); and each
write and removal once more done, then failed with an ``OSError``, as if its reply was lost
(the caller cannot tell that it happened). ``wide=True`` adds what a real store does besides
failing: a write torn mid-way (half of it written, then the ``OSError``: a store without
atomic writes), a conditional write done and then refused as its retry would be (botocore
retries a PUT whose reply was lost: ``If-None-Match`` finds the object, ``If-Match`` a new
ETag), and a read answered "not found" for a file that is there (a stale listing, a flaky
gateway).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxfs._errors import ConflictError, PathExistsError
from ctxfs.testing import RecordingStore, StoreCall

_SIDE_EFFECTS = frozenset({"write", "remove"})
_READS = frozenset({"info", "ls", "walk", "open_read", "read_bytes", "read_versioned", "fetch"})


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
        how: str = "",
    ) -> None:
        super().__init__(inner)
        self.at = at
        self.error = error
        self.lost = lost or how in ("torn", "retried")
        self.how = how

    def _here(self) -> bool:
        return len(self.calls) == self.at

    def _record(self, method: str, path: str) -> None:
        super()._record(method, path)
        if not self._here() or (self.lost and method in _SIDE_EFFECTS):
            return
        if self.how == "not found":  # a read's answer only (the call run differently)
            if method in _READS:
                raise FileNotFoundError(2, f"injected at call {self.at}: {method} {path}")
            return
        raise self.error(f"injected at call {self.at}: {method} {path}")

    def _reply_lost(self, method: str, path: str) -> None:
        if self.lost and self._here():
            raise self.error(f"reply lost at call {self.at}: {method} {path} (it was done)")

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        if self.how == "torn" and self.at == len(self.calls) + 1:
            super().write(
                path, data[: len(data) // 2], create_only=create_only, if_version=if_version
            )
            raise self.error(f"torn at call {self.at}: write {path}")
        super().write(path, data, create_only=create_only, if_version=if_version)
        if self.how == "retried" and self._here():
            if create_only:
                raise PathExistsError(f"{path}: already exists", path=path)
            if if_version is not None:
                raise ConflictError(f"{path} changed since it was read", path=path)
            return  # a plain PUT retried: done
        self._reply_lost("write", path)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        super().remove(path, recursive=recursive)
        self._reply_lost("remove", path)

    def heal(self) -> None:
        """The storage is well again: no call fails from now on."""
        self.at = None


class Fault(tuple[int, type[BaseException], bool, str]):
    """One failure of a sweep: the call number, the error, whether the call was done, and
    for a ``wide`` sweep's others, how (``torn``, ``retried``, ``not found``)."""

    def __new__(cls, value: tuple[int, type[BaseException], bool] | tuple[Any, ...]) -> Fault:
        return super().__new__(cls, (*value, "")[:4])

    @property
    def at(self) -> int:
        return self[0]

    @property
    def error(self) -> type[BaseException]:
        return self[1]

    @property
    def lost(self) -> bool:
        return self[2]

    @property
    def how(self) -> str:
        return self[3]

    def store(self, inner: Any) -> FailingAt:
        """A store over ``inner`` that fails so."""
        return FailingAt(inner, self.at, self.error, lost=self.lost, how=self.how)

    def __repr__(self) -> str:
        how = self.how or ("reply lost" if self.lost else self.error.__name__)
        return f"call {self.at}, {how}"


def faults(calls: list[StoreCall], *, both: bool = True, wide: bool = False) -> Iterator[Fault]:
    """Each call of a clean run failed: with an ``OSError`` and killed (both, or the two
    taking turns), and for a write or a removal, its reply lost; ``wide``: a write torn and
    refused as retried too, and a read answered "not found"."""
    for at, call in enumerate(calls, start=1):
        if both or at % 2:
            yield Fault((at, OSError, False))
        if both or not at % 2:
            yield Fault((at, Killed, False))
        if call.method in _SIDE_EFFECTS:
            yield Fault((at, OSError, True))
        if wide and call.method == "write":
            yield Fault((at, OSError, True, "torn"))
            yield Fault((at, OSError, True, "retried"))
        if wide and call.method in _READS:
            yield Fault((at, OSError, False, "not found"))
