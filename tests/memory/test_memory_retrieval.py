"""Retrieval: BM25 over facts and transcripts, scopes, and LangGraph stores (memory, Postgres)."""

from __future__ import annotations

import pytest
from _memory_helpers import FakeTime, fact, update
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from ctxfs import TranscriptArchive, Workspace
from ctxfs._layout import safe_name
from ctxfs.memory import KeywordRetriever, LongTermMemory, Scope, StoreRetriever
from ctxfs.testing import HashingEmbeddings


def _archive(workspace: Workspace, thread: str, messages: list) -> None:  # type: ignore[type-arg]
    archive = TranscriptArchive(workspace, thread)
    segment, _ = archive.write_segment(messages, start=0, tokens=1)
    archive.commit(segment, summary=AIMessage("summary"))


@pytest.fixture
def corpus() -> Workspace:
    """Two users' memories and three archived threads."""
    workspace = Workspace("memory://corpus")
    alice = LongTermMemory(workspace, ("alice",), now=FakeTime())
    alice.apply(
        update(fact("Alice's billing database listens on port 6543.", tags=["billing", "infra"])),
        thread_id="a-1",
    )
    alice.apply(update(fact("Alice prefers tabs over spaces.", tags=["style"])), thread_id="a-2")
    coder = LongTermMemory(workspace, ("alice", "coder"), now=FakeTime())
    coder.apply(
        update(fact("The coder agent runs tests with pytest -x.", tags=["testing"])),
        thread_id="a-1",
    )
    bob = LongTermMemory(workspace, ("bob",), now=FakeTime())
    bob.apply(
        update(fact("Bob's billing export runs nightly at 02:00.", tags=["billing"])),
        thread_id="b-1",
    )
    _archive(
        workspace,
        "a-1",
        [
            HumanMessage("Why does the invoice job fail?", id="h"),
            AIMessage(
                "Looking at the logs.",
                tool_calls=[{"name": "grep", "args": {"pattern": "ERROR"}, "id": "c"}],
                id="a",
            ),
            ToolMessage(
                "worker-7: ERROR certificate expired for ledger.internal", tool_call_id="c", id="t"
            ),
        ],
    )
    _archive(workspace, "b-1", [HumanMessage("Rotate the ledger certificate for Bob.", id="h2")])
    _archive(workspace, "other", [HumanMessage("Nothing about anything.", id="h3")])
    return workspace


def test_keyword_search_finds_facts_and_transcript_details(corpus: Workspace) -> None:
    retriever = KeywordRetriever(corpus)
    (best, *_) = retriever.search("which port does the billing database use", k=3)
    assert best.kind == "fact" and "6543" in best.text
    assert best.path == "/memories/alice/memory.json" and best.namespace == ("alice",)
    hits = retriever.search("certificate expired ledger", k=5)
    assert hits[0].kind == "transcript" and "worker-7: ERROR certificate expired" in hits[0].text
    assert hits[0].path.endswith("/segment-0001.md") and hits[0].ref == "segment-0001.jsonl#2"
    assert corpus.exists(hits[0].path)
    assert all(h.score > 0 for h in hits) and hits == sorted(hits, key=lambda h: -h.score)


def test_a_query_without_known_words_finds_nothing(corpus: Workspace) -> None:
    assert KeywordRetriever(corpus).search("zzzz qqqq", k=5) == []
    assert KeywordRetriever(corpus).search("   ", k=5) == []
    assert KeywordRetriever(Workspace("memory://empty")).search("billing", k=5) == []


def test_a_namespace_scopes_facts_and_transcripts(corpus: Workspace) -> None:
    retriever = KeywordRetriever(corpus)
    alice = retriever.search("billing certificate pytest", k=10, scope=Scope(namespace=("alice",)))
    assert {h.namespace for h in alice if h.kind == "fact"} <= {("alice",), ("alice", "coder")}
    assert {h.thread for h in alice if h.kind == "transcript"} == {safe_name("a-1")}
    assert not any("Bob" in h.text for h in alice)
    coder = retriever.search("pytest billing", k=10, scope=Scope(namespace=("alice", "coder")))
    assert [h.text for h in coder if h.kind == "fact"] == [
        "The coder agent runs tests with pytest -x."
    ]


def test_tags_narrow_the_facts(corpus: Workspace) -> None:
    hits = KeywordRetriever(corpus).search(
        "billing", k=10, scope=Scope(tags=("infra",), kinds=("fact",))
    )
    assert [h.text for h in hits] == ["Alice's billing database listens on port 6543."]


