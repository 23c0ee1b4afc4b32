"""Searching the past: ``history_search`` and ``history_read`` over what a thread shed.

A summary paraphrases; the archive keeps every message byte-exact. These two tools let the
model find its way back into it without knowing file names:

- ``history_search`` ranks the archived messages of the thread (the transcript segments'
  JSONL files) and its offloaded files (``/tool_results/``, ``/tool_inputs/``, and the
  message texts moved out of a request that could not fit) by keyword
  relevance (BM25 over words) and returns the matching lines, each with where it is: the
  segment, the message in it, the line in that message (or the file and line).
- ``history_read`` returns a page of one archived message, its lines numbered as the search
  named them.

Both read the files themselves, not the index, so a segment is searchable as soon as its file
is written, whatever the state of the index; a committed segment's file is checked against
the size and SHA-256 its record holds, and one changed since is named, never shown as the
archived text. Both are bounded like the other tools (a page of at most the output budget,
a cap on what one search reads).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pydantic import Field

from ctxfs._errors import ArchiveError, WorkspaceError
from ctxfs._json import dumps_any
from ctxfs._layout import INPUTS_DIR, RESULTS_DIR, TRANSCRIPTS_DIR, file_name, safe_name
from ctxfs._workspace._textread import text_lines
from ctxfs._workspace._workspace import Workspace
from ctxfs.tools._args import ToolArgs
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._format import plural
from ctxfs.tools._function import ToolFunction
from ctxfs.tools._names import DEFAULT_NAMES, ToolNames

if TYPE_CHECKING:  # the archive and LangChain load when a history tool first runs
    from langchain_core.messages import BaseMessage

__all__ = [
    "HISTORY_ATTRIBUTE",
    "HistoryHit",
    "HistoryReadArgs",
    "HistorySearchArgs",
    "history_functions",
    "hit_line",
    "message_lines",
    "search_history",
]

HISTORY_ATTRIBUTE: Final = "__ctxfs_history_budget__"
"""Set on the history tools' implementations: the budget they page at (they are recovery
tools, exempt from offloading like ``read_file``; see :mod:`ctxfs.tools._identity`)."""

MAX_SCANNED_BYTES: Final = 64 * 1024 * 1024
"""The most bytes one search reads; beyond it the answer says what was left out."""

_WORD = re.compile(r"\w+")
_SEGMENT_FILE = re.compile(r"(.*/segment-\d{4,})\.(?:json|md)")
_K1, _B = 1.2, 0.75


@dataclass(frozen=True, slots=True)
class HistoryHit:
    """One line that matched.

    Attributes:
        path: The segment's JSONL file, or the offloaded file.
        message: The message's position in the segment (0-based); ``None`` for a file.
        role: The message's role (``user``, ``ai``, ``tool``...); ``""`` for a file.
        line: The line's number, 1-based, in the message (as ``history_read`` numbers it) or
            in the file (as ``read_file`` numbers it).
        text: The line.
        score: The relevance of its message or file (higher is better).
    """

    path: str
    message: int | None
    role: str
    line: int
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class _Document:
    path: str
    message: int | None
    role: str
    lines: tuple[str, ...]


def message_lines(message: BaseMessage) -> list[str]:
    """The lines of an archived message as the history tools show them.

    The text content first; then each tool call, its name and each argument (a text
    argument's lines as they are, others as JSON); other content blocks (images, audio) as
    one line naming their type. Texts are split into lines as ``read_file`` splits a file.
    """
    lines: list[str] = []
    content = message.content
    if isinstance(content, str):
        lines += text_lines(content)
    else:
        for block in content:
            if isinstance(block, str):
                lines += text_lines(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                lines += text_lines(str(block["text"]))
            elif isinstance(block, dict):
                lines.append(f"[{block.get('type', 'block')} block]")
    from langchain_core.messages import AIMessage

    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            lines.append(f"[tool call {call['name']}]")
            for key, value in call["args"].items():
                if isinstance(value, str):
                    lines.append(f"{key}:")
                    lines += text_lines(value)
                else:
                    lines.append(f"{key}: {dumps_any(value, sort_keys=False)}")
    return lines


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _documents(
    workspace: Workspace,
    thread_id: str | None,
    notes: list[str],
    keep: frozenset[str] | None = None,
    left_out: list[str] | None = None,
    expected: frozenset[str] = frozenset(),
) -> Iterator[_Document]:
    """Every archived message and offloaded file of the thread (of all threads if ``None``);
    of the segments, only those in ``keep`` when it is given (the others go to ``left_out``).
    A committed segment (one that a record or Markdown twin stands for, or in ``expected``)
    whose lossless file is missing is named in ``notes``."""
    scanned = 0
    roots = [TRANSCRIPTS_DIR, RESULTS_DIR, INPUTS_DIR]
    if thread_id is not None:
        # a thread's transcripts are under its hashed name, its saved files under its id
        # when that is a plain file name (see ctxfs._layout)
        named = file_name(thread_id)
        roots = [
            f"{TRANSCRIPTS_DIR}/{safe_name(thread_id)}",
            f"{RESULTS_DIR}/{named}",
            f"{INPUTS_DIR}/{named}",
        ]
    for root in roots:
        try:
            if not workspace.exists(root):
                continue
            paths = sorted(workspace.glob("**/*", root).paths)
        except WorkspaceError as exc:
            notes.append(f"{root} could not be listed ({exc})")
            continue
        if root.startswith(TRANSCRIPTS_DIR):
            notes += _missing_segments(paths, keep, expected)
        for path in paths:
            # a message's text moved out of a request that could not fit is a plain file
            transcript = root.startswith(TRANSCRIPTS_DIR) and not _MOVED_TEXT.fullmatch(path)
            if transcript and not path.endswith(".jsonl"):
                continue  # the Markdown twins and the index say the same again
            if transcript and keep is not None and path not in keep:
                if left_out is not None:
                    left_out.append(path)
                continue
            try:
                size = workspace.info(path).size or 0
                if scanned + size > MAX_SCANNED_BYTES:
                    notes.append(f"{path} and later files were not searched (over the cap)")
                    return
                data = workspace.read_bytes(path)
            except WorkspaceError:
                continue  # a folder, or a file gone meanwhile
            scanned += len(data)
            if transcript:
                try:
                    changed = _unvouched(workspace, path, data)
                    messages = _decode(data)
                except WorkspaceError as exc:
                    notes.append(f"{path} was not searched: {exc}")
                    continue
                except ValueError:
                    notes.append(f"{path} is not a readable transcript")
                    continue
                if changed is not None:
                    notes.append(f"{changed}; it was not searched")
                    continue
                for number, message in enumerate(messages):
                    yield _Document(path, number, message.type, tuple(message_lines(message)))
            else:
                text = data.decode("utf-8", errors="replace")
                yield _Document(path, None, "", tuple(text_lines(text)))


_MOVED_TEXT: Final = re.compile(rf"{re.escape(TRANSCRIPTS_DIR)}/[^/]+/messages/[^/]+")
"""Where :mod:`ctxfs._pointers._moved` saves a message's text (see :mod:`ctxfs._layout`)."""


def _missing_segments(
    paths: list[str], keep: frozenset[str] | None, expected: frozenset[str]
) -> list[str]:
    """What to say of the committed segments whose lossless file is not among ``paths``;
    otherwise a search would answer "no match" for messages it never read."""
    there = {m.group(1) + ".jsonl" for p in paths if (m := _SEGMENT_FILE.fullmatch(p))}
    wanted = (there if keep is None else there & keep) | expected
    return [
        f"{path} is missing (or not a file), so the archived messages it held were not searched"
        for path in sorted(wanted - set(paths))
    ]


def search_history(
    workspace: Workspace,
    query: str,
    *,
    thread_id: str | None = None,
    notes: list[str] | None = None,
    leaf: int | None = None,
) -> list[HistoryHit]:
    """Every line matching ``query`` in a thread's archive and offloaded files, best first.

    Messages and files are ranked by BM25 over the query's words; within one, its lines that
    hold the whole query (case-insensitive) come first, then lines with most query words.
    Only lines holding at least one query word are hits.

    Args:
        workspace: Where the thread's files are.
        query: Words to look for (or an exact phrase).
        thread_id: The conversation; ``None`` searches every thread.
        notes: If given, what could not be searched is appended to it.
        leaf: The last segment of the thread's history being searched for (``0``: none);
            segments of its other branches are left out. ``None``: every segment.

    Raises:
        ValueError: ``query`` holds no word.
    """
    terms = list(dict.fromkeys(_words(query)))
    if not terms:
        raise ValueError("the query holds no word to search for; give some words")
    phrase = " ".join(query.split()).casefold()
    notes = notes if notes is not None else []
    keep, expected = _branch_paths(workspace, thread_id, leaf, notes)
    left_out: list[str] = []
    documents = list(_documents(workspace, thread_id, notes, keep, left_out, expected))
    if left_out:
        notes.append(
            f"left out: {plural(len(left_out), 'archived segment')} of other branches of this "
            "thread, which are not the history that led here (a retried turn or time travel)"
        )
    if not documents:
        return []
    counts = [Counter(_words("\n".join(d.lines))) for d in documents]
    average = sum(sum(c.values()) for c in counts) / len(counts) or 1.0
    total = len(documents)
    frequency = {t: sum(1 for c in counts if c[t]) for t in terms}
    hits: list[HistoryHit] = []
    for document, count in zip(documents, counts, strict=True):
        length = sum(count.values())
        score = 0.0
        for term in terms:
            tf = count[term]
            if tf:
                idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / average))
        if score <= 0:
            continue
        ranked: list[tuple[int, int, int]] = []
        for number, line in enumerate(document.lines, 1):
            folded = " ".join(line.split()).casefold()
            held = set(_words(line)) & set(terms)
            if held:
                ranked.append((0 if phrase in folded else 1, -len(held), number))
        for _, _, number in sorted(ranked):
            text = document.lines[number - 1]
            hits.append(
                HistoryHit(document.path, document.message, document.role, number, text, score)
            )
    return sorted(hits, key=lambda h: -h.score)  # stable: line order kept within a document


