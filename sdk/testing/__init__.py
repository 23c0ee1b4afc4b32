"""Test doubles shipped with ctxfs, so you can test your own agents the way ctxfs tests its own.

- :class:`ScriptedChatModel`: a chat model that plays a script of replies (tool calls
  included), offline and deterministic; history builders :func:`tool_call`,
  :func:`tool_exchange` and :func:`long_history`.
- :class:`RecordingStore`: wraps a :class:`~ctxfs.backends.Store` and records each call
  (:class:`StoreCall`), to assert what a workspace asked its storage.
- :class:`FaultyStore`: wraps a store and fails the calls its :class:`Fault` s pick out (an
  error, a spurious "not found", a torn write, a lost response), deterministically.
- :class:`HashingEmbeddings`: a deterministic embedding model (hashed bag of words), to test
  semantic search (a LangGraph store's index) offline.
- :mod:`ctxfs.testing.conformance`: the workspace conformance suite, a pytest class to run
  against your own fsspec filesystem or store (needs pytest; imported only from there).
"""

from __future__ import annotations

from ctxfs.testing._embeddings import HashingEmbeddings
from ctxfs.testing._faulty import Fault, FaultKind, FaultyStore, FiredFault
from ctxfs.testing._recording import RecordingStore, StoreCall
from ctxfs.testing._scripted import (
    Reply,
    ScriptedChatModel,
    ScriptExhaustedError,
    long_history,
    tool_call,
    tool_exchange,
)

__all__ = [
    "Fault",
    "FaultKind",
    "FaultyStore",
    "FiredFault",
    "HashingEmbeddings",
    "RecordingStore",
    "Reply",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "StoreCall",
    "long_history",
    "tool_call",
    "tool_exchange",
]
