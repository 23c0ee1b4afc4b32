"""Reasoning and media blocks through every compaction path (issue 25).

Histories as the compaction properties generate them, with reasoning blocks (OpenAI-style
``reasoning``, Anthropic-style ``thinking`` with its signature) on assistant messages and
image blocks on user messages and tool results. Whatever the policy does to them (result
offload, tool-input offload, clearing, summaries, pins), the archive and the workspace give
every message back as it was, blocks and all; a reasoning block is in the request only with
its own assistant message, never once that message was summarized.
"""

from __future__ import annotations

import itertools
from typing import Any

from _histories import comparable
from _runs import fresh_engine, reconstruct, replay, runs, summary_policies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs import ContextPolicy

_fresh = itertools.count()
_IMAGE = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}


def _reasoning(n: int) -> list[dict[str, Any]]:
    return [
        {"type": "reasoning", "reasoning": f"<think step {n} through>"},
        {"type": "thinking", "thinking": f"<then {n}>", "signature": f"sig{n}"},
    ]


def _text_blocks(content: str | list[Any]) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _with_blocks(message: BaseMessage, n: int) -> BaseMessage:
    if isinstance(message, AIMessage):
        blocks = [*_reasoning(n), *_text_blocks(message.content)]
    elif isinstance(message, HumanMessage | ToolMessage):
        blocks = [*_text_blocks(message.content), dict(_IMAGE, id=f"img{n}")]
    else:
        return message
    return message.model_copy(update={"content": blocks})


@st.composite
def _rich_runs(draw: st.DrawFn) -> list[BaseMessage]:
    history = draw(runs())
    marked = draw(st.lists(st.booleans(), min_size=len(history), max_size=len(history)))
    pairs = enumerate(zip(history, marked, strict=True))
    return [_with_blocks(m, n) if b else m for n, (m, b) in pairs]


def _thoughts(message: BaseMessage) -> list[str]:
    """The texts of ``message``'s reasoning blocks."""
    if not isinstance(message, AIMessage) or not isinstance(message.content, list):
        return []
    return [
        str(block.get("reasoning") or block.get("thinking"))
        for block in message.content
        if isinstance(block, dict) and block.get("type") in {"reasoning", "thinking"}
    ]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=_rich_runs(), policy=summary_policies())
def test_media_and_reasoning_blocks_survive_every_compaction_path(
    history: list[BaseMessage], policy: ContextPolicy
) -> None:
    engine = fresh_engine(policy, f"blocks{next(_fresh)}")
    state, _ = replay(engine, history, "t")  # invariants and idempotence per step
    # every message back from the archive and the workspace as it was, blocks and all
    assert reconstruct(engine, state, "t") == [comparable(m) for m in history]
    # reasoning stays bound to its own message: once that message is summarized, its
    # thoughts are nowhere in the request (not in the summary, not in what it put back)
    kept = {m.id for m in state}
    sent = "\n".join(message_text(m) for m in state)
    gone = [t for m in history if m.id not in kept for t in _thoughts(m)]
    assert not [t for t in gone if t in sent]


def message_text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(str(block) for block in message.content)
