"""A deterministic embedding model, to test semantic search offline.

Example:
    >>> from ctxfs.testing import HashingEmbeddings
    >>> embeddings = HashingEmbeddings(dims=8)
    >>> embeddings.embed_query("database port") == embeddings.embed_query("Database  port!")
    True
"""

from __future__ import annotations

import hashlib
import math
import re

from langchain_core.embeddings import Embeddings

__all__ = ["HashingEmbeddings"]

_WORD = re.compile(r"\w\w+")


class HashingEmbeddings(Embeddings):
    """Bag-of-words vectors from hashed words: texts that share words are close.

    Each word (lowercase, two characters or more) adds one to the dimension its SHA-256
    picks; the vector is normalised to length 1 (all zeros for a text without words). No
    model, no network, the same vectors on every machine.

    Args:
        dims: The vector size.
    """

    def __init__(self, dims: int = 256) -> None:
        if dims < 1:
            raise ValueError("dims must be >= 1")
        self.dims = dims

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in _WORD.findall(text.lower()):
            digest = hashlib.sha256(word.encode("utf-8")).digest()
            vector[int.from_bytes(digest[:8], "big") % self.dims] += 1.0
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query (the same function as for documents)."""
        return self._embed(text)
