"""Long-term retrieval served by any LangGraph ``BaseStore``.

:meth:`StoreRetriever.sync` copies the workspace's corpus (facts of the memory documents,
chunks of the archived transcripts, see :mod:`ctxfs.memory._retrieval`) into the store;
:meth:`StoreRetriever.search` asks the store. The workspace stays the source of truth: the
store is an index of it, and ``sync`` can rebuild it any time.

Items, under the ``prefix`` (``("ctxfs",)`` by default)::

    (*prefix, "facts", *namespace)        key: fact id         value: Entry fields
    (*prefix, "docs", *namespace)         key: "threads"       value: {"threads": [...]}
    (*prefix, "transcripts", <folder>)    key: <ref>           value: Entry fields

Ranking: a store built with an embedding index (``InMemoryStore(index=...)``,
``PostgresStore(index=...)`` on pgvector) ranks by similarity of the ``text`` field. A
store without one (a ``PostgresStore`` on a server without pgvector) only lists and
filters; the candidates it returns are then ranked with BM25 here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langgraph.store.base import BaseStore, Item, SearchItem

from ctxfs._archive._transcripts import thread_transcript_dir
from ctxfs._workspace._workspace import Workspace
from ctxfs.memory._retrieval import (
    Entry,
    KeywordIndex,
    MemoryHit,
    Scope,
    collect_entries,
    memory_documents,
)

__all__ = ["StoreRetriever"]

_PAGE = 500


def _value(entry: Entry) -> dict[str, Any]:
    return {
        "kind": entry.kind,
        "text": entry.text,
        "path": entry.path,
        "ref": entry.ref,
        "namespace": list(entry.namespace),
        "thread": entry.thread,
        "tags": list(entry.tags),
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
        self._prefix = tuple(prefix)

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
        entries = collect_entries(workspace, scope)
        wanted: set[tuple[tuple[str, ...], str]] = set()
        for _, document in memory_documents(workspace, scope.namespace):
            namespace = (*self._prefix, "docs", *document.namespace)
            self._store.put(namespace, "threads", {"threads": list(document.threads)}, index=False)
        for entry in entries:
            namespace = self._namespace_of(entry)
            wanted.add((namespace, entry.ref))
            self._store.put(namespace, entry.ref, _value(entry), index=["text"])
        for kind in ("facts", "transcripts"):
            for item in self._items((*self._prefix, kind)):
                if (tuple(item.namespace), item.key) not in wanted and self._in_scope(item, scope):
                    self._store.delete(tuple(item.namespace), item.key)
        return len(entries)

    def _in_scope(self, item: Item, scope: Scope) -> bool:
        entry = _entry(item)
        if entry.kind == "fact":
            return (
                "fact" in scope.kinds and entry.namespace[: len(scope.namespace)] == scope.namespace
            )
        return "transcript" in scope.kinds and scope.threads is None and not scope.namespace

    def _namespace_of(self, entry: Entry) -> tuple[str, ...]:
        if entry.kind == "fact":
            return (*self._prefix, "facts", *entry.namespace)
        return (*self._prefix, "transcripts", entry.thread)

    def _items(self, namespace: tuple[str, ...]) -> Iterator[SearchItem]:
        offset = 0
        while True:
            page = self._store.search(namespace, limit=_PAGE, offset=offset)
            yield from page
            if len(page) < _PAGE:
                return
            offset += _PAGE

    def _threads(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        found: dict[str, None] = {}
        for item in self._items((*self._prefix, "docs", *namespace)):
            found.update(dict.fromkeys(item.value.get("threads", ())))
        return tuple(found)

    def _searched(self, scope: Scope) -> list[tuple[tuple[str, ...], dict[str, Any] | None]]:
        """The store namespaces to search, each with its filter."""
        spaces: list[tuple[tuple[str, ...], dict[str, Any] | None]] = []
        if "fact" in scope.kinds:
            spaces.append(((*self._prefix, "facts", *scope.namespace), None))
        if "transcript" in scope.kinds:
            threads = scope.threads
            if threads is None and scope.namespace:
                threads = self._threads(scope.namespace)
            if threads is None:
                spaces.append(((*self._prefix, "transcripts"), None))
            else:
                for thread in threads:
                    folder = thread_transcript_dir(thread).rsplit("/", 1)[-1]
                    spaces.append(((*self._prefix, "transcripts", folder), None))
        return spaces

    def search(self, query: str, *, k: int = 5, scope: Scope | None = None) -> list[MemoryHit]:
        """The ``k`` best hits for ``query`` within ``scope``, best first."""
        scope = scope or Scope()
        if k <= 0 or not query.strip():
            return []
        wanted = set(scope.tags)

        def keep(entry: Entry) -> bool:
            return entry.kind != "fact" or not wanted or bool(wanted.intersection(entry.tags))

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
