"""Append-only transcript archive: every message summarization drops, kept byte-exact.

Layout, per thread (``<thread>`` is :func:`ctxfs._layout.safe_name` of the thread id)::

    /transcripts/<thread>/segment-0001.jsonl   lossless: one message per line
    /transcripts/<thread>/segment-0001.md      readable twin, every text verbatim
    /transcripts/<thread>/segment-0001.json    its record: the index entry, on its own
    /transcripts/<thread>/index-0001.json      a full page: entries of segments 1-32
    /transcripts/<thread>/index.json           the head: the page count and later entries

- **JSONL** lines are ``json.dumps(messages_to_dict([m])[0], ensure_ascii=True)``: pure ASCII,
  so no exotic line separator can split a line; ``messages_from_dict`` restores the messages
  exactly (:meth:`TranscriptArchive.read_segment`).
- **Markdown** holds each message's text and each string tool argument verbatim (tabs,
  quotes, non-ASCII, CRLF), inside fences longer than any backtick run of the text, so a
  ``grep`` for an exact line of a tool result hits it.
- **Index** entries (:class:`ArchiveSegment`) give the segment number, the message range
  (absolute positions in the original, uncompacted thread), time, tokens, the summary
  message that replaced the segment (stored once, ``messages_to_dict`` form; its text is
  :attr:`ArchiveSegment.summary`), and path, SHA-256 and size of both files.
- **Append-only index.** Entries go into the head; when it holds :data:`PAGE_SIZE` of them
  they move, once and for all, into the next full page (written create-only, never
  rewritten). So a commit rewrites at most one page's worth of entries, however long the
  thread: its cost stays flat.

Write protocol (crash-safe, deterministic): the two segment files are written create-only
and read back (size and SHA-256) before anything else happens; then the segment's record is
written create-only (the commit itself); only then is the head rewritten, as a conditional
write on the version that was read (compare-and-swap: another writer's entry is never
overwritten). So no index entry ever names a missing or half-written file, and the index is
a cache of the records: a missing, torn or incomplete index is rebuilt from them. A re-run
after a crash finds what it left: a segment with the same range and content already in the
index is reused as is; a leftover segment file with identical bytes is adopted; a leftover
with different bytes keeps its number and the segment takes the next one. Messages that a
committed segment already holds byte for byte (a compaction whose result never reached the
agent's state) are not archived again: only the rest is. The time in the index comes from
the ``clock`` argument; it appears nowhere else, so messages and segment files do not depend
on it.

One writer per thread, and a second one is detected: a commit that finds in the head a
segment committed since its writer read the index, over the same messages, raises
:class:`~ctxfs._errors.ArchiveError` (nothing is dropped) instead of merging two versions of
one conversation. Segments over other messages (two archive objects taking turns) are both
kept.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from ctxfs._errors import (
    ArchiveError,
    ConflictError,
    PathExistsError,
    PathNotFoundError,
    WorkspaceError,
)
from ctxfs._layout import TRANSCRIPTS_DIR, safe_name
from ctxfs._messages import text_blocks
from ctxfs._workspace._workspace import Workspace

__all__ = [
    "INDEX_NAME",
    "PAGE_SIZE",
    "ArchiveError",
    "ArchiveSegment",
    "TranscriptArchive",
    "render_markdown",
    "thread_transcript_dir",
]

INDEX_NAME = "index.json"
"""File name of the per-thread index."""

PAGE_SIZE = 32
"""Entries per full index page; the head holds fewer."""

_INDEX_FORMAT = "ctxfs-transcript-index"
# 1 also stored each summary's text next to the message; 2 had no per-segment records (each
# segment gets its record when such an index is read); 3 kept every entry in index.json
# (the next commit moves them into pages). All are still read.
_INDEX_VERSION = 4
_RECORDS_SINCE = 3
_MAX_PROBES = 64
_COMMIT_ATTEMPTS = 16
_RECORD = re.compile(r"segment-(\d{4,})\.json")
_SEGMENT_FILE = re.compile(r"segment-(\d{4,})\.(?:jsonl|md|json)")
_MARKDOWN_RANGE = re.compile(rb"^# Transcript of thread .*, messages (\d+)-(\d+)\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveSegment:
    """One committed (or about to be committed) transcript segment.

    Attributes:
        number: 1, 2, ... in the thread.
        start: Absolute position of the first archived message in the original thread.
        stop: Position after the last one (``stop - start`` messages).
        tokens: Tokens of the archived messages.
        created: When it was written, ISO 8601 UTC, from the archive's clock.
        jsonl_path: The lossless file.
        jsonl_sha256: Its SHA-256, hex.
        jsonl_bytes: Its size.
        markdown_path: The readable twin.
        markdown_sha256: Its SHA-256, hex.
        markdown_bytes: Its size.
        summary_message: The summary message that replaced the segment in the conversation
            (``messages_to_dict`` form; ``None`` until committed), so that a re-run reuses it
            exactly instead of asking the model again.
    """

    number: int
    start: int
    stop: int
    tokens: int
    created: str
    jsonl_path: str
    jsonl_sha256: str
    jsonl_bytes: int
    markdown_path: str
    markdown_sha256: str
    markdown_bytes: int
    summary_message: dict[str, Any] | None = None

    @property
    def summary(self) -> str:
        """The text of the summary that replaced the segment (empty until committed)."""
        if self.summary_message is None:
            return ""
        content = self.summary_message.get("data", {}).get("content", "")
        return "".join(text_blocks(content)) if isinstance(content, str | list) else ""

    @property
    def message_count(self) -> int:
        """How many messages the segment holds."""
        return self.stop - self.start

    def to_json(self) -> dict[str, Any]:
        """Returns the index entry (the summary is stored once, in ``summary_message``)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ArchiveSegment:
        """Parses an index entry (unknown keys, such as the ``summary`` text that version 1
        stored twice, are ignored).

        Raises:
            ArchiveError: The entry is malformed.
        """
        fields = cls.__dataclass_fields__
        try:
            return cls(**{name: data[name] for name in fields if name in data})
        except (KeyError, TypeError) as exc:
            raise ArchiveError(f"malformed transcript index entry: {exc}") from None