class HistorySearchArgs(ToolArgs):
    """Arguments of ``history_search``."""

    query: str = Field(description="Words to find in the archived conversation and files.")
    offset: int = Field(default=0, ge=0, description="Skip this many hits (the next page).")


class HistoryReadArgs(ToolArgs):
    """Arguments of ``history_read``."""

    segment: str = Field(description="The segment's .jsonl path, as history_search named it.")
    message: int = Field(
        ge=0,
        description="The message's number in that segment, from 0: the #N of its heading in "
        "the .md, not its number in the thread.",
    )
    offset: int = Field(default=0, ge=0, description="0-based first line to show.")
    column: int = Field(
        default=0, ge=0, description="0-based first character of that line (to read on in it)."
    )


_SEARCH: Final = (
    "Search what earlier parts of this conversation said, byte-exact: the archived messages "
    "that a summary replaced, and long tool results, tool inputs and messages that were "
    "saved to files. "
    "Ranked by keyword relevance. Each hit names the segment and message (open it with "
    "history_read) or the file and line (open it with {read_file} from offset=line-1)."
)
_READ: Final = (
    "Read one archived message of this conversation in full, its lines numbered, from the "
    "segment and message that history_search or a summary named. The last line of a page "
    "says how to read on (a line too long for one page, from a column)."
)
_LINE_CHARS: Final = 500


