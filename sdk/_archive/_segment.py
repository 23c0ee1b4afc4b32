"""One transcript segment's entry, and where a thread's archive files live.

Layout, per thread (``<thread>`` is :func:`ctxfs._layout.safe_name` of the thread id)::

    /transcripts/<thread>/segment-0001.jsonl   lossless: one message per line
    /transcripts/<thread>/segment-0001.md      readable twin, every text verbatim
    /transcripts/<thread>/segment-0001.json    its record: the index entry, on its own
    /transcripts/<thread>/index-0001.json      a full page: entries of segments 1-32
    /transcripts/<thread>/index.json           the head: the page count and later entries

:class:`ThreadFolder` names these files and does the archive's storage calls: create-only
writes that tell "already there, identical" from "taken", read-backs that verify, reads
whose failures become :class:`~ctxfs._errors.ArchiveError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ctxfs._archive._codec import sha
from ctxfs._errors import (
    ArchiveError,
    ConflictError,
    PathExistsError,
    PathNotFoundError,
    WorkspaceError,
)
from ctxfs._json import loads_bounded
from ctxfs._layout import TRANSCRIPTS_DIR, safe_name
from ctxfs._messages import text_blocks
from ctxfs._workspace._workspace import Workspace

__all__ = [
    "INDEX_NAME",
    "ArchiveSegment",
    "ThreadFolder",
    "segment_number",
    "thread_transcript_dir",
    "unvouched",
]

INDEX_NAME = "index.json"
"""File name of the per-thread index."""

_WRITE_ATTEMPTS = 3
_SEGMENT_FILE = re.compile(r"segment-(\d{4,})\.(?:jsonl|md|json)")


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
        parent: The segment this one continues: its messages come right after that
            segment's in the history that was compacted (``0``: it starts the thread). Two
            segments with one parent are a fork: each starts a branch of its own. ``None``
            only in entries written before branches existed; the index infers it.
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
    parent: int | None = None

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
        if not isinstance(data, Mapping):
            raise ArchiveError(f"malformed transcript index entry: {type(data).__name__}")
        fields = cls.__dataclass_fields__
        try:
            segment = cls(**{name: data[name] for name in fields if name in data})
        except (KeyError, TypeError) as exc:
            raise ArchiveError(f"malformed transcript index entry: {exc}") from None
        problem = _type_problem(segment)
        if problem is not None:
            raise ArchiveError(f"malformed transcript index entry: {problem}")
        return segment


_COUNTS = ("number", "start", "stop", "tokens", "jsonl_bytes", "markdown_bytes")
_TEXTS = ("created", "jsonl_path", "jsonl_sha256", "markdown_path", "markdown_sha256")


def _type_problem(segment: ArchiveSegment) -> str | None:
    """What is wrong with the types or ranges of a parsed entry, or ``None``."""
    for name in _COUNTS:
        value = getattr(segment, name)
        if type(value) is not int or value < 0:
            return f"{name} is {value!r}, not a count"
    for name in _TEXTS:
        if not isinstance(getattr(segment, name), str):
            return f"{name} is {getattr(segment, name)!r}, not text"
    if segment.number < 1 or segment.stop < segment.start:
        return f"segment {segment.number} holds messages {segment.start}-{segment.stop - 1}"
    parent = segment.parent
    if parent is not None and (type(parent) is not int or not 0 <= parent < segment.number):
        return f"parent is {parent!r}, not an earlier segment"
    if segment.summary_message is not None and not isinstance(segment.summary_message, dict):
        return "summary_message is not a message"
    return None


def thread_transcript_dir(thread_id: str) -> str:
    """Returns the virtual folder of a thread's transcripts."""
    return f"{TRANSCRIPTS_DIR}/{safe_name(thread_id)}"


def segment_number(path: str) -> int | None:
    """Returns the segment number a segment file's name gives, if it is one."""
    found = _SEGMENT_FILE.fullmatch(path.rsplit("/", 1)[-1])
    return int(found.group(1)) if found is not None else None


def unvouched(workspace: Workspace, path: str, data: bytes) -> str | None:
    """Why ``data``, read from the segment file ``path``, is not what its record vouches
    for; ``None`` when it is, or when no record can say (a segment not committed yet, an
    archive from before records, a record that is missing or torn).

    A segment file is written once and never changed: bytes that differ from the size and
    SHA-256 its record holds were changed afterwards (a user, a script, a disk), and its
    messages are not the ones archived.

    Raises:
        ArchiveError: The record could not be asked for.
    """
    number = segment_number(path)
    if number is None:
        return None
    record = f"{path.rsplit('/', 1)[0]}/segment-{number:04d}.json"
    segment = _record_at(workspace, record)
    if segment is None:
        return None
    if path.endswith(".jsonl"):
        size, digest = segment.jsonl_bytes, segment.jsonl_sha256
    elif path.endswith(".md"):
        size, digest = segment.markdown_bytes, segment.markdown_sha256
    else:
        return None
    if len(data) == size and sha(data) == digest:
        return None
    return (
        f"{path} was changed after it was archived: its size and SHA-256 differ from those "
        f"its record {record} holds, so what it holds now is not the archived text"
    )