@dataclass(frozen=True, slots=True)
class _Head:
    """The head of a thread's index: how many full pages precede it, its own entries, the
    version it was read at (``None``: there is none yet) and its format version."""

    pages: int
    entries: tuple[ArchiveSegment, ...]
    version: str | None
    format_version: int


_LOST = _Head(pages=0, entries=(), version=None, format_version=0)


class _Unreadable(Exception):
    """The index (or one of its pages) is missing, torn or malformed: rebuild it."""

    def __init__(self, reason: str, version: str | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.version = version


def thread_transcript_dir(thread_id: str) -> str:
    """Returns the virtual folder of a thread's transcripts."""
    return f"{TRANSCRIPTS_DIR}/{safe_name(thread_id)}"


def _segment_number(path: str) -> int | None:
    found = _SEGMENT_FILE.fullmatch(path.rsplit("/", 1)[-1])
    return int(found.group(1)) if found is not None else None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _default_clock() -> datetime:
    return datetime.now(UTC)


class TranscriptArchive:
    """The transcript segments of one thread in a workspace.

    Args:
        workspace: The SDK's writable workspace.
        thread_id: The conversation; names the folder.
        clock: Returns the time stored in the index (default: now, UTC). Inject a fixed clock
            for byte-identical index files across runs.
    """

    def __init__(
        self,
        workspace: Workspace,
        thread_id: str,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._workspace = workspace
        self._thread_id = thread_id
        self._clock = clock or _default_clock
        self._dir = thread_transcript_dir(thread_id)
        self._repairs: list[str] = []
        # The index as segments() last read it: the first compare-and-swap of a commit is
        # tried on it (a stale one only fails that first try), sparing one read per summary.
        self._loaded: tuple[_Head, tuple[ArchiveSegment, ...]] | None = None
        # The latest of this thread's segments that the summary in context names (given to
        # segments() as expected): a later one this writer does not hold is another writer's.
        self._continued: int | None = None

    @property
    def directory(self) -> str:
        """The thread's transcript folder."""
        return self._dir

    @property
    def index_path(self) -> str:
        """The thread's index file."""
        return f"{self._dir}/{INDEX_NAME}"

    def segment_paths(self, number: int) -> tuple[str, str]:
        """Returns the (JSONL, Markdown) paths of segment ``number``."""
        stem = f"{self._dir}/segment-{number:04d}"
        return f"{stem}.jsonl", f"{stem}.md"

    # -- reading --------------------------------------------------------------------------

    def record_path(self, number: int) -> str:
        """Returns the path of segment ``number``'s record: its index entry, on its own."""
        return f"{self._dir}/segment-{number:04d}.json"

    def page_path(self, page: int) -> str:
        """Returns the path of full index page ``page`` (1, 2, ...)."""
        return f"{self._dir}/index-{page:04d}.json"

    def segments(self, *, expected: Sequence[str] = ()) -> tuple[ArchiveSegment, ...]:
        """Returns the committed segments, oldest first (empty if nothing was archived).

        The index is a cache of the segments' own records, and never the only copy: when it
        is missing, torn or malformed, or lacks a segment that ``expected`` names, it is
        rebuilt from the records (what was done is added to :attr:`repairs`), so a lost or
        half-written index never makes committed segments disappear or their numbers reused.

        Args:
            expected: Markdown paths of segments known to be committed (a summary in the
                context names them); each must be in the answer.

        Raises:
            ArchiveError: The storage could not be asked, or an expected segment has no
                record either.
        """
        # a summary may name segments of another thread (a forked or parent thread): only
        # this thread's own are vouched for here
        expected = [path for path in expected if path.startswith(self._dir + "/")]
        numbers = [_segment_number(path) for path in expected]
        self._continued = max((n for n in numbers if n is not None), default=None)
        try:
            head, entries = self._load()
        except _Unreadable as exc:
            return self._rebuild(exc.reason, expected, exc.version)
        if head.version is None:
            rebuilt = self._rebuild("the index was missing", expected, None)
            self._loaded = None if rebuilt else (head, ())
            return rebuilt
        listed = {segment.markdown_path for segment in entries}
        missing = [path for path in expected if path not in listed]
        if missing:
            return self._rebuild(f"the index lacked {', '.join(missing)}", expected, head.version)
        if head.format_version < _RECORDS_SINCE:
            self._migrate(entries, head.version)
            return entries
        self._loaded = (head, entries)
        return entries

    def recent(self, *, expected: Sequence[str] = ()) -> tuple[ArchiveSegment, ...]:
        """Returns the latest committed segments, oldest first: what a compaction needs.

        The head's entries and the last full page's (at least the last :data:`PAGE_SIZE`
        segments, or all of them), read in at most two requests however long the thread,
        so a summary's commit costs the same at its 500th segment as at its first. Pass the
        answer as ``committed`` to :meth:`write_segment` and :meth:`commit`. Anything
        unusual (a missing or torn index, an old format, an expected segment older than
        the last page) takes :meth:`segments`, which reads and rebuilds the whole index.

        Args:
            expected: As for :meth:`segments`.

        Raises:
            ArchiveError: As for :meth:`segments`.
        """
        own = [path for path in expected if path.startswith(self._dir + "/")]
        try:
            head, entries = self._load(pages=1)
        except _Unreadable:
            return self.segments(expected=expected)
        listed = {segment.markdown_path for segment in entries}
        if (
            head.version is None
            or head.format_version < _INDEX_VERSION
            or any(path not in listed for path in own)
        ):
            return self.segments(expected=expected)
        numbers = [_segment_number(path) for path in own]
        self._continued = max((n for n in numbers if n is not None), default=None)
        self._loaded = (head, entries)
        return entries

    def _load(self, *, pages: int | None = None) -> tuple[_Head, tuple[ArchiveSegment, ...]]:
        """The head and every entry (full pages first; only the last ``pages`` of them if
        given), or :class:`_Unreadable`."""
        head = self._read_head()
        entries: list[ArchiveSegment] = []
        first = 1 if pages is None else max(1, head.pages - pages + 1)
        for page in range(first, head.pages + 1):
            entries += self._read_page(page, head.version)
        entries += head.entries
        numbers = [segment.number for segment in entries]
        if numbers != sorted(set(numbers)):
            raise _Unreadable("the index lists segments out of order", head.version)
        return head, tuple(entries)

    def _read_head(self) -> _Head:
        """The head of the index; ``version`` is ``None`` when there is none."""
        try:
            raw, version = self._workspace.read_versioned(self.index_path)
        except PathNotFoundError:
            return _Head(pages=0, entries=(), version=None, format_version=_INDEX_VERSION)
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read {self.index_path}: {exc}") from exc
        try:
            data = json.loads(raw)
            entries = tuple(ArchiveSegment.from_json(entry) for entry in data["segments"])
            pages = data.get("pages", 0)
            if not isinstance(pages, int) or pages < 0:
                raise ValueError(f"pages is {pages!r}")
            format_version = data.get("version")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            reason = f"the index could not be read ({type(exc).__name__}: {exc})"
            raise _Unreadable(reason, version) from None
        except ArchiveError as exc:
            raise _Unreadable(f"the index could not be read ({exc})", version) from None
        known = format_version if isinstance(format_version, int) else 0
        return _Head(pages=pages, entries=entries, version=version, format_version=known)

    def _read_page(self, page: int, head_version: str | None) -> list[ArchiveSegment]:
        path = self.page_path(page)
        try:
            raw = self._workspace.read_bytes(path)
        except PathNotFoundError:
            raise _Unreadable(f"the index page {path} was missing", head_version) from None
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read {path}: {exc}") from exc
        try:
            data = json.loads(raw)
            entries = [ArchiveSegment.from_json(entry) for entry in data["segments"]]
            if len(entries) != PAGE_SIZE:
                raise ValueError(f"{len(entries)} entries instead of {PAGE_SIZE}")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            reason = f"the index page {path} could not be read ({type(exc).__name__}: {exc})"
            raise _Unreadable(reason, head_version) from None
        except ArchiveError as exc:
            reason = f"the index page {path} could not be read ({exc})"
            raise _Unreadable(reason, head_version) from None
        return entries

    def _migrate(self, entries: Sequence[ArchiveSegment], version: str | None) -> None:
        """Gives every segment of an index written before records existed its record."""
        for segment in entries:
            path = self.record_path(segment.number)
            if not self._put(path, _json_bytes(segment.to_json())):
                raise ArchiveError(f"{path} holds a record that differs from the index")
        self._store_index(entries, version)

    @property
    def repairs(self) -> tuple[str, ...]:
        """What :meth:`segments` found wrong with the index and rebuilt, in order."""
        return tuple(self._repairs)

    def _rebuild(
        self, reason: str, expected: Sequence[str], version: str | None
    ) -> tuple[ArchiveSegment, ...]:
        numbers, torn = self._listed_numbers()
        for markdown in expected:  # read directly: a stale listing must not hide them
            found = _SEGMENT_FILE.fullmatch(markdown.rsplit("/", 1)[-1])
            if found is not None:
                numbers.add(int(found.group(1)))
        found_segments: dict[int, ArchiveSegment] = {}
        wanted = {path.rsplit("/", 1)[-1] for path in expected}
        for number in sorted(numbers):
            segment = self._read_record(self.record_path(number))
            if segment is None and (
                number in torn or self.segment_paths(number)[1].rsplit("/", 1)[-1] in wanted
            ):
                # committed (a summary names it) or being committed (its record was started)
                # but the record is missing or torn: the verified files themselves tell
                segment = self._from_files(number)
            if segment is not None:
                found_segments[segment.number] = segment
        listed = {segment.markdown_path for segment in found_segments.values()}
        lost = [path for path in expected if path not in listed]
        if lost:
            raise ArchiveError(
                f"{reason}, and the records of {', '.join(lost)} could not be read either; "
                "nothing is dropped until they can"
            )
        segments = tuple(found_segments[n] for n in sorted(found_segments))
        if not segments and reason == "the index was missing":
            return ()  # a thread with nothing archived yet
        self._repairs.append(f"{reason}; rebuilt from {len(segments)} segment record(s)")
        self._store_index(segments, version)
        return segments

    def _listed_numbers(self) -> tuple[set[int], set[int]]:
        """Segment numbers with a record in the folder, and those whose record is torn."""
        try:
            entries = self._workspace.ls(self._dir)
        except PathNotFoundError:
            return set(), set()
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not list {self._dir}: {exc}") from exc
        numbers: set[int] = set()
        torn: set[int] = set()
        for entry in entries:
            found = _RECORD.fullmatch(entry.name)
            if entry.type == "file" and found is not None:
                number = int(found.group(1))
                numbers.add(number)
                if self._read_record(entry.path) is None:
                    torn.add(number)
        return numbers, torn

    def _read_record(self, path: str) -> ArchiveSegment | None:
        try:
            raw = self._workspace.read_bytes(path)
        except PathNotFoundError:
            return None
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read {path}: {exc}") from exc
        try:
            return ArchiveSegment.from_json(json.loads(raw))
        except (ValueError, TypeError, AttributeError, RecursionError, ArchiveError):
            return None  # a torn record

    def _from_files(self, number: int) -> ArchiveSegment | None:
        """Segment ``number`` as its two files describe it, its record written again; or
        ``None`` if they are missing or do not agree (then it was never complete).

        Its tokens and time are unknown (0 and ``""``) and it has no summary.
        """
        jsonl_path, markdown_path = self.segment_paths(number)
        try:
            jsonl = self._workspace.read_bytes(jsonl_path)
            markdown = self._workspace.read_bytes(markdown_path)
        except PathNotFoundError:
            return None
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read segment {number} of {self._dir}: {exc}") from exc
        heading = _MARKDOWN_RANGE.match(markdown)
        try:
            count = len(decode_jsonl(jsonl))
        except (ValueError, TypeError, KeyError):
            return None
        if heading is None or int(heading.group(2)) + 1 - int(heading.group(1)) != count:
            return None
        segment = ArchiveSegment(
            number=number,
            start=int(heading.group(1)),
            stop=int(heading.group(2)) + 1,
            tokens=0,
            created="",
            jsonl_path=jsonl_path,
            jsonl_sha256=_sha(jsonl),
            jsonl_bytes=len(jsonl),
            markdown_path=markdown_path,
            markdown_sha256=_sha(markdown),
            markdown_bytes=len(markdown),
        )
        record = _json_bytes(segment.to_json())
        path = self.record_path(number)
        try:
            _, version = self._workspace.read_versioned(path)
        except PathNotFoundError:
            self._put(path, record)
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read {path}: {exc}") from exc
        else:  # a torn record: replaced, unless someone else replaced it meanwhile
            try:
                self._workspace.write_bytes(path, record, if_version=version)
            except ConflictError:
                return self._read_record(path)
            except (WorkspaceError, OSError) as exc:
                raise ArchiveError(f"could not write {path}: {exc}") from exc
        return segment

    def read_segment(self, segment: ArchiveSegment) -> list[BaseMessage]:
        """Returns the messages of a segment, restored exactly from its JSONL file.

        Raises:
            ArchiveError: The file is missing or its SHA-256 does not match the index.
        """
        data = self._read_bytes(segment.jsonl_path)
        if _sha(data) != segment.jsonl_sha256:
            raise ArchiveError(f"{segment.jsonl_path} does not match its SHA-256 in the index")
        return decode_jsonl(data)

    def summary_of(self, segment: ArchiveSegment) -> BaseMessage | None:
        """Returns the summary message recorded with a committed segment, if any."""
        if segment.summary_message is None:
            return None
        try:
            return messages_from_dict([segment.summary_message])[0]
        except (KeyError, TypeError, ValueError):
            return None

    def read_all(self) -> list[BaseMessage]:
        """Returns every archived message of the thread, oldest first."""
        return [m for segment in self.segments() for m in self.read_segment(segment)]

    # -- writing --------------------------------------------------------------------------

    def write_segment(
        self,
        messages: Sequence[BaseMessage],
        *,
        start: int,
        tokens: int,
        committed: Sequence[ArchiveSegment] | None = None,
    ) -> tuple[ArchiveSegment, bool]:
        """Writes and verifies a segment; does not touch the index (see :meth:`commit`).

        Messages that committed segments already hold byte for byte, from ``start`` on (a
        compaction whose result never reached the agent's state), are not written again:
        the segment then holds only the messages after them.

        Args:
            messages: The messages to archive, as the agent saw them.
            start: Absolute position of the first one in the original thread.
            tokens: Their token count, for the index.
            committed: The index as :meth:`segments` just returned it, to spare reading it
                again (pass the same to :meth:`commit`); read if omitted.

        Returns:
            The segment (with no summary yet), and whether it was already committed: a
            segment with the same range and bytes in the index is returned as is.

        Raises:
            ArchiveError: Writing or verifying failed; nothing refers to what was written.
        """
        if not messages:
            raise ValueError("nothing to archive: messages is empty")
        try:
            lines = encode_lines(messages)
        except (TypeError, ValueError) as exc:  # unserializable payload
            raise ArchiveError(f"the messages cannot be serialized: {exc}") from exc
        stop = start + len(messages)
        if committed is None:
            committed = self.segments()
        jsonl = _joined(lines)
        for segment in committed:
            if (segment.start, segment.stop, segment.jsonl_sha256) == (start, stop, _sha(jsonl)):
                return segment, True
        held = self._already_held(committed, lines, start)
        self._check_continues(committed, held, start)
        if held is not None and held.stop == stop:
            return held, True
        if held is not None:
            skip = held.stop - start
            messages, lines, start = messages[skip:], lines[skip:], held.stop
            jsonl = _joined(lines)
        try:
            markdown = render_markdown(messages, thread_id=self._thread_id, start=start).encode(
                "utf-8",
                "backslashreplace",  # a lone surrogate must not block the archive
            )
        except (TypeError, ValueError) as exc:
            raise ArchiveError(f"the messages cannot be serialized: {exc}") from exc
        first = max((s.number for s in committed), default=0) + 1
        for number in range(first, first + _MAX_PROBES):
            jsonl_path, markdown_path = self.segment_paths(number)
            if self._put(jsonl_path, jsonl) and self._put(markdown_path, markdown):
                self._verify(jsonl_path, jsonl)
                self._verify(markdown_path, markdown)
                recorded = self._read_record(self.record_path(number))
                if (
                    recorded is not None
                    and (recorded.start, recorded.stop) == (start, stop)
                    and recorded.jsonl_sha256 == _sha(jsonl)
                ):
                    # committed by an earlier run whose index write failed: adopt it
                    self._append(recorded, committed)
                    return recorded, True
                segment = ArchiveSegment(
                    number=number,
                    start=start,
                    stop=stop,
                    tokens=tokens,
                    created=self._clock().astimezone(UTC).isoformat(timespec="seconds"),
                    jsonl_path=jsonl_path,
                    jsonl_sha256=_sha(jsonl),
                    jsonl_bytes=len(jsonl),
                    markdown_path=markdown_path,
                    markdown_sha256=_sha(markdown),
                    markdown_bytes=len(markdown),
                )
                return segment, False
        raise ArchiveError(f"no free segment number in {self._dir} after {_MAX_PROBES} tries")

    def _already_held(
        self, committed: Sequence[ArchiveSegment], lines: Sequence[str], start: int
    ) -> ArchiveSegment | None:
        """The last of the committed segments that hold, byte for byte and one after the
        other, the first of ``lines`` (which start at ``start``); ``None`` if none does."""
        position, held = start, None
        by_start = {segment.start: segment for segment in committed}
        while (segment := by_start.get(position)) is not None:
            if segment.stop <= position or segment.stop - start > len(lines):
                break
            ours = _joined(lines[position - start : segment.stop - start])
            if len(ours) != segment.jsonl_bytes or _sha(ours) != segment.jsonl_sha256:
                break
            position, held = segment.stop, segment
        return held

    def commit(
        self,
        segment: ArchiveSegment,
        *,
        summary: BaseMessage,
        committed: Sequence[ArchiveSegment] | None = None,
    ) -> ArchiveSegment:
        """Adds a written segment to the index; a no-op if it is already there.

        The segment's record is written first (create-only: that is the commit), then the
        head of the index is rewritten on the condition that nobody changed it since it was
        read (compare-and-swap), read again and retried otherwise: an entry someone else
        added meanwhile is kept, never overwritten.

        Args:
            segment: From :meth:`write_segment`.
            summary: The message that replaces the segment in the conversation; it is
                recorded once, in :attr:`ArchiveSegment.summary_message`.
            committed: The index as :meth:`segments` returned it before
                :meth:`write_segment`: a segment over the same messages that is in the
                index now but was not then was committed by a second writer on the thread.

        Raises:
            ArchiveError: The index could not be read or rewritten, holds a different
                segment under the same number, or a second writer committed a segment over
                the same messages since ``committed`` was read (nothing is dropped then).
        """
        for existing in committed or ():
            if existing.number == segment.number:
                if existing.jsonl_sha256 != segment.jsonl_sha256:
                    raise ArchiveError(
                        f"segment {segment.number} of {self._dir} is already in the index "
                        "with different content"
                    )
                return existing
        final = replace(segment, summary_message=messages_to_dict([summary])[0])
        try:
            record = _json_bytes(final.to_json())
        except (TypeError, ValueError) as exc:
            raise ArchiveError(f"the summary cannot be serialized: {exc}") from exc
        # The record is the commit; the index that follows is a cache rebuilt from records.
        path = self.record_path(final.number)
        if not self._put(path, record):
            recorded = self._read_record(path)
            if recorded is None or recorded.jsonl_sha256 != final.jsonl_sha256:
                raise ArchiveError(
                    f"{path} already holds a different record (another writer on this "
                    "thread?); nothing is dropped"
                )
            final = recorded  # committed by an earlier run of this very compaction
        else:
            self._verify(path, record)
        return self._append(final, committed)

    def _append(
        self, final: ArchiveSegment, committed: Sequence[ArchiveSegment] | None
    ) -> ArchiveSegment:
        """Adds a committed segment's entry to the index by compare-and-swap of its head."""
        seen = None if committed is None else {s.number for s in committed}
        for _attempt in range(_COMMIT_ATTEMPTS):
            loaded, self._loaded = self._loaded, None
            try:
                head, entries = loaded if loaded is not None else self._load(pages=1)
            except _Unreadable:
                head, entries = _LOST, ()
            if head is _LOST or (head.version is None and committed != ()):
                # torn, or lost since it was read: rebuilt from the records, this one's too
                rebuilt = self.segments(expected=[final.markdown_path])
                return next(s for s in rebuilt if s.number == final.number)
            for existing in entries:
                if existing.number == final.number:
                    if existing.jsonl_sha256 != final.jsonl_sha256:
                        raise ArchiveError(
                            f"segment {final.number} of {self._dir} is already in the index "
                            "with different content"
                        )
                    return existing
            if seen is not None:
                self._check_no_second_writer(final, [e for e in entries if e.number not in seen])
            in_pages = entries[: len(entries) - len(head.entries)]
            if in_pages and in_pages[-1].number > final.number:
                raise ArchiveError(
                    f"segment {final.number} of {self._dir} comes before segments already "
                    "paged in the index; nothing is dropped"
                )
            try:
                self._store_head(head, [*head.entries, final])
            except (ConflictError, PathExistsError):
                continue  # another commit got in first: read the head again
            return final
        raise ArchiveError(
            f"the index of {self._dir} kept changing while segment {final.number} was "
            "committed; nothing is dropped"
        )

    def _check_continues(
        self, committed: Sequence[ArchiveSegment], held: ArchiveSegment | None, start: int
    ) -> None:
        """Raise if segments were committed after the one the summary in context names,
        over messages this writer does not hold: another writer continued the thread."""
        if self._continued is None:
            return
        mine = held.number if held is not None else self._continued
        later = [s for s in committed if s.number > max(mine, self._continued)]
        if later:
            other = later[0]
            raise ArchiveError(
                f"a second writer on thread {self._thread_id!r}: the summary in context "
                f"continues from segment {self._continued}, but segment {other.number} "
                f"(messages {other.start}-{other.stop - 1}) was committed to {self._dir} "
                f"since, by another writer, while this one archives from message {start}; one "
                "writer per thread (give each run its own thread id). Nothing is dropped"
            )

    def _check_no_second_writer(
        self, final: ArchiveSegment, fresh: Sequence[ArchiveSegment]
    ) -> None:
        for other in fresh:
            if other.start < final.stop and final.start < other.stop:
                raise ArchiveError(
                    f"a second writer on thread {self._thread_id!r}: segment {other.number} "
                    f"(messages {other.start}-{other.stop - 1}) was committed to {self._dir} "
                    f"while this compaction archived messages {final.start}-{final.stop - 1} "
                    f"as segment {final.number}; one writer per thread (give each run its "
                    "own thread id). Nothing is dropped; the segment's files stay unindexed"
                )

    def _store_head(self, head: _Head, entries: Sequence[ArchiveSegment]) -> None:
        """Rewrites the head on the version ``head`` was read at, moving full pages out.

        Raises:
            ConflictError: The head changed since (or, for a new one, PathExistsError).
        """
        pages, rest = head.pages, list(entries)
        rest.sort(key=lambda s: s.number)
        while len(rest) >= PAGE_SIZE:
            pages += 1
            self._write_page(pages, rest[:PAGE_SIZE], create_only=True)
            rest = rest[PAGE_SIZE:]
        document = {
            "format": _INDEX_FORMAT,
            "version": _INDEX_VERSION,
            "thread_id": self._thread_id,
            "pages": pages,
            "segments": [s.to_json() for s in rest],
        }
        try:
            data = _json_bytes(document, indent=1)
        except (TypeError, ValueError) as exc:
            raise ArchiveError(f"the summary cannot be serialized: {exc}") from exc
        try:
            if head.version is None:
                self._workspace.write_bytes(self.index_path, data, create_only=True)
            else:
                self._workspace.write_bytes(self.index_path, data, if_version=head.version)
        except (ConflictError, PathExistsError):
            raise
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not write {self.index_path}: {exc}") from exc
        # Not read back: the index only points at files verified above, and every segment
        # also has its own record, from which a lost or torn index is rebuilt.

    def _write_page(
        self, page: int, entries: Sequence[ArchiveSegment], *, create_only: bool
    ) -> None:
        document = {
            "format": _INDEX_FORMAT,
            "version": _INDEX_VERSION,
            "thread_id": self._thread_id,
            "page": page,
            "segments": [s.to_json() for s in entries],
        }
        path = self.page_path(page)
        try:
            data = _json_bytes(document, indent=1)
        except (TypeError, ValueError) as exc:
            raise ArchiveError(f"the summary cannot be serialized: {exc}") from exc
        if create_only:
            if not self._put(path, data):
                raise ArchiveError(f"{path} already holds other entries; nothing is dropped")
            return
        try:
            self._workspace.write_bytes(path, data)  # a rebuild: the page may be torn
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not write {path}: {exc}") from exc

    def _store_index(self, entries: Sequence[ArchiveSegment], version: str | None) -> None:
        """Writes the whole index (pages and head) from ``entries``: a rebuild."""
        full = len(entries) // PAGE_SIZE
        for page in range(1, full + 1):
            self._write_page(
                page, entries[(page - 1) * PAGE_SIZE : page * PAGE_SIZE], create_only=False
            )
        head = _Head(pages=full, entries=(), version=version, format_version=_INDEX_VERSION)
        try:
            self._store_head(head, entries[full * PAGE_SIZE :])
        except (ConflictError, PathExistsError) as exc:
            raise ArchiveError(
                f"the index of {self._dir} changed while it was rebuilt (another writer on "
                "this thread?); nothing is dropped, the next compaction reads it again"
            ) from exc

    def _put(self, path: str, data: bytes) -> bool:
        """Writes create-only; True if ``path`` now holds ``data``, False if taken."""
        try:
            self._workspace.write_bytes(path, data, create_only=True)
        except PathExistsError:
            return self._read_bytes(path) == data
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not write {path}: {exc}") from exc
        return True

    def _verify(self, path: str, data: bytes) -> None:
        back = self._read_bytes(path)
        if len(back) != len(data) or _sha(back) != _sha(data):
            raise ArchiveError(f"{path} did not read back identical after writing")

    def _read_bytes(self, path: str) -> bytes:
        try:
            return self._workspace.read_bytes(path)
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read back {path}: {exc}") from exc


# -- formats --------------------------------------------------------------------------------


def encode_jsonl(messages: Sequence[BaseMessage]) -> bytes:
    """Returns the lossless JSONL bytes of ``messages`` (ASCII, one message per line).

    Values JSON cannot hold are still archived: ``bytes`` as a tagged base64 string
    (restored exactly by :func:`decode_jsonl`), anything else as a tagged ``repr``.
    Lone surrogates are escaped as JSON allows (``\\udXXX``) and come back as they were.
    """
    return _joined(encode_lines(messages))


def encode_lines(messages: Sequence[BaseMessage]) -> list[str]:
    """Returns the JSONL lines of :func:`encode_jsonl`, one per message, without newlines."""
    return [_encode_line(d) for d in messages_to_dict(list(messages))]


def _joined(lines: Sequence[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("ascii")


def _encode_line(data: object) -> str:
    line = json.dumps(data, ensure_ascii=True, default=_tagged)
    if _ESCAPE in line or _BYTES_TAG in line or _REPR_TAG in line:
        # a tag may be ctxfs's own or the message's data: escape the data's keys, so that
        # decoding gives back exactly what was there
        line = json.dumps(_escaped(data), ensure_ascii=True, default=_tagged)
    return line


def _escaped(value: object) -> object:
    if isinstance(value, dict):
        return {
            (_ESCAPE + k if isinstance(k, str) and k.startswith(_KEYS) else k): _escaped(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_escaped(v) for v in value]
    return value


def decode_jsonl(data: bytes) -> list[BaseMessage]:
    """Returns the messages of :func:`encode_jsonl` bytes."""
    lines = data.decode("ascii").split("\n")
    return messages_from_dict([json.loads(line, object_hook=_untagged) for line in lines if line])


_BYTES_TAG = "__ctxfs_bytes_base64__"
_REPR_TAG = "__ctxfs_repr__"
_ESCAPE = "__ctxfs_escaped__"
_KEYS = (_BYTES_TAG, _REPR_TAG, _ESCAPE)


def _tagged(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return {_BYTES_TAG: base64.b64encode(bytes(value)).decode("ascii")}
    return {_REPR_TAG: repr(value)}


def _untagged(data: dict[str, Any]) -> object:
    if len(data) == 1 and isinstance(data.get(_BYTES_TAG), str):
        return base64.b64decode(data[_BYTES_TAG])
    if any(isinstance(k, str) and k.startswith(_ESCAPE) for k in data):
        return {(k[len(_ESCAPE) :] if k.startswith(_ESCAPE) else k): v for k, v in data.items()}
    return data


def _json_bytes(value: object, *, indent: int | None = None) -> bytes:
    text = json.dumps(value, ensure_ascii=True, indent=indent, default=_tagged)
    return (text + "\n").encode("ascii")


def _fence(text: str) -> str:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _verbatim(text: str) -> list[str]:
    fence = _fence(text)
    return [fence, text, fence] if text else ["(empty)"]


def _content_lines(message: BaseMessage) -> list[str]:
    content = message.content
    if isinstance(content, str):
        return _verbatim(content)
    out: list[str] = []
    for block in content:
        if isinstance(block, str):
            out += _verbatim(block)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            out += _verbatim(block["text"])
        else:
            raw = json.dumps(block, ensure_ascii=False, sort_keys=True, default=repr)
            clipped = raw if len(raw) <= 500 else f"{raw[:500]}… (complete in the .jsonl)"
            out.append(f"[{block.get('type', 'block')} block] {clipped}")
    return out or ["(empty)"]


def render_markdown(messages: Sequence[BaseMessage], *, thread_id: str, start: int) -> str:
    """Returns the readable Markdown twin of a segment.

    Each message gets a heading with its absolute position, type and id; its text (and every
    string tool argument) follows verbatim in a fenced block.
    """
    stop = start + len(messages) - 1
    lines = [
        f"# Transcript of thread {json.dumps(thread_id, ensure_ascii=False)}, "
        f"messages {start}-{stop}",
        "",
        "Every text below is verbatim. The .jsonl file next to this one holds the same "
        "messages losslessly (langchain_core messages_from_dict).",
    ]
    for offset, message in enumerate(messages):
        heading = f"## Message {start + offset}: {message.type}"
        if isinstance(message, ToolMessage):
            heading += f" result of {message.name or 'tool'} (call {message.tool_call_id})"
            if message.status != "success":
                heading += f", status {message.status}"
        if message.id:
            heading += f" [id {message.id}]"
        lines += ["", heading, "", *_content_lines(message)]
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                lines += ["", f"Tool call {call['name']} (id {call.get('id')}):"]
                for name, value in call["args"].items():
                    if isinstance(value, str):
                        lines += [f"- {name}:", *_verbatim(value)]
                    else:
                        shown = json.dumps(value, ensure_ascii=False, default=repr)
                        lines.append(f"- {name}: {shown}")
    return "\n".join(lines) + "\n"