def history_functions(
    workspace: Workspace,
    budget: OutputBudget,
    *,
    thread_id: str | Callable[[], str | None] | None = None,
    names: ToolNames = DEFAULT_NAMES,
    branch: Callable[[], int | None] | None = None,
) -> list[ToolFunction]:
    """``history_search`` and ``history_read`` as :class:`ToolFunction` objects.

    Args:
        workspace: Where the archive is.
        budget: Most tokens of one answer.
        thread_id: The conversation searched, or a function giving it at each call (the
            current run's); ``None`` searches every thread.
        names: The names of the tools the texts send the model to (a file hit is opened with
            ``names.read_file``).
        branch: A function giving, at each call, the last archived segment of the history
            the model is in (``0``: none yet), or ``None`` when that is not known. A thread
            that forked (time travel, a retried turn) has segments of other branches: the
            search leaves them out and says how many, a read of one says whose it is.
    """

    def leaf() -> int | None:
        return branch() if branch is not None else None

    def current() -> str | None:
        return thread_id() if callable(thread_id) else thread_id

    def search(query: str, offset: int = 0) -> str:
        notes: list[str] = []
        hits = search_history(workspace, query, thread_id=current(), notes=notes, leaf=leaf())
        if not hits:
            return "No match in the archived conversation or the saved files." + "".join(
                f"\n({note})" for note in notes
            )
        page = budget.fixed()
        if offset >= len(hits):
            return f"Error: offset {offset} is past the last of {plural(len(hits), 'hit')}"
        entries = [hit_line(h) for h in hits[offset:]]

        def tail(shown: int) -> list[str]:
            out = [f"({note})" for note in notes]
            if offset + shown < len(hits):
                out.append(
                    f"[{plural(len(hits), 'hit')}; showing {offset + 1}-{offset + shown}: "
                    f"call history_search with offset={offset + shown} for more]"
                )
            return out

        return page.fit(entries, tail)[1]

    def read(segment: str, message: int, offset: int = 0, column: int = 0) -> str:
        path = workspace.resolve(segment)
        if not path.startswith(TRANSCRIPTS_DIR + "/") or not path.endswith(".jsonl"):
            raise ValueError(
                f"{segment}: not a transcript segment; give the .jsonl path history_search "
                "named (under /transcripts/)"
            )
        data = workspace.read_bytes(path)
        changed = _unvouched(workspace, path, data)
        if changed is not None:
            raise ArchiveError(
                f"{changed}; {names.read_file} shows what it holds now, with no such guarantee"
            )
        messages = _decode(data)
        if message >= len(messages):
            raise ValueError(
                f"{path} holds {plural(len(messages), 'message')} (numbered from 0); there is "
                f"no message {message}"
            )
        chosen = messages[message]
        lines = message_lines(chosen)
        if offset and offset >= len(lines):
            return f"Error: offset {offset} is past the last of {plural(len(lines), 'line')}"
        first = lines[offset] if lines else ""
        if column and column >= len(first):
            return (
                f"Error: line {offset + 1} has {plural(len(first), 'character')}; column "
                f"{column} is past its end"
            )
        header = f"[{path} message {message} ({chosen.type}), {plural(len(lines), 'line')}]"
        on_branch = _branch_paths(workspace, current(), leaf(), [])[0]
        if on_branch is not None and path not in on_branch:
            header += f"\n[{_OTHER_BRANCH}]"

        def entry(number: int, text: str, start: int = 0) -> str:
            return (
                f"{number:6}\t[from character {start}] {text}" if start else f"{number:6}\t{text}"
            )

        rest = (entry(n, line) for n, line in enumerate(lines[offset + 1 :], offset + 2))
        entries = [header, *([entry(offset + 1, first[column:], column)] if lines else ()), *rest]
        page = budget.fixed()

        def tail(shown: int) -> list[str]:
            done = offset + max(shown - 1, 0)
            if done < len(lines):
                return [f"[call history_read with offset={done} for the next lines]"]
            return []

        shown, text = page.fit(entries, tail)
        if shown > 1 or not lines:
            return text

        # The page's first line alone is over the budget: as much of it as fits, and the
        # column to go on from (a one-line JSON result is read piece by piece).
        def part(piece: str) -> str:
            end = column + len(piece)
            if end >= len(first):
                return "\n".join([header, entry(offset + 1, piece, column), *tail(2)])
            return "\n".join(
                [
                    header,
                    f"{entry(offset + 1, piece, column)} … [line clipped: {len(first)} chars; "
                    f"call history_read with offset={offset}, column={end} to read on in this "
                    "line]",
                ]
            )

        piece = page.longest_prefix(first[column:], part)
        return page.clip(part(first[column : column + 1] if piece is None else piece))

    def clip(text: str) -> str:
        return budget.fixed().clip(text)

    for function in (search, read):  # ctxfs's own recovery tools, told by identity
        setattr(function, HISTORY_ATTRIBUTE, budget)
    return [
        ToolFunction(
            "history_search",
            _SEARCH.format(read_file=names.read_file),
            HistorySearchArgs,
            search,
            clip_output=clip,
        ),
        ToolFunction("history_read", _READ, HistoryReadArgs, read, clip_output=clip),
    ]


