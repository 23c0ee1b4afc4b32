"""A thread's paged transcript index: a cache of the segments' records, never the only copy.

- **Append-only.** Entries go into the head (``index.json``); when it holds
  :data:`PAGE_SIZE` of them they move, once and for all, into the next full page
  (``index-0001.json``, ...; written create-only, never rewritten). So a commit rewrites at
  most one page's worth of entries, however long the thread: its cost stays flat.
- **Compare-and-swap.** The head is only ever rewritten on the version that was read
  (:meth:`PagedIndex.store_head`); a writer that loses the race reads it again.
- **Rebuilt, never trusted blindly.** A missing, torn or malformed head or page, or entries
  out of order or of the wrong types, make :meth:`PagedIndex.load` raise
  :class:`Unreadable`; :meth:`PagedIndex.rebuild` then lists the segments' records (a torn
  record is described again from its two verified files) and writes the index anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxfs._archive._branches import with_parents
from ctxfs._archive._codec import decode_jsonl, json_bytes, markdown_range, sha
from ctxfs._archive._segment import ArchiveSegment, ThreadFolder, segment_number
from ctxfs._errors import (
    ArchiveError,
    ConflictError,
    IsADirectoryPathError,
    PathExistsError,
    PathNotFoundError,
    WorkspaceError,
)
from ctxfs._json import NewerFormatError, check_format_version, loads_bounded

__all__ = ["INDEX_VERSION", "PAGE_SIZE", "Head", "PagedIndex", "Unreadable"]

PAGE_SIZE = 32
"""Entries per full index page; the head holds fewer."""

_INDEX_FORMAT = "ctxfs-transcript-index"
# 1 also stored each summary's text next to the message; 2 had no per-segment records (each
# segment gets its record when such an index is read); 3 kept every entry in index.json
# (the next commit moves them into pages); 4 had no parents (inferred: each segment follows
# the latest earlier one it continues). All are still read.
INDEX_VERSION = 5
RECORDS_SINCE = 3


@dataclass(frozen=True, slots=True)
class Head:
    """The head of a thread's index: how many full pages precede it, its own entries, the
    version it was read at (``None``: there is none yet) and its format version."""

    pages: int
    entries: tuple[ArchiveSegment, ...]
    version: str | None
    format_version: int


class Unreadable(Exception):
    """The index (or one of its pages) is missing, torn or malformed: rebuild it."""

    def __init__(self, reason: str, version: str | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.version = version


_PARSE_ERRORS = (ValueError, KeyError, TypeError, AttributeError, RecursionError, ArchiveError)


def _version_of(data: object) -> object:
    return data.get("version") if isinstance(data, dict) else None


def _entries(data: object) -> list[ArchiveSegment]:
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list):
        raise ValueError("no list of segments")
    return [ArchiveSegment.from_json(entry) for entry in data["segments"]]


class PagedIndex:
    """The index files of one thread's transcript folder.

    Args:
        folder: The thread's folder (names and storage calls).
    """

    def __init__(self, folder: ThreadFolder) -> None:
        self._folder = folder
        self._workspace = folder.workspace
        self.store_error: str | None = None
        """Why the last :meth:`rebuild` could not write the index it rebuilt (or ``None``)."""
        self.gone: list[str] = []
        """The expected segments of the last :meth:`rebuild` of which nothing is left."""

    # -- reading --------------------------------------------------------------------------

    def load(self, *, pages: int | None = None) -> tuple[Head, tuple[ArchiveSegment, ...]]:
        """The head and every entry (full pages first; only the last ``pages`` of them if
        given), each with its parent.

        Raises:
            Unreadable: A file is missing, torn or malformed, or the entries are out of
                order.
            ArchiveError: The storage could not be asked, or a newer ctxfs wrote a file.
        """
        head = self.read_head()
        entries: list[ArchiveSegment] = []
        first = 1 if pages is None else max(1, head.pages - pages + 1)
        for page in range(first, head.pages + 1):
            entries += self._read_page(page, head.version)
        entries += head.entries
        numbers = [segment.number for segment in entries]
        if numbers != sorted(set(numbers)):
            raise Unreadable("the index lists segments out of order", head.version)
        return head, with_parents(entries)

    def read_head(self) -> Head:
        """The head as stored (no entries and version ``None`` when there is none).

        Raises:
            Unreadable: It is torn or malformed.
            ArchiveError: The storage could not be asked, or a newer ctxfs wrote it.
        """
        path = self._folder.index_path
        try:
            raw, version = self._workspace.read_versioned(path)
        except PathNotFoundError:
            return Head(pages=0, entries=(), version=None, format_version=INDEX_VERSION)
        except IsADirectoryPathError:
            raise Unreadable(f"{path} is a folder, not the index", None) from None
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read {path}: {exc}") from exc
        try:
            data = loads_bounded(raw)
            check_format_version(_version_of(data), INDEX_VERSION, path)
            entries = tuple(_entries(data))
            pages = data.get("pages", 0)
            if type(pages) is not int or pages < 0:
                raise ValueError(f"pages is {pages!r}")
            format_version = data.get("version")
        except NewerFormatError as exc:  # rebuilt, it would lose what it holds
            raise ArchiveError(str(exc)) from None
        except _PARSE_ERRORS as exc:
            reason = f"the index could not be read ({type(exc).__name__}: {exc})"
            raise Unreadable(reason, version) from None
        known = format_version if type(format_version) is int else 0
        return Head(pages=pages, entries=entries, version=version, format_version=known)

    def _read_page(self, page: int, head_version: str | None) -> list[ArchiveSegment]:
        path = self._folder.page_path(page)
        try:
            raw = self._workspace.read_bytes(path)
        except PathNotFoundError:
            raise Unreadable(f"the index page {path} was missing", head_version) from None
        except IsADirectoryPathError:
            raise Unreadable(f"the index page {path} is a folder", head_version) from None
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read {path}: {exc}") from exc
        try:
            data = loads_bounded(raw)
            check_format_version(_version_of(data), INDEX_VERSION, path)
            entries = _entries(data)
            if len(entries) != PAGE_SIZE:
                raise ValueError(f"{len(entries)} entries instead of {PAGE_SIZE}")
        except NewerFormatError as exc:
            raise ArchiveError(str(exc)) from None
        except _PARSE_ERRORS as exc:
            reason = f"the index page {path} could not be read ({type(exc).__name__}: {exc})"
            raise Unreadable(reason, head_version) from None
        return entries

    # -- writing --------------------------------------------------------------------------

    def store_head(self, head: Head, entries: Sequence[ArchiveSegment]) -> None:
        """Rewrites the head on the version ``head`` was read at, moving full pages out.

        Raises:
            ConflictError: The head changed since (or, for a new one, PathExistsError), or
                a page it would fill is already there with other entries.
            ArchiveError: The storage failed (the write may still have landed).
        """
        pages, rest = head.pages, sorted(entries, key=lambda s: s.number)
        while len(rest) >= PAGE_SIZE:
            pages += 1
            self._write_page(pages, rest[:PAGE_SIZE], create_only=True)
            rest = rest[PAGE_SIZE:]
        document = {
            "format": _INDEX_FORMAT,
            "version": INDEX_VERSION,
            "thread_id": self._folder.thread_id,
            "pages": pages,
            "segments": [s.to_json() for s in rest],
        }
        data = _serialized(document)
        path = self._folder.index_path
        try:
            if head.version is None:
                self._workspace.write_bytes(path, data, create_only=True)
            else:
                self._workspace.write_bytes(path, data, if_version=head.version)
        except (ConflictError, PathExistsError):
            raise
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not write {path}: {exc}") from exc
        # Not read back: the index only points at files verified before, and every segment
        # also has its own record, from which a lost or torn index is rebuilt.

    def _write_page(
        self, page: int, entries: Sequence[ArchiveSegment], *, create_only: bool
    ) -> None:
        document = {
            "format": _INDEX_FORMAT,
            "version": INDEX_VERSION,
            "thread_id": self._folder.thread_id,
            "page": page,
            "segments": [s.to_json() for s in entries],
        }
        path = self._folder.page_path(page)
        data = _serialized(document)
        if create_only:
            if self._folder.put(path, data):
                return
            try:
                held = loads_bounded(self._folder.read_bytes(path))
                there = [s.number for s in _entries(held)]
            except _PARSE_ERRORS:
                there = []  # torn: no head names it yet, so it is replaced below
            if there:
                # another writer filled this page first: its head is newer than ours
                raise ConflictError(f"{path} already holds segments {there[0]}-{there[-1]}")
        try:
            self._workspace.write_bytes(path, data)  # a rebuild, or a torn page
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not write {path}: {exc}") from exc

    def store_all(self, entries: Sequence[ArchiveSegment], version: str | None) -> bool:
        """Writes the whole index (pages and head) from ``entries``: a rebuild.

        Returns:
            False if the head changed since ``version`` was read (another writer got in
            first; its index is then the one to read).
        """
        full = len(entries) // PAGE_SIZE
        for page in range(1, full + 1):
            chunk = entries[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
            self._write_page(page, chunk, create_only=False)
        head = Head(pages=full, entries=(), version=version, format_version=INDEX_VERSION)
        try:
            self.store_head(head, entries[full * PAGE_SIZE :])
        except (ConflictError, PathExistsError):
            return False
        return True

    # -- rebuilding -----------------------------------------------------------------------

    def rebuild(
        self,
        expected: Sequence[str],
        version: str | None,
        known: Sequence[ArchiveSegment] = (),
    ) -> tuple[tuple[ArchiveSegment, ...], list[str], bool]:
        """Reads every record of the folder (and the ``known`` entries still readable).

        Returns:
            The segments, oldest first; the Markdown paths of ``expected`` that have no
            record and no complete files either; and whether the index was written (False
            when another writer rewrote it meanwhile, or when something expected is lost:
            then nothing is written, so the index never loses an entry; or when the
            folder is read-only: then the segments are read, and nothing is written).
        """
        numbers, torn = self._listed_numbers()
        wanted = {path.rsplit("/", 1)[-1] for path in expected}
        for markdown in expected:  # read directly: a stale listing must not hide them
            number = segment_number(markdown)
            if number is not None:
                numbers.add(number)
        found: dict[int, ArchiveSegment] = {segment.number: segment for segment in known}
        for number in sorted(numbers - set(found)):
            segment = self._folder.read_record(self._folder.record_path(number))
            if segment is None and (
                number in torn or self._folder.segment_paths(number)[1].rsplit("/", 1)[-1] in wanted
            ):
                # committed (a summary names it) or being committed (its record was started)
                # but the record is missing or torn: the verified files themselves tell
                segment = self._from_files(number)
            if segment is not None:
                found[segment.number] = segment
        self._add_parents(found)
        segments = with_parents([found[n] for n in sorted(found)])
        listed = {segment.markdown_path for segment in segments}
        lost = [path for path in expected if path not in listed]
        # a segment nothing is left of (record and files deleted) can never be read again:
        # waiting for it would stop the thread for good, and what it held is not lost now
        self.gone = [path for path in lost if self._nothing_of(path)]
        lost = [path for path in lost if path not in self.gone]
        self.store_error = None
        if lost or not segments or self.read_only:
            return segments, lost, False
        try:
            return segments, lost, self.store_all(segments, version)
        except ArchiveError as exc:
            # the records are the commit and were read: the index is a cache of them, and
            # the next read rebuilds it again (a write whose reply was lost, a storage hiccup)
            self.store_error = str(exc)
            return segments, lost, False

    def _nothing_of(self, markdown_path: str) -> bool:
        """Whether the segment ``markdown_path`` names has no record and no file left."""
        number = segment_number(markdown_path)
        if number is None:
            return False
        paths = [self._folder.record_path(number), *self._folder.segment_paths(number)]
        try:
            return not any(self._workspace.exists(path) for path in paths)
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not ask for segment {number}: {exc}") from exc

    def _add_parents(self, found: dict[int, ArchiveSegment]) -> None:
        """Adds to ``found`` every segment a found one continues: a committed record names
        its parent, so that parent was committed too, even when its own record is missing
        or torn (its verified files then describe it); else its branch would lose its start."""
        pending = sorted({s.parent for s in found.values() if s.parent} - set(found))
        tried: set[int] = set()
        while pending:
            number = pending.pop()
            tried.add(number)
            segment = self._folder.read_record(self._folder.record_path(number))
            if segment is None:
                segment = self._from_files(number)
            if segment is None:
                continue  # its files are gone too: the branch starts at its first readable one
            found[number] = segment
            if segment.parent and segment.parent not in found and segment.parent not in tried:
                pending.append(segment.parent)

    def migrate(self, entries: Sequence[ArchiveSegment], version: str | None) -> None:
        """Gives every segment of an index written before records existed its record."""
        for segment in entries:
            path = self._folder.record_path(segment.number)
            if not self._folder.put(path, json_bytes(segment.to_json())):
                raise ArchiveError(f"{path} holds a record that differs from the index")
        self.store_all(entries, version)

    @property
    def read_only(self) -> bool:
        """Whether the thread's folder is read-only in this workspace (a command that only
        looks): a damaged index is then read around, from the records, never rewritten."""
        return self._workspace.is_read_only(self._folder.directory)

    def against_listing(self, entries: Sequence[ArchiveSegment]) -> tuple[list[int], list[int]]:
        """Compares ``entries`` with one listing of the folder.

        Returns:
            The numbers of the records the entries lack (segments committed after the index
            was last written: its write failed, or its reply was lost), and of the entries
            nothing continues whose record and lossless file are both gone (read directly,
            so a stale listing never drops one): there is nothing left to list of them.

        Raises:
            ArchiveError: The folder could not be listed or a file could not be asked for.
        """
        directory = self._folder.directory
        try:
            listing = self._workspace.ls(directory)
        except PathNotFoundError:
            listing = []
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not list {directory}: {exc}") from exc
        names = {entry.name for entry in listing if entry.type == "file"}
        records = {n for name in names if name.endswith(".json") and (n := segment_number(name))}
        known = {segment.number for segment in entries}
        continued = {segment.parent for segment in entries}
        gone = [
            segment.number
            for segment in entries
            if segment.number not in records
            and segment.number not in continued  # kept: its branch's walk goes through it
            and segment.jsonl_path.rsplit("/", 1)[-1] not in names
            and self._gone(segment)
        ]
        return sorted(records - known), gone

    def _gone(self, segment: ArchiveSegment) -> bool:
        if self._folder.read_record(self._folder.record_path(segment.number)) is not None:
            return False
        try:
            return not self._workspace.exists(segment.jsonl_path)
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not ask for {segment.jsonl_path}: {exc}") from exc

    def _listed_numbers(self) -> tuple[set[int], set[int]]:
        """Segment numbers with a record in the folder, and those whose record is torn."""
        directory = self._folder.directory
        try:
            entries = self._workspace.ls(directory)
        except PathNotFoundError:
            return set(), set()
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not list {directory}: {exc}") from exc
        numbers: set[int] = set()
        torn: set[int] = set()
        for entry in entries:
            number = segment_number(entry.name)
            if entry.type == "file" and number is not None and entry.name.endswith(".json"):
                numbers.add(number)
                if self._folder.read_record(entry.path) is None:
                    torn.add(number)
        return numbers, torn

    def _from_files(self, number: int) -> ArchiveSegment | None:
        """Segment ``number`` as its two files describe it, its record written again; or
        ``None`` if they are missing or do not agree (then it was never complete).

        Its tokens and time are unknown (0 and ``""``), it has no summary, and its parent
        is inferred (the latest earlier segment it continues).
        """
        jsonl_path, markdown_path = self._folder.segment_paths(number)
        try:
            jsonl = self._workspace.read_bytes(jsonl_path)
            markdown = self._workspace.read_bytes(markdown_path)
        except PathNotFoundError:
            return None
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read segment {number}: {exc}") from exc
        found = markdown_range(markdown)
        try:
            count = len(decode_jsonl(jsonl))
        except (ValueError, TypeError, KeyError):
            return None
        if found is None or found[1] - found[0] != count:
            return None
        segment = ArchiveSegment(
            number=number,
            start=found[0],
            stop=found[1],
            tokens=0,
            created="",
            jsonl_path=jsonl_path,
            jsonl_sha256=sha(jsonl),
            jsonl_bytes=len(jsonl),
            markdown_path=markdown_path,
            markdown_sha256=sha(markdown),
            markdown_bytes=len(markdown),
        )
        if self.read_only:
            return segment
        recorded = self._folder.put_record(
            self._folder.record_path(number), json_bytes(segment.to_json())
        )
        return recorded if recorded is not None else segment


def _serialized(document: object) -> bytes:
    try:
        return json_bytes(document, indent=1)
    except (TypeError, ValueError) as exc:
        raise ArchiveError(f"the summary cannot be serialized: {exc}") from exc