class ThreadFolder:
    """A thread's transcript folder: its file names, and the storage calls on them.

    Args:
        workspace: The SDK's writable workspace.
        thread_id: The conversation; names the folder.
    """

    def __init__(self, workspace: Workspace, thread_id: str) -> None:
        self.workspace = workspace
        self.thread_id = thread_id
        self.directory = thread_transcript_dir(thread_id)

    @property
    def index_path(self) -> str:
        """The head of the thread's index."""
        return f"{self.directory}/{INDEX_NAME}"

    def segment_paths(self, number: int) -> tuple[str, str]:
        """Returns the (JSONL, Markdown) paths of segment ``number``."""
        stem = f"{self.directory}/segment-{number:04d}"
        return f"{stem}.jsonl", f"{stem}.md"

    def record_path(self, number: int) -> str:
        """Returns the path of segment ``number``'s record: its index entry, on its own."""
        return f"{self.directory}/segment-{number:04d}.json"

    def page_path(self, page: int) -> str:
        """Returns the path of full index page ``page`` (1, 2, ...)."""
        return f"{self.directory}/index-{page:04d}.json"

    def owns(self, path: str) -> bool:
        """Whether ``path`` is in this thread's folder."""
        return path.startswith(self.directory + "/")

    def put(self, path: str, data: bytes) -> bool:
        """Writes create-only; True if ``path`` now holds ``data``, False if taken.

        A write whose answer was lost (it failed, yet the file is there) is recognised by
        reading it back: holding ``data``, it is this write, done. A file that holds other
        bytes (another writer's, or a torn write) means the name is taken.
        """
        failure: Exception | None = None
        for _attempt in range(_WRITE_ATTEMPTS):
            try:
                self.workspace.write_bytes(path, data, create_only=True)
            except PathExistsError:
                return self.read_bytes(path) == data
            except (WorkspaceError, OSError) as exc:
                failure = exc
                try:
                    back = self.workspace.read_bytes(path)
                except (WorkspaceError, OSError):
                    continue  # not there, or the storage cannot say: write again
                return back == data
            else:
                return True
        raise ArchiveError(f"could not write {path}: {failure}") from failure

    def put_record(self, path: str, data: bytes) -> ArchiveSegment | None:
        """Writes a segment's record create-only (the commit).

        Returns ``None`` when ``path`` now holds ``data``; else the record already there
        (committed by an earlier run of this compaction, or another writer's). A torn
        record in the way (a write cut off mid-way) is replaced, on the version read.
        """
        if self.put(path, data):
            return None
        recorded = self.read_record(path)
        if recorded is not None:
            return recorded
        try:
            _, version = self.workspace.read_versioned(path)
            self.workspace.write_bytes(path, data, if_version=version)
        except ConflictError:
            recorded = self.read_record(path)  # someone else replaced it meanwhile
            if recorded is None:
                raise ArchiveError(f"{path} is torn and keeps changing") from None
            return recorded
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not replace the torn record {path}: {exc}") from exc
        self.verify(path, data)
        return None

    def verify(self, path: str, data: bytes) -> None:
        """Reads ``path`` back; raises unless it holds ``data``."""
        back = self.read_bytes(path)
        if len(back) != len(data) or sha(back) != sha(data):
            raise ArchiveError(f"{path} did not read back identical after writing")

    def read_bytes(self, path: str) -> bytes:
        """Reads ``path``; any failure is an :class:`~ctxfs._errors.ArchiveError`."""
        try:
            return self.workspace.read_bytes(path)
        except (WorkspaceError, OSError) as exc:
            raise ArchiveError(f"could not read back {path}: {exc}") from exc

    def read_record(self, path: str) -> ArchiveSegment | None:
        """A segment's record; ``None`` if it is missing or torn."""
        return _record_at(self.workspace, path)


def _record_at(workspace: Workspace, path: str) -> ArchiveSegment | None:
    try:
        raw = workspace.read_bytes(path)
    except PathNotFoundError:
        return None
    except (WorkspaceError, OSError) as exc:
        raise ArchiveError(f"could not read {path}: {exc}") from exc
    try:
        return ArchiveSegment.from_json(loads_bounded(raw))
    except (ValueError, TypeError, AttributeError, RecursionError, ArchiveError):
        return None  # a torn record
