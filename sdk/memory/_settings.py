"""The settings of long-term memory, validated."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MemorySettings"]


class MemorySettings(BaseModel):
    """How much is remembered, how it is injected, and when turns are learned from.

    Attributes:
        confidence_threshold: Facts extracted with a lower confidence are not stored.
        max_facts: At most this many facts are kept; the lowest-confidence ones (then the
            oldest) go first.
        max_injection_tokens: The ``<memory>`` block injected into the system prompt is at
            most this many tokens, counted exactly with the token counter, tags included.
        max_recall_tokens: The ``<recalled>`` block (what retrieval found at the start of a
            session) is at most this many tokens.
        recall_k: How many retrieval hits are recalled at the start of a session.
        debounce_seconds: Turns of one thread are learned from once the thread has been
            quiet this long, so several turns go to the extraction model in one call.
        keep_conversations: Log each thread's user messages and final answers under the
            memory (``/memories/<namespace>/.conversations/``), so retrieval finds a session
            that never compacted (whose transcript was never archived).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    confidence_threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.7
    max_facts: Annotated[int, Field(ge=1)] = 100
    max_injection_tokens: Annotated[int, Field(ge=1)] = 2_000
    max_recall_tokens: Annotated[int, Field(ge=0)] = 1_000
    recall_k: Annotated[int, Field(ge=0)] = 5
    debounce_seconds: Annotated[float, Field(ge=0.0)] = 30.0
    keep_conversations: bool = True
