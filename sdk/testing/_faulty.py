"""A store that fails on a script: to test what a workspace, a tool or an engine does then.

:class:`FaultyStore` wraps any :class:`~ctxfs.backends.Store` and forwards every call, except
the ones a :class:`Fault` picks out: the ``nth`` matching call of a method (counted from when
the fault was added), for ``times`` calls in a row, optionally only on one path or below it.
What happens then depends on the fault's kind:

- ``"error"``: :class:`~ctxfs._errors.BackendError` is raised and the store is not asked
  (a network or server failure).
- ``"not_found"``: the store answers "not there" for something that is there
  (:class:`~ctxfs._errors.PathNotFoundError`; ``walk`` lists nothing, ``fetch`` skips the
  file): a flaky gateway, a stale listing.
- ``"torn_write"``: only the first ``keep`` bytes are written, then ``BackendError`` (a
  backend without atomic writes, cut off mid-way).
- ``"lost_response"``: the write (or delete) is done, then ``BackendError``, as if its answer
  was lost on the way back: the caller cannot tell it happened.

Everything is deterministic; a random schedule is a list of faults drawn with your own seed.

Example:
    >>> from ctxfs import BackendError, Workspace
    >>> from ctxfs.testing import Fault, FaultyStore
    >>> store = FaultyStore(Workspace("memory://faulty-doc").store)
    >>> workspace = Workspace(store)
    >>> store.add(Fault(method="write", kind="lost_response"))
    >>> try:
    ...     workspace.write_text("/a.txt", "hello")
    ... except BackendError as exc:
    ...     print(exc)
    /a.txt: storage failed (injected lost_response fault on write call 1)
    >>> workspace.read_text("/a.txt")  # the write was done all the same
    'hello'
    >>> [hit.method for hit in store.fired]
    ['write']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import BinaryIO, Final, Literal, NamedTuple

from ctxfs._errors import BackendError, PathNotFoundError
from ctxfs._workspace._results import FileInfo
from ctxfs.backends import Store
from ctxfs.sandbox import is_within

__all__ = ["Fault", "FaultKind", "FaultyStore", "FiredFault"]

FaultKind = Literal["error", "not_found", "torn_write", "lost_response"]

_METHODS: Final = (
    "real_path",
    "info",
    "ls",
    "walk",
    "open_read",
    "read_bytes",
    "read_versioned",
    "fetch",
    "write",
    "remove",
)
_READS: Final = frozenset({"open_read", "read_bytes", "read_versioned", "fetch"})
_ALLOWED: Final[dict[str, frozenset[str]]] = {
    "error": frozenset(_METHODS),
    "not_found": frozenset(
        {"info", "ls", "walk", "open_read", "read_bytes", "read_versioned", "fetch", "remove"}
    ),
    "torn_write": frozenset({"write"}),
    "lost_response": frozenset({"write", "remove"}),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One scripted failure of a :class:`FaultyStore`.

    Attributes:
        method: The :class:`~ctxfs.backends.Store` method it hits (``"info"``, ``"ls"``,
            ``"walk"``, ``"open_read"``, ``"read_bytes"``, ``"read_versioned"``,
            ``"fetch"``, ``"write"``, ``"remove"``, ``"real_path"``), or ``"read"`` for any
            of ``open_read``, ``read_bytes``, ``read_versioned`` and ``fetch``. ``fetch``
            counts one call per file it returns.
        kind: What happens (see the module docstring).
        nth: The first matching call it hits, 1-based, counted from when it was added.
        times: How many matching calls in a row it hits; ``None`` for all from ``nth`` on.
        path: Only calls on this virtual path or below it; ``None`` for any path.
        keep: For ``"torn_write"``: how many bytes are written before the failure; ``None``
            for half of them.

    Raises:
        ValueError: The kind does not apply to the method, or a number is out of range.
    """

    method: str
    kind: FaultKind = "error"
    nth: int = 1
    times: int | None = 1
    path: str | None = None
    keep: int | None = None

    def __post_init__(self) -> None:
        methods = _READS if self.method == "read" else {self.method}
        if not methods <= set(_METHODS):
            raise ValueError(f"unknown Store method {self.method!r}; one of {_METHODS} or 'read'")
        if self.kind not in _ALLOWED:
            raise ValueError(f"unknown fault kind {self.kind!r}; one of {sorted(_ALLOWED)}")
        if not methods <= _ALLOWED[self.kind]:
            allowed = ", ".join(sorted(_ALLOWED[self.kind]))
            raise ValueError(f"a {self.kind!r} fault applies to {allowed}, not {self.method!r}")
        if self.nth < 1 or (self.times is not None and self.times < 1):
            raise ValueError("nth and times must be at least 1")
        if self.keep is not None and (self.kind != "torn_write" or self.keep < 0):
            raise ValueError("keep is a byte count (0 or more) for 'torn_write' faults only")

    def hits(self, method: str) -> bool:
        """Whether calls of ``method`` count for this fault."""
        return method in _READS if self.method == "read" else method == self.method