def hit_line(hit: HistoryHit) -> str:
    """One hit as ``history_search`` shows it: where it is, then the line (clipped)."""
    text = hit.text if len(hit.text) <= _LINE_CHARS else hit.text[:_LINE_CHARS] + "…"
    if hit.message is None:
        return f"{hit.path}:{hit.line}: {text}"
    return f"{hit.path} message {hit.message} ({hit.role}) line {hit.line}: {text}"


_OTHER_BRANCH: Final = (
    "this segment is on another branch of the thread (a retried turn or time travel): not "
    "the history that led here"
)


def _branch_paths(
    workspace: Workspace, thread_id: str | None, leaf: int | None, notes: list[str]
) -> tuple[frozenset[str] | None, frozenset[str]]:
    """The lossless files of the segments of the history that ends at segment ``leaf``, or
    ``None`` (every segment) when that is not known or the thread never forked; and those
    of the committed segments searched (the branch's, or every one), which must be there,
    with the segments their records name as parents."""
    if thread_id is None:
        return None, frozenset()
    from ctxfs._archive._branches import chain
    from ctxfs._archive._transcripts import TranscriptArchive

    archive = TranscriptArchive(workspace, thread_id)
    try:
        segments = archive.segments()
    except WorkspaceError as exc:
        notes.append(f"the thread's branches could not be read ({exc}); every one was searched")
        return None, frozenset()
    mine = None if leaf is None else chain(segments, leaf)
    if leaf == 0:
        return frozenset(), frozenset()
    known = mine or segments  # not known, or a segment the index does not know: every one
    numbers = {segment.number for segment in segments}
    # a parent no record describes is on the branch all the same: its file is searched if
    # it is there, and named if not
    expected = frozenset(
        {segment.jsonl_path for segment in known}
        | {archive.segment_paths(p)[0] for s in known if (p := s.parent) and p not in numbers}
    )
    return (expected if mine else None), expected


def _unvouched(workspace: Workspace, path: str, data: bytes) -> str | None:
    from ctxfs._archive._segment import unvouched

    return unvouched(workspace, path, data)


def _decode(data: bytes) -> list[BaseMessage]:
    from ctxfs._archive._transcripts import decode_jsonl

    return decode_jsonl(data)
