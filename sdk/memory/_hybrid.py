"""Hybrid retrieval: keyword and vector rankings fused by reciprocal rank.

Keyword search (BM25) finds exact names, ids and numbers, and nothing that shares no word
with the query; vector search finds paraphrases and misses rare exact tokens. A
:class:`HybridRetriever` asks both for more than ``k`` candidates and ranks them by
reciprocal rank fusion (RRF): each hit scores ``weight / (rrf_k + rank)`` in each ranking it
appears in (rank 1 for the best), summed; ties keep the keyword order. Ranks, not scores, are
fused, so the two rankers' scores need not be comparable.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxfs.memory._retrieval import MemoryHit, Retriever, Scope

__all__ = ["HybridRetriever", "reciprocal_rank_fusion"]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[MemoryHit]],
    *,
    weights: Sequence[float] | None = None,
    rrf_k: int = 60,
) -> list[MemoryHit]:
    """The hits of ``rankings`` (each best first) in fused order, each once, with the fused
    score (a hit is the same in two rankings when its path and ref are)."""
    weights = [1.0] * len(rankings) if weights is None else list(weights)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], MemoryHit] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, hit in enumerate(ranking, start=1):
            key = (hit.path, hit.ref)
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
            first.setdefault(key, hit)
    order = sorted(scores, key=lambda key: -scores[key])  # stable: first seen wins ties
    return [_rescored(first[key], scores[key]) for key in order]


def _rescored(hit: MemoryHit, score: float) -> MemoryHit:
    return MemoryHit(
        hit.kind, hit.text, score, hit.path, hit.ref, hit.namespace, hit.thread, hit.tags
    )


class HybridRetriever:
    """Keyword and vector retrieval, fused by reciprocal rank (see the module docstring).

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> from ctxfs import Workspace
        >>> from ctxfs.memory import KeywordRetriever, StoreRetriever
        >>> from ctxfs.testing import HashingEmbeddings
        >>> workspace = Workspace("memory://hybrid-doc")
        >>> store = InMemoryStore(index={"dims": 64, "embed": HashingEmbeddings(64)})
        >>> vector = StoreRetriever(store)
        >>> retriever = HybridRetriever(KeywordRetriever(workspace), vector)
        >>> retriever.search("anything")
        []

    Args:
        keyword: The keyword retriever (a :class:`~ctxfs.memory.KeywordRetriever`).
        vector: The vector retriever (a :class:`~ctxfs.memory.StoreRetriever` over a store
            with an embedding index: any LangChain ``Embeddings``, any LangGraph store).
        candidates: How many hits each is asked for, per hit wanted (at least 20).
        weights: The weight of the keyword and the vector ranking.
        rrf_k: The rank offset of the fusion (60, as in the RRF paper).
    """

    def __init__(
        self,
        keyword: Retriever,
        vector: Retriever,
        *,
        candidates: int = 4,
        weights: tuple[float, float] = (1.0, 1.0),
        rrf_k: int = 60,
    ) -> None:
        if candidates < 1 or rrf_k < 0:
            raise ValueError("candidates must be >= 1 and rrf_k >= 0")
        self._keyword = keyword
        self._vector = vector
        self._candidates = candidates
        self._weights = weights
        self._rrf_k = rrf_k

    def search(self, query: str, *, k: int = 5, scope: Scope | None = None) -> list[MemoryHit]:
        """The ``k`` best hits for ``query`` within ``scope``, best first."""
        if k <= 0 or not query.strip():
            return []
        wanted = max(k * self._candidates, 20)
        rankings = [
            self._keyword.search(query, k=wanted, scope=scope),
            self._vector.search(query, k=wanted, scope=scope),
        ]
        fused = reciprocal_rank_fusion(rankings, weights=self._weights, rrf_k=self._rrf_k)
        return fused[:k]
