"""Long-term memory: facts with confidence, injected within a token budget, recalled by search.

A memory document per namespace (a user, an agent, a user's agent) lives in the workspace
under ``/memories/`` (JSON plus a Markdown rendering), so it works on every backend and the
agent can read it with its tools. :class:`LongTermMemory` learns from conversations with a
chat model (structured output, validated), keeps facts over a confidence threshold up to a
cap, injects a ``<memory>`` block within a token budget, and recalls earlier sessions (facts,
archived transcripts and conversation logs) by keyword search, or through any LangGraph
store (:class:`StoreRetriever`). Every change is a new version (:class:`Change`, history,
rollback); facts have a scope (user, project, task) and an optional expiry; an explicit
consolidation merges duplicates and contradictions.

Integrations: :class:`MemoryMiddleware` for ``create_agent`` (needs the ``langchain``
extra), and nodes for a hand-written ``StateGraph`` (:func:`memory_node`,
:func:`remember_node`, :func:`memory_compaction_node`, :func:`system_with_memory`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxfs._errors import MemoryFormatError
from ctxfs._layout import MEMORIES_DIR
from ctxfs.memory._basestore import StoreRetriever
from ctxfs.memory._consolidate import (
    CONSOLIDATION_PROMPT,
    Consolidation,
    ConsolidationPlan,
    FactMerge,
    consolidate_document,
)
from ctxfs.memory._document import (
    Change,
    Fact,
    FactCategory,
    FactScope,
    History,
    MemoryDocument,
    UserContext,
    fact_id,
    parse_document,
    render_markdown,
)
from ctxfs.memory._extract import (
    EXTRACTION_PROMPT,
    AppliedUpdate,
    ExtractedFact,
    HistoryUpdate,
    MemoryUpdate,
    UserContextUpdate,
    apply_update,
    extract_update,
)
from ctxfs.memory._graph import (
    memory_compaction_node,
    memory_node,
    remember_node,
    system_with_memory,
)
from ctxfs.memory._hybrid import HybridRetriever, reciprocal_rank_fusion
from ctxfs.memory._inject import InjectedMemory, memory_block, recalled_block, with_memory
from ctxfs.memory._memory import Learned, LongTermMemory
from ctxfs.memory._queue import TurnBatch, TurnQueue
from ctxfs.memory._retrieval import (
    KeywordIndex,
    KeywordRetriever,
    MemoryHit,
    Retriever,
    Scope,
    collect_entries,
)
from ctxfs.memory._settings import MemorySettings
from ctxfs.memory._store import MemoryFile, memory_path

if TYPE_CHECKING:
    from ctxfs.memory._middleware import MemoryMiddleware, MemoryState

__all__ = [
    "CONSOLIDATION_PROMPT",
    "EXTRACTION_PROMPT",
    "MEMORIES_DIR",
    "AppliedUpdate",
    "Change",
    "Consolidation",
    "ConsolidationPlan",
    "ExtractedFact",
    "Fact",
    "FactCategory",
    "FactMerge",
    "FactScope",
    "History",
    "HistoryUpdate",
    "HybridRetriever",
    "InjectedMemory",
    "KeywordIndex",
    "KeywordRetriever",
    "Learned",
    "LongTermMemory",
    "MemoryDocument",
    "MemoryFile",
    "MemoryFormatError",
    "MemoryHit",
    "MemoryMiddleware",
    "MemorySettings",
    "MemoryState",
    "MemoryUpdate",
    "Retriever",
    "Scope",
    "StoreRetriever",
    "TurnBatch",
    "TurnQueue",
    "UserContext",
    "UserContextUpdate",
    "apply_update",
    "collect_entries",
    "consolidate_document",
    "extract_update",
    "fact_id",
    "memory_block",
    "memory_compaction_node",
    "memory_node",
    "memory_path",
    "parse_document",
    "recalled_block",
    "reciprocal_rank_fusion",
    "remember_node",
    "render_markdown",
    "system_with_memory",
    "with_memory",
]


def __getattr__(name: str) -> Any:
    # The middleware needs LangChain (the ``langchain`` extra): imported on first use.
    if name in ("MemoryMiddleware", "MemoryState"):
        from ctxfs.memory import _middleware

        return getattr(_middleware, name)
    raise AttributeError(f"module 'ctxfs.memory' has no attribute {name!r}")
