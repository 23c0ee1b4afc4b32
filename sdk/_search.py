"""glob and grep over a workspace: list the files, fetch them, run the pure engines.

The matching itself is pure (:mod:`ctxfs._glob`, :mod:`ctxfs._grep`), so results are identical
on every backend; only listing and fetching differ. On object stores the files are fetched
with fsspec's batched ``cat``, which issues the reads concurrently rather than one by one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from ctxfs._glob import compile_glob
from ctxfs._grep import GrepOptions, compile_pattern, search_file
from ctxfs.backends import translate_errors
from ctxfs.backends.errors import translate_error
from ctxfs.results import FileInfo, GlobResult, GrepResult
from ctxfs.sandbox import relative_to

if TYPE_CHECKING:
    from ctxfs.workspace import Workspace

__all__ = ["glob_files", "grep_files"]

FETCH_BATCH = 64
"""Files fetched per round trip batch (bounds memory; reads within a batch are concurrent)."""


def _hidden(relpath: str) -> bool:
    return any(part.startswith(".") for part in relpath.split("/"))


def glob_files(ws: Workspace, pattern: str, path: str, limit: int | None) -> GlobResult:
    """Files under ``path`` whose path relative to it matches ``pattern``, sorted."""
    matcher = compile_glob(pattern)
    base = ws.resolve(path)
    cap = limit if limit is not None else ws.limits.max_glob_results
    found: list[str] = []
    for info in ws._walk_files(base):
        rel = relative_to(info.path, base) or info.name
        if matcher.matches(rel):
            found.append(info.path)
    return GlobResult(tuple(found[:cap]), len(found) > cap)


def _fetch(ws: Workspace, files: Sequence[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
    """The bytes of each file, in order; files that vanished meanwhile are skipped."""
    if ws.is_local:
        for info in files:
            try:
                with open(ws._host(info.path), "rb") as handle:
                    yield info, handle.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise translate_error(exc, info.path) from exc
        return
    for start in range(0, len(files), FETCH_BATCH):
        batch = files[start : start + FETCH_BATCH]
        hosts = [ws._host(info.path) for info in batch]
        with translate_errors(batch[0].path):
            contents = ws.fs.cat(hosts, on_error="return")
        for info, host in zip(batch, hosts, strict=True):
            data = contents.get(host)
            if isinstance(data, FileNotFoundError):
                continue
            if isinstance(data, BaseException):
                raise translate_error(data, info.path) from data
            if data is not None:
                yield info, bytes(data)


def grep_files(ws: Workspace, options: GrepOptions, path: str, glob: str | None) -> GrepResult:
    """Search every text file under ``path`` (see :meth:`Workspace.grep`)."""
    compiled = compile_pattern(options)
    matcher = compile_glob(glob) if glob else None
    base = ws.resolve(path)
    candidates = ws._walk_files(base)
    selected: list[FileInfo] = []
    too_large: list[str] = []
    for info in candidates:
        rel = relative_to(info.path, base) or info.name
        if matcher is not None:
            if not matcher.matches(rel):
                continue
        elif _hidden(rel) and info.path != base:
            continue
        if info.size is not None and info.size > ws.limits.max_grep_file_bytes:
            too_large.append(info.path)
            continue
        selected.append(info)
    matched = []
    binary: list[str] = []
    for info, data in _fetch(ws, selected):
        result = search_file(info.path, data, compiled, options)
        if result.binary:
            binary.append(info.path)
        elif result.matched:
            matched.append(result)
    return GrepResult(
        output_mode=options.output_mode,
        files=tuple(matched),
        searched=len(selected),
        skipped_binary=tuple(binary),
        skipped_large=tuple(too_large),
    )
