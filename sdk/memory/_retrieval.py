"""Retrieval at session start: keyword search over the memory and the archived transcripts.

The corpus is every fact of the memory documents under ``/memories/``, every message of the
archived transcripts under ``/transcripts/`` and every message of the memories' conversation
logs (``/memories/<namespace>/.conversations/``, so a session that never compacted is
searchable too; a message both logged and archived is searched once), long messages in
chunks of lines, read from the workspace, so it needs no infrastructure.
:class:`KeywordRetriever` ranks it with BM25 (the ``bm25s`` library).
:class:`~ctxfs.memory.StoreRetriever` serves the same corpus from any LangGraph
``BaseStore`` instead.

Scopes (:class:`Scope`): a namespace prefix (``("alice",)`` holds ``("alice", "coder")``),
tags (a fact matches when it has one of them), and threads: a namespace scopes the
transcripts too, to the threads its documents learned from (:attr:`MemoryDocument.threads`),
and the conversation logs to its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage

from ctxfs._archive._transcripts import decode_jsonl
from ctxfs._errors import MemoryFormatError, PathNotFoundError
from ctxfs._layout import MEMORIES_DIR, TRANSCRIPTS_DIR, safe_name
from ctxfs._messages import message_text
from ctxfs._workspace._workspace import Workspace
from ctxfs.memory._conversations import conversation_files, namespace_of, read_conversation
from ctxfs.memory._document import Fact, MemoryDocument, now_utc, parse_document

__all__ = [
    "CHUNK_CHARS",
    "Entry",
    "KeywordIndex",
    "KeywordRetriever",
    "MemoryHit",
    "Retriever",
    "Scope",
    "collect_entries",
]

_log = logging.getLogger("ctxfs.memory")

CHUNK_CHARS = 600
"""Transcript messages longer than this are searched (and recalled) in chunks of lines."""

HitKind = Literal["fact", "transcript"]


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One thing retrieval found.

    Attributes:
        kind: ``"fact"`` or ``"transcript"``.
        text: The fact, or the transcript chunk.
        score: The ranker's score (BM25, or the store's similarity); higher is better.
        path: Where it lives: the memory document, or the transcript's Markdown twin (both
            readable with the agent's tools).
        ref: The fact id, or ``segment-0001.jsonl#12`` (message 12 of that segment, 0-based;
            ``#12.1`` for its second chunk), or a conversation log's path and ``#12``.
        namespace: The memory namespace (facts, conversation logs), or ``()``.
        thread: The transcript's folder name under ``/transcripts/`` (a conversation log is
            named alike), or the fact's source.
        tags: The fact's tags.
    """

    kind: HitKind
    text: str
    score: float
    path: str
    ref: str
    namespace: tuple[str, ...] = ()
    thread: str = ""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Entry:
    """One searchable item of the corpus (a :class:`MemoryHit` without its score)."""

    kind: HitKind
    text: str
    path: str
    ref: str
    namespace: tuple[str, ...] = ()
    thread: str = ""
    tags: tuple[str, ...] = ()
    fact: Fact | None = None  # a fact entry's fact (its scope and expiry)

    def visible(self, scope: Scope) -> bool:
        """Whether a search in ``scope`` may return this entry (a fact's scope and expiry)."""
        if self.fact is None:
            return True
        now = now_utc() if scope.now is None else scope.now
        return self.fact.visible(task=scope.task, project=scope.project, now=now)

    def hit(self, score: float) -> MemoryHit:
        """This entry as a hit with ``score``."""
        return MemoryHit(
            self.kind, self.text, score, self.path, self.ref, self.namespace, self.thread, self.tags
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What a search looks at.

    Attributes:
        namespace: Only memory under this namespace prefix; with it, transcripts only of the
            threads its documents learned from (unless ``threads`` says otherwise).
        tags: Only facts with at least one of these tags (transcripts have none, and are
            searched as the other fields say).
        threads: Only transcripts of these threads (thread ids); ``None`` for the default
            above; ``()`` for no transcripts.
        kinds: Which kinds of entries to search.
        task: The task being worked on: its ``"task"`` facts are found, no other task's
            (``None``: no task fact at all).
        project: The project: its ``"project"`` facts are found, no other project's
            (``None``: those of no project).
        now: Facts expired by then are not found (``None``: the current time).
    """

    namespace: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    threads: tuple[str, ...] | None = None
    kinds: tuple[HitKind, ...] = ("fact", "transcript")
    task: str | None = None
    project: str | None = None
    now: datetime | None = None


@runtime_checkable
class Retriever(Protocol):
    """Finds what is relevant to a query in long-term memory."""

    def search(self, query: str, *, k: int = 5, scope: Scope | None = None) -> list[MemoryHit]:
        """The ``k`` best hits for ``query`` within ``scope``, best first."""
        ...


def _within(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[: len(prefix)] == prefix


def memory_documents(
    workspace: Workspace,
    prefix: tuple[str, ...] = (),
    *,
    on_skip: Callable[[str, Exception], None] | None = None,
) -> Iterator[tuple[str, MemoryDocument]]:
    """Every memory document under the namespace ``prefix``, with its path.

    A malformed document is skipped: passed to ``on_skip`` with the reason, by default a
    warning on the ``ctxfs.memory`` logger (it is reported by name where it is loaded to be
    changed).
    """
    base = "/".join((MEMORIES_DIR, *prefix))
    if not workspace.exists(base):
        return
    paths: list[str] = []
    folders: dict[str, None] = {}  # a folder where a memory file belongs: reported, once
    for path in workspace.glob("**", base, limit=1_000_000).paths:
        if path.endswith("/memory.json"):
            paths.append(path)
        elif "/memory.json/" in path:
            folders[path[: path.index("/memory.json/") + len("/memory.json")]] = None
    for folder in folders:
        exc = MemoryFormatError("a folder, not a memory file", path=folder)
        if on_skip is not None:
            on_skip(folder, exc)
        else:
            _log.warning("ctxfs memory: %s is skipped by retrieval: %s", folder, exc)
    for path in paths:
        try:
            document = parse_document(workspace.read_bytes(path), path)
        except (MemoryFormatError, PathNotFoundError) as exc:
            if on_skip is not None:
                on_skip(path, exc)
            else:
                _log.warning("ctxfs memory: %s is skipped by retrieval: %s", path, exc)
            continue
        if _within(document.namespace, prefix):
            yield path, document


def _chunks(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    if len(text) <= limit:
        return [text]
    chunks: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(line) > limit:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(line[:limit])
            line = line[limit:]
        if len(current) + len(line) > limit:
            chunks.append(current)
            current = ""
        current += line
    if current:
        chunks.append(current)
    return chunks


def _transcript_folders(workspace: Workspace, names: Sequence[str] | None) -> list[str]:
    if names is not None:
        return [f"{TRANSCRIPTS_DIR}/{name}" for name in names]
    if not workspace.exists(TRANSCRIPTS_DIR):
        return []
    return [info.path for info in workspace.ls(TRANSCRIPTS_DIR) if info.is_dir]


def namespace_folders(
    workspace: Workspace, documents: Sequence[tuple[str, MemoryDocument]], logs: Sequence[str]
) -> tuple[str, ...]:
    """The transcript folder names of the threads of some namespaces: those their documents
    learned from and those their conversation logs (``logs``, paths) hold."""
    names = [safe_name(t) for _, d in documents for t in d.threads]
    names += [path.rsplit("/", 1)[-1][: -len(".jsonl")] for path in logs]
    return tuple(dict.fromkeys(names))


def _segment(workspace: Workspace, path: str) -> list[BaseMessage]:
    """The messages of one archived segment; ``[]`` (with a warning) if it does not decode.

    A segment that is not the archive's JSON lines (a hand edit, a file nested thousands of
    levels deep, which makes the JSON reader give up with ``RecursionError``) is skipped by
    retrieval, named on the ``ctxfs.memory`` logger, instead of stopping the search.
    """
    try:
        return decode_jsonl(workspace.read_bytes(path))
    except PathNotFoundError:
        return []
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        _log.warning(
            "ctxfs memory: %s is skipped by retrieval: not a transcript (%s)", path, reason
        )
        return []


def transcript_entries(workspace: Workspace, folder: str) -> Iterator[Entry]:
    """The searchable chunks of one thread's archived segments."""
    if not workspace.exists(folder):
        return
    thread = folder.rsplit("/", 1)[-1]
    for path in workspace.glob("segment-*.jsonl", folder, limit=1_000_000).paths:
        name = path.rsplit("/", 1)[-1]
        twin = path[: -len(".jsonl")] + ".md"
        messages = _segment(workspace, path)
        for index, message in enumerate(messages):
            text = message_text(message)
            calls = getattr(message, "tool_calls", None) or []
            text += "".join(f"\n{c['name']} {c['args']}" for c in calls)
            for part, chunk in enumerate(_chunks(text.strip())):
                if chunk.strip():
                    ref = f"{name}#{index}" + (f".{part}" if part else "")
                    yield Entry("transcript", chunk, twin, ref, thread=thread)