def test_threads_narrow_the_transcripts(corpus: Workspace) -> None:
    hits = KeywordRetriever(corpus).search(
        "certificate", k=10, scope=Scope(threads=("b-1",), kinds=("transcript",))
    )
    assert [h.text for h in hits] == ["Rotate the ledger certificate for Bob."]


def test_a_malformed_memory_is_skipped_by_retrieval_with_a_warning(
    corpus: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    corpus.write_bytes("/memories/bob/memory.json", b"{oops")
    hits = KeywordRetriever(corpus).search(
        "billing nightly export", k=5, scope=Scope(kinds=("fact",))
    )
    assert not any("Bob" in h.text for h in hits)
    assert "/memories/bob/memory.json is skipped by retrieval" in caplog.text


def test_long_transcript_messages_are_searched_in_chunks() -> None:
    workspace = Workspace("memory://chunks")
    lines = [f"line {n}: nothing to see" for n in range(400)]
    lines[321] = "line 321: the deploy key is ed25519-XYZ"
    _archive(workspace, "t", [ToolMessage("\n".join(lines), tool_call_id="c", id="t")])
    (hit,) = KeywordRetriever(workspace).search("deploy key ed25519", k=1)
    assert "the deploy key is ed25519-XYZ" in hit.text and len(hit.text) <= 600
    assert hit.ref.startswith("segment-0001.jsonl#0.")


# -- LangGraph stores ------------------------------------------------------------------------


def _semantic_store() -> InMemoryStore:
    return InMemoryStore(index={"dims": 256, "embed": HashingEmbeddings(256), "fields": ["text"]})


@pytest.fixture(params=["keyword-only", "semantic"])
def memory_store(request: pytest.FixtureRequest) -> BaseStore:
    return InMemoryStore() if request.param == "keyword-only" else _semantic_store()


def test_a_store_serves_the_same_corpus(corpus: Workspace, memory_store: BaseStore) -> None:
    retriever = StoreRetriever(memory_store)
    assert retriever.sync(corpus) == len(KeywordRetriever(corpus).index().entries)
    (best, *_) = retriever.search("billing database port", k=3)
    assert "6543" in best.text and best.kind == "fact"
    hits = retriever.search("certificate expired ledger", k=3, scope=Scope(namespace=("alice",)))
    assert any("worker-7: ERROR certificate expired" in h.text for h in hits)
    assert not any("Bob" in h.text for h in hits)
    tagged = retriever.search("billing", k=5, scope=Scope(tags=("infra",), kinds=("fact",)))
    assert [h.text for h in tagged] == ["Alice's billing database listens on port 6543."]


def test_a_store_forgets_what_the_workspace_forgot(corpus: Workspace) -> None:
    store = _semantic_store()
    retriever = StoreRetriever(store)
    retriever.sync(corpus)
    alice = LongTermMemory(corpus, ("alice",))
    (port,) = [f.id for f in alice.load().facts if "6543" in f.content]
    alice.forget([port])
    retriever.sync(corpus)
    assert not any("6543" in h.text for h in retriever.search("billing database port", k=10))


def test_postgres_store_serves_retrieval(corpus: Workspace, postgres_url: str) -> None:
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(postgres_url) as store:
        store.setup()
        retriever = StoreRetriever(store, prefix=("ctxfs-test",))
        assert retriever.sync(corpus) > 0
        (best, *_) = retriever.search("billing database port", k=3)
        assert "6543" in best.text
        hits = retriever.search("certificate expired", k=2, scope=Scope(namespace=("bob",)))
        assert [h.text for h in hits] == ["Rotate the ledger certificate for Bob."]
        # what it holds is what a second process connecting to the server sees
    with PostgresStore.from_conn_string(postgres_url) as again:
        found = StoreRetriever(again, prefix=("ctxfs-test",)).search("tabs spaces", k=1)
        assert [h.text for h in found] == ["Alice prefers tabs over spaces."]


def test_a_tag_filter_finds_a_fact_ranked_below_many_others_in_a_semantic_store() -> None:
    workspace = Workspace("memory://many-facts")
    memory = LongTermMemory(workspace, ("alice",), now=FakeTime())
    facts = [fact(f"Billing database note number {n} about billing.") for n in range(30)]
    memory.apply(update(*facts, fact("Billing runs on Fridays.", tags=["rare"])), thread_id="t")
    retriever = StoreRetriever(_semantic_store())
    retriever.sync(workspace)
    hits = retriever.search("billing database note", k=1, scope=Scope(tags=("rare",)))
    assert [h.text for h in hits] == ["Billing runs on Fridays."]