class FiredFault(NamedTuple):
    """A fault that fired.

    Attributes:
        fault: The fault.
        method: The method called.
        path: The virtual path it was called with.
        call: Which matching call it was (1-based).
    """

    fault: Fault
    method: str
    path: str
    call: int


class FaultyStore:
    """Wraps a :class:`~ctxfs.backends.Store` and fails the calls its faults pick out.

    Open a :class:`~ctxfs.Workspace` on it, then :meth:`add` faults: the workspace's own
    check when it is opened (one ``info`` call on ``/``) is then not counted.

    Args:
        inner: The store that does the work.
        faults: Faults active from the start.

    Attributes:
        inner: The wrapped store.
        fired: Every fault that fired, oldest first.
    """

    def __init__(self, inner: Store, faults: Iterable[Fault] = ()) -> None:
        self.inner = inner
        self.fired: list[FiredFault] = []
        self._faults: list[tuple[Fault, list[int]]] = []
        for fault in faults:
            self.add(fault)

    def add(self, fault: Fault) -> None:
        """Activate ``fault``; its calls are counted from now."""
        self._faults.append((fault, [0]))

    def heal(self) -> None:
        """Remove every fault: from now on each call is forwarded as it is."""
        self._faults.clear()

    @property
    def faults(self) -> tuple[Fault, ...]:
        """The active faults, in the order they were added."""
        return tuple(fault for fault, _ in self._faults)

    def _fault_for(self, method: str, path: str) -> Fault | None:
        """Count this call against every matching fault; the first that fires, if any."""
        fired: Fault | None = None
        for fault, counter in self._faults:
            if not fault.hits(method) or (
                fault.path is not None and not is_within(path, fault.path)
            ):
                continue
            counter[0] += 1
            call = counter[0]
            last = None if fault.times is None else fault.nth + fault.times - 1
            if fired is None and call >= fault.nth and (last is None or call <= last):
                fired = fault
                self.fired.append(FiredFault(fault, method, path, call))
        return fired

    def _error(self, method: str, path: str, fault: Fault) -> BackendError:
        call = self.fired[-1].call
        return BackendError(
            f"{path}: storage failed (injected {fault.kind} fault on {method} call {call})",
            path=path,
        )

    def _not_found(self, path: str) -> PathNotFoundError:
        return PathNotFoundError(f"{path}: no such file or directory", path=path)

    def _check(self, method: str, path: str) -> Fault | None:
        """Raise for an ``error`` or ``not_found`` fault; return any other that fired."""
        fault = self._fault_for(method, path)
        if fault is None:
            return None
        if fault.kind == "error":
            raise self._error(method, path, fault)
        if fault.kind == "not_found":
            raise self._not_found(path)
        return fault

    # -- the Store protocol -----------------------------------------------------------------

    @property
    def url(self) -> str:
        """The inner store's display location."""
        return self.inner.url

    def __repr__(self) -> str:
        return f"FaultyStore({self.inner!r})"

    def local_path(self, path: str) -> str | None:
        """Forwarded (never fails)."""
        return self.inner.local_path(path)

    def real_path(self, path: str) -> str:
        """Forwarded unless an ``error`` fault fires."""
        self._check("real_path", path)
        return self.inner.real_path(path)

    def info(self, path: str) -> FileInfo:
        """Forwarded unless a fault fires."""
        self._check("info", path)
        return self.inner.info(path)

    def ls(self, path: str) -> list[FileInfo]:
        """Forwarded unless a fault fires."""
        self._check("ls", path)
        return self.inner.ls(path)

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Forwarded unless a fault fires (``not_found``: nothing is listed)."""
        fault = self._fault_for("walk", path)
        if fault is not None and fault.kind == "error":
            raise self._error("walk", path, fault)
        if fault is not None:
            return iter(())
        return self.inner.walk(path)

    def open_read(self, path: str) -> AbstractContextManager[BinaryIO]:
        """Forwarded unless a fault fires."""
        self._check("open_read", path)
        return self.inner.open_read(path)

    def read_bytes(self, path: str) -> bytes:
        """Forwarded unless a fault fires."""
        self._check("read_bytes", path)
        return self.inner.read_bytes(path)

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        """Forwarded; each file returned counts as one call (``not_found``: it is skipped)."""
        for info, data in self.inner.fetch(files):
            fault = self._fault_for("fetch", info.path)
            if fault is not None and fault.kind == "error":
                raise self._error("fetch", info.path, fault)
            if fault is None:
                yield info, data

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """Forwarded unless a fault fires."""
        self._check("read_versioned", path)
        return self.inner.read_versioned(path)

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        """Forwarded unless a fault fires: nothing, part, or all of it is written."""
        fault = self._check("write", path)
        if fault is not None and fault.kind == "torn_write":
            keep = len(data) // 2 if fault.keep is None else min(fault.keep, len(data))
            data = data[:keep]
        self.inner.write(path, data, create_only=create_only, if_version=if_version)
        if fault is not None:
            raise self._error("write", path, fault)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Forwarded unless a fault fires (``lost_response``: removed, then an error)."""
        fault = self._check("remove", path)
        self.inner.remove(path, recursive=recursive)
        if fault is not None:
            raise self._error("remove", path, fault)