def collect_entries(
    workspace: Workspace, scope: Scope | None = None, *, every_fact: bool = False
) -> list[Entry]:
    """The corpus of ``scope``: facts first, then transcript chunks, in a fixed order.

    ``every_fact`` keeps the facts of every task and project and the expired ones (what an
    index of the whole memory holds; its searches filter them).
    """
    scope = scope or Scope()
    entries: list[Entry] = []
    documents = list(memory_documents(workspace, scope.namespace))
    if "fact" in scope.kinds:
        wanted = set(scope.tags)
        for path, document in documents:
            for fact in document.facts:
                if wanted and not wanted.intersection(fact.tags):
                    continue
                entry = Entry(
                    "fact",
                    fact.content,
                    path,
                    fact.id,
                    document.namespace,
                    fact.source,
                    fact.tags,
                    fact,
                )
                if every_fact or entry.visible(scope):
                    entries.append(entry)
    if "transcript" in scope.kinds:
        logs = list(conversation_files(workspace, scope.namespace))
        folders = None if scope.threads is None else {safe_name(t) for t in scope.threads}
        names: Sequence[str] | None = None if folders is None else sorted(folders)
        if names is None and scope.namespace:
            names = namespace_folders(workspace, documents, logs)
        archived: set[tuple[str, str]] = set()
        for folder in _transcript_folders(workspace, names):
            for entry in transcript_entries(workspace, folder):
                archived.add((entry.thread, entry.text))
                entries.append(entry)
        for path in logs:
            for entry in conversation_entries(workspace, path):
                if folders is not None and entry.thread not in folders:
                    continue
                if (entry.thread, entry.text) not in archived:  # archived too: searched once
                    entries.append(entry)
    return entries


