"""Long-term retrieval served by any LangGraph ``BaseStore``.

:meth:`StoreRetriever.sync` copies the workspace's corpus (facts of the memory documents,
chunks of the archived transcripts, see :mod:`ctxfs.memory._retrieval`) into the store;
:meth:`StoreRetriever.search` asks the store. The workspace stays the source of truth: the
store is an index of it, and ``sync`` can rebuild it any time.

Items, under the ``prefix`` (``("ctxfs",)`` by default)::

    (*prefix, "facts", *namespace)        key: fact id         value: Entry fields
    (*prefix, "docs", *namespace)         key: "threads"       value: {"folders": [...]}
    (*prefix, "transcripts", <folder>)    key: <ref>           value: Entry fields
    (*prefix, "conversations", *namespace) key: <ref>          value: Entry fields

Labels: a LangGraph namespace label may not hold a ``.`` (PostgreSQL joins the labels with
dots), and a memory namespace segment or a thread folder may (``("alice.smith",)``); every
label ctxfs puts in a store is written with ``%`` escapes (``alice%2Esmith``, ``%`` itself
as ``%25``), so any namespace and any thread syncs. The values keep the real names.

Ranking: a store built with an embedding index (``InMemoryStore(index=...)``,
``PostgresStore(index=...)`` on pgvector) ranks by similarity of the ``text`` field. A
store without one (a ``PostgresStore`` on a server without pgvector) only lists and
filters; the candidates it returns are then ranked with BM25 here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from langgraph.store.base import BaseStore, Item, PutOp, SearchItem

from ctxfs._layout import MEMORIES_DIR, safe_name
from ctxfs._workspace._workspace import Workspace
from ctxfs.memory._conversations import conversation_files, namespace_of
from ctxfs.memory._document import Fact
from ctxfs.memory._retrieval import (
    Entry,
    KeywordIndex,
    MemoryHit,
    Scope,
    collect_entries,
    memory_documents,
    namespace_folders,
)

__all__ = ["StoreRetriever"]

_PAGE = 500


def store_label(name: str) -> str:
    """``name`` as a LangGraph namespace label: ``%`` and ``.`` written ``%25`` and ``%2E``.

    >>> store_label("alice.smith")
    'alice%2Esmith'
    """
    return name.replace("%", "%25").replace(".", "%2E")


def _labels(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(store_label(n) for n in names)


def _logged(entry: Entry) -> bool:
    """Whether ``entry`` comes from a memory's conversation log (not the archive)."""
    return entry.kind == "transcript" and entry.path.startswith(MEMORIES_DIR + "/")


def _value(entry: Entry) -> dict[str, Any]:
    return {
        "kind": entry.kind,
        "text": entry.text,
        "path": entry.path,
        "ref": entry.ref,
        "namespace": list(entry.namespace),
        "thread": entry.thread,
        "tags": list(entry.tags),
        "fact": None if entry.fact is None else entry.fact.model_dump(mode="json"),
    }


def _entry(item: Item) -> Entry:
    v = item.value
    return Entry(
        v["kind"],
        v["text"],
        v["path"],
        v["ref"],
        tuple(v.get("namespace", ())),
        v.get("thread", ""),
        tuple(v.get("tags", ())),
        None if v.get("fact") is None else Fact.model_validate(v["fact"]),
    )


