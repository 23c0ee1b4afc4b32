"""Glob and grep over a store: which files to look at, and the time bounds of the call.

Two bounds hold for every call: ``limits.regex_timeout`` seconds of matching (a
:class:`~ctxfs.sandbox.TimeBudget` the matchers spend), and ``limits.search_timeout`` seconds
of wall time in all, checked while the store lists, between the files it reads, and handed to
the matchers as a deadline too.

The matchers are pure (:mod:`ctxfs._workspace._glob`, :mod:`ctxfs._workspace._grep`); this
module drives them over what a :class:`~ctxfs.backends.Store` lists and fetches. It takes
values (the store, the base path's :class:`~ctxfs.FileInfo`, the limits), never the
workspace, which resolves and confines the paths before it calls here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from ctxfs._errors import SearchTimeoutError
from ctxfs._workspace._glob import GlobMatcher, compile_glob
from ctxfs._workspace._grep import (
    GrepOptions,
    compile_pattern,
    prefilter,
    search_file,
    timeout_error,
)
from ctxfs._workspace._quote import quote
from ctxfs._workspace._results import GlobResult, GrepResult
from ctxfs.backends import FileInfo, LocalStore, Store
from ctxfs.sandbox import Limits, TimeBudget, relative_to

__all__ = ["glob_store", "grep_store"]


def glob_store(
    store: Store, base: FileInfo, pattern: str, *, cap: int, limits: Limits
) -> GlobResult:
    """The files under ``base`` whose path relative to it matches ``pattern``, sorted.

    Raises:
        PatternError: The pattern is malformed.
        SearchTimeoutError: Matching ran past ``limits.regex_timeout``, or the call past
            ``limits.search_timeout``.
    """
    wall = _Wall("glob", pattern, limits)
    matcher = compile_glob(pattern)
    files = _files(store, base, wall)
    budget = TimeBudget(limits.regex_timeout)
    found = [info.path for info in _select(files, base.path, matcher, pattern, budget, wall)]
    return GlobResult(tuple(found[:cap]), len(found) > cap, len(found))


def grep_store(
    store: Store, base: FileInfo, options: GrepOptions, *, glob: str | None, limits: Limits
) -> GrepResult:
    """Search the text files under ``base`` (see :meth:`ctxfs.Workspace.grep`).

    Raises:
        PatternError: The pattern or glob is invalid.
        SearchTimeoutError: The search ran past ``options.timeout``, or the call past
            ``limits.search_timeout``.
    """
    wall = _Wall("grep", options.pattern, limits)
    compiled = compile_pattern(options)
    matcher = compile_glob(glob) if glob else None
    files = _files(store, base, wall, sizes=False)
    # One budget for the whole call: glob filtering and every file's search share it.
    budget = TimeBudget(options.timeout)
    if matcher is not None:
        files = list(_select(files, base.path, matcher, glob or "", budget, wall))
    else:
        files = _visible(files, base.path)
    too_large: list[str] = []
    matched = []
    binary: list[str] = []
    may_match = prefilter(options)
    for info, data in _contents(store, files, limits.max_grep_file_bytes):
        wall.check(info.path)
        if data is None:
            too_large.append(info.path)
            continue
        # Most files are settled by two byte scans, without decoding and without the
        # matcher's budget (they are linear, and outside every regex call). find, not `in`:
        # `in` first tries the operand as a byte value and pays for a TypeError each time.
        if data.find(b"\x00") >= 0:
            binary.append(info.path)
            continue
        if not may_match(data):
            continue
        if budget.left <= 0:
            raise timeout_error(info.path, options)
        with budget.spend() as deadline:
            try:
                result = search_file(
                    info.path,
                    data,
                    compiled,
                    options,
                    deadline=min(deadline, wall.deadline),
                    screened=True,
                )
            except SearchTimeoutError:
                wall.check(info.path)  # say which bound it was
                raise
        if result.matched:
            matched.append(result)
    return GrepResult(
        output_mode=options.output_mode,
        files=tuple(matched),
        searched=len(files) - len(too_large),
        skipped_binary=tuple(binary),
        skipped_large=tuple(too_large),
    )


def _contents(
    store: Store, files: list[FileInfo], max_bytes: int
) -> Iterator[tuple[FileInfo, bytes | None]]:
    """Each file's content, or ``None`` for a file over ``max_bytes`` (not read)."""
    if isinstance(store, LocalStore):
        # Listed without sizes (see _files): the store learns each as it opens the file.
        yield from store.fetch_within(files, max_bytes)
        return
    over = [info for info in files if info.size is not None and info.size > max_bytes]
    skipped = {info.path for info in over}
    yield from ((info, None) for info in over)
    yield from store.fetch([info for info in files if info.path not in skipped])


def _visible(files: list[FileInfo], base: str) -> list[FileInfo]:
    """The files no segment of whose path below ``base`` starts with a dot (``base`` itself,
    a single file searched, is kept)."""
    # below "/a", "/a/x/.y" is hidden: look for "/." from the "/" that ends the base
    start = 0 if base == "/" else len(base)
    return [f for f in files if f.path == base or "/." not in f.path[start:]]


class _Wall:
    """The wall-time bound of one call (``limits.search_timeout``), from its start."""

    def __init__(self, what: str, pattern: str, limits: Limits) -> None:
        self.seconds = limits.search_timeout
        self.deadline = time.monotonic() + self.seconds
        self._what = what
        self._pattern = pattern

    def check(self, path: str) -> None:
        """Raise :class:`~ctxfs._errors.SearchTimeoutError` once the deadline has passed."""
        if time.monotonic() < self.deadline:
            return
        raise SearchTimeoutError(
            f"{self._what} {quote(self._pattern)} ran past its {self.seconds:g} s limit "
            f"(listing, reading and matching, at {path}); search a narrower path or glob",
            path=path,
        )


def _files(store: Store, base: FileInfo, wall: _Wall, *, sizes: bool = True) -> list[FileInfo]:
    """Every file under ``base`` (a folder or a single file), sorted.

    With ``sizes=False``, on local disk the files are listed without their sizes: a size
    costs a call per file there (a sixth of a grep over many small files), and a search,
    which opens every file, learns it then (see :func:`_contents`).
    """
    if not base.is_dir:
        return [base]
    found = []
    if not sizes and isinstance(store, LocalStore):
        listing = store.walk(base.path, sizes=False)
    else:
        listing = store.walk(base.path)
    for info in listing:
        wall.check(info.path)
        found.append(info)
    return sorted(found, key=lambda f: f.path)


def _select(
    files: Iterable[FileInfo],
    base: str,
    matcher: GlobMatcher,
    pattern: str,
    budget: TimeBudget,
    wall: _Wall,
) -> Iterator[FileInfo]:
    """The files whose path relative to ``base`` matches, within the time bounds."""
    with budget.spend() as deadline:
        for info in files:
            try:
                matched = matcher.matches(
                    relative_to(info.path, base) or info.name, min(deadline, wall.deadline)
                )
            except TimeoutError:
                wall.check(info.path)
                raise SearchTimeoutError(
                    f"matching the glob {quote(pattern)} ran past its "
                    f"{budget.seconds:g} s time limit; use a pattern with fewer '{{...}}' "
                    "alternatives, or a narrower path",
                    path=base,
                ) from None
            if matched:
                yield info