def conversation_entries(workspace: Workspace, path: str) -> Iterator[Entry]:
    """The searchable chunks of one conversation log (see :mod:`ctxfs.memory._conversations`)."""
    thread = path.rsplit("/", 1)[-1][: -len(".jsonl")]
    namespace = namespace_of(path)
    for index, line in enumerate(read_conversation(workspace, path)):
        for part, chunk in enumerate(_chunks(line.text.strip())):
            if chunk.strip():
                ref = f"{path}#{index}" + (f".{part}" if part else "")
                yield Entry("transcript", chunk, path, ref, namespace, thread)


def _tokenize(texts: list[str]) -> object:
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", show_progress=False)


@dataclass(slots=True)
class KeywordIndex:
    """A BM25 index over entries, built once, searched many times.

    Args:
        entries: The corpus.
    """

    entries: Sequence[Entry]
    _model: object = field(init=False, default=None)

    def __post_init__(self) -> None:
        try:
            import bm25s
        except ImportError as exc:  # pragma: no cover - bm25s is a dependency
            raise ImportError("keyword retrieval needs bm25s: pip install 'ctxfs[memory]'") from exc
        if self.entries:
            model = bm25s.BM25()
            model.index(_tokenize([e.text for e in self.entries]), show_progress=False)
            self._model = model

    def search(self, query: str, k: int = 5) -> list[MemoryHit]:
        """The ``k`` best entries for ``query`` (only entries sharing a word with it)."""
        if self._model is None or k <= 0 or not query.strip():
            return []
        tokens = _tokenize([query])
        if not getattr(tokens, "vocab", True):  # no word of the query is a searchable word
            return []
        import bm25s

        assert isinstance(self._model, bm25s.BM25)
        size = min(k, len(self.entries))
        found, scores = self._model.retrieve(tokens, k=size, show_progress=False, n_threads=1)
        hits = []
        for index, score in zip(found[0], scores[0], strict=True):
            if float(score) > 0:
                hits.append(self.entries[int(index)].hit(float(score)))
        return hits


class KeywordRetriever:
    """BM25 keyword search over a workspace's memory and archived transcripts.

    No infrastructure: the corpus is read from the workspace at each search (build a
    :class:`KeywordIndex` from :func:`collect_entries` to search one corpus many times).

    Args:
        workspace: The workspace (a read-only view is enough).
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    def index(self, scope: Scope | None = None) -> KeywordIndex:
        """An index of the corpus in ``scope``."""
        scope = scope or Scope()
        return KeywordIndex(collect_entries(self._workspace, scope))

    def search(self, query: str, *, k: int = 5, scope: Scope | None = None) -> list[MemoryHit]:
        """The ``k`` best hits for ``query`` within ``scope``, best first."""
        scope = scope or Scope()
        return self.index(scope).search(query, k)