class StoreRetriever:
    """Retrieval through a LangGraph ``BaseStore`` (in memory, PostgreSQL, any other).

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> from ctxfs import Workspace
        >>> retriever = StoreRetriever(InMemoryStore())
        >>> retriever.sync(Workspace("memory://store-doc"))
        0

    Args:
        store: The store.
        prefix: The namespace prefix of every item ctxfs puts there.
    """

    def __init__(self, store: BaseStore, *, prefix: tuple[str, ...] = ("ctxfs",)) -> None:
        self._store = store
        self._prefix = _labels(prefix)

    @property
    def store(self) -> BaseStore:
        """The LangGraph store."""
        return self._store

    def _semantic(self) -> bool:
        return bool(getattr(self._store, "index_config", None))

    def sync(self, workspace: Workspace, scope: Scope | None = None) -> int:
        """Copies the corpus of ``scope`` into the store (items are replaced by key).

        Items of facts or transcripts that are gone from the workspace are removed: after a
        ``forget``, the store forgets too.

        Returns:
            How many items were put.
        """
        scope = scope or Scope()
        entries = collect_entries(workspace, scope, every_fact=True)
        wanted: set[tuple[tuple[str, ...], str]] = set()
        documents = list(memory_documents(workspace, scope.namespace))
        logs = list(conversation_files(workspace, scope.namespace))
        namespaces = {d.namespace for _, d in documents} | {namespace_of(p) for p in logs}
        for name in sorted(namespaces):
            folders = namespace_folders(
                workspace,
                [(p, d) for p, d in documents if d.namespace == name],
                [p for p in logs if namespace_of(p) == name],
            )
            namespace = (*self._prefix, "docs", *_labels(name))
            self._store.put(namespace, "threads", {"folders": list(folders)}, index=False)
        # in batches, so the embeddings are computed in batches too; a text twice in one
        # batch ends it (InMemoryStore embeds each distinct text once and then miscounts)
        batch: list[PutOp] = []
        texts: set[str] = set()
        for entry in entries:
            namespace = self._namespace_of(entry)
            wanted.add((namespace, entry.ref))
            if len(batch) >= _PAGE or entry.text in texts:
                self._store.batch(batch)
                batch, texts = [], set()
            batch.append(PutOp(namespace, entry.ref, _value(entry), index=["text"]))
            texts.add(entry.text)
        if batch:
            self._store.batch(batch)
        for kind in ("facts", "transcripts", "conversations"):
            for item in self._items((*self._prefix, kind)):
                if (tuple(item.namespace), item.key) not in wanted and self._in_scope(item, scope):
                    self._store.delete(tuple(item.namespace), item.key)
        return len(entries)

    def _in_scope(self, item: Item, scope: Scope) -> bool:
        entry = _entry(item)
        within = entry.namespace[: len(scope.namespace)] == scope.namespace
        if entry.kind == "fact":
            return "fact" in scope.kinds and within
        if _logged(entry):
            return "transcript" in scope.kinds and scope.threads is None and within
        return "transcript" in scope.kinds and scope.threads is None and not scope.namespace

    def _namespace_of(self, entry: Entry) -> tuple[str, ...]:
        if entry.kind == "fact":
            return (*self._prefix, "facts", *_labels(entry.namespace))
        if _logged(entry):
            return (*self._prefix, "conversations", *_labels(entry.namespace))
        return (*self._prefix, "transcripts", store_label(entry.thread))

    def _items(self, namespace: tuple[str, ...]) -> Iterator[SearchItem]:
        offset = 0
        while True:
            page = self._store.search(namespace, limit=_PAGE, offset=offset)
            yield from page
            if len(page) < _PAGE:
                return
            offset += _PAGE

    def _folders(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        """The transcript folders of the threads of the namespaces under ``namespace``."""
        found: dict[str, None] = {}
        for item in self._items((*self._prefix, "docs", *_labels(namespace))):
            found.update(dict.fromkeys(item.value.get("folders", ())))
            # an item synced before conversation logs lists thread ids
            found.update(dict.fromkeys(safe_name(t) for t in item.value.get("threads", ())))
        return tuple(found)

    def _searched(self, scope: Scope) -> list[tuple[tuple[str, ...], dict[str, Any] | None]]:
        """The store namespaces to search, each with its filter."""
        spaces: list[tuple[tuple[str, ...], dict[str, Any] | None]] = []
        if "fact" in scope.kinds:
            spaces.append(((*self._prefix, "facts", *_labels(scope.namespace)), None))
        if "transcript" in scope.kinds:
            folders = None if scope.threads is None else [safe_name(t) for t in scope.threads]
            if folders is None and scope.namespace:
                folders = list(self._folders(scope.namespace))
            spaces.append(((*self._prefix, "conversations", *_labels(scope.namespace)), None))
            if folders is None:
                spaces.append(((*self._prefix, "transcripts"), None))
            else:
                for folder in dict.fromkeys(folders):
                    spaces.append(((*self._prefix, "transcripts", store_label(folder)), None))
        return spaces

    def search(self, query: str, *, k: int = 5, scope: Scope | None = None) -> list[MemoryHit]:
        """The ``k`` best hits for ``query`` within ``scope``, best first."""
        scope = scope or Scope()
        if k <= 0 or not query.strip():
            return []
        wanted = set(scope.tags)
        folders = None if scope.threads is None else {safe_name(t) for t in scope.threads}

        def keep(entry: Entry) -> bool:
            if entry.kind == "fact":
                tagged = not wanted or bool(wanted.intersection(entry.tags))
                return tagged and entry.visible(scope)
            return folders is None or not _logged(entry) or entry.thread in folders

        if not self._semantic():
            candidates = [
                _entry(item)
                for namespace, _ in self._searched(scope)
                for item in self._items(namespace)
            ]
            return KeywordIndex([e for e in candidates if keep(e)]).search(query, k)
        hits: list[MemoryHit] = []
        for namespace, where in self._searched(scope):
            # Tags are filtered here (a store filter matches a list only whole): ask for
            # more until k are kept or the store has no more.
            limit = k
            while True:
                found = self._store.search(namespace, query=query, filter=where, limit=limit)
                scored = [(_entry(item), float(item.score or 0.0)) for item in found]
                kept = [entry.hit(score) for entry, score in scored if keep(entry)]
                if len(kept) >= k or len(found) < limit:
                    break
                limit *= 4
            hits.extend(kept)
        hits.sort(key=lambda h: -h.score)
        return hits[:k]
