"""Tool results made of blocks ctxfs does not read as text are saved and pointed to too.

Found in an adversarial pass: a result holding any block other than text or a base64 media
block (an image by URL, a ``json`` or ``search_result`` block as LangChain tools return them,
reasoning, a kind ctxfs does not know, a block without a type) stayed inline whatever its
size, at return and when old results were cleared ("the workspace keeps only text"): a tool
returning a 100k-token ``search_result`` list filled the window for good. Such a block is
saved as its JSON, on lines of its own, and read back from it byte-exact.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    ToolResultCleared,
    ToolResultOffloaded,
    Workspace,
    pointer_of,
    resolve_pointers,
)
from ctxfs._messages import restore_text, saved_text, text_layout

PAGE = "\n".join(f"row {i}: settle batches before the ledger closes" for i in range(600))

ODD_BLOCKS: list[dict[str, Any]] = [
    {"type": "image", "url": "https://example.com/a.png"},
    {"type": "image_url", "image_url": {"url": "https://example.com/b.png"}},
    {"type": "json", "json": {"rows": PAGE.splitlines()[:50]}},
    {
        "type": "search_result",
        "source": "https://example.com",
        "title": "Ledger",
        "content": [{"type": "text", "text": PAGE}],
        "citations": {"enabled": True},
    },
    {"type": "reasoning", "reasoning": "step by step", "signature": "c2ln"},
    {"type": "file", "file_id": "file-abc"},
    {"type": "never_heard_of", "x": [1, 2.5, None, {"y": "ü\u2028"}]},
    {"no_type": True, "text": 3},
]


@pytest.mark.parametrize("odd", ODD_BLOCKS, ids=lambda b: str(b.get("type", "untyped")))
def test_a_large_result_with_a_block_of_another_kind_is_offloaded_and_comes_back(
    odd: dict[str, Any],
) -> None:
    ws = Workspace("memory://odd-offload")
    engine = ContextEngine(ws, ContextPolicy(max_input_tokens=8_000))
    content: list[str | dict[str, Any]] = ["intro ", {"type": "text", "text": PAGE}, odd]
    original = ToolMessage(content, tool_call_id="c1", name="search", id="m1", artifact={"a": 1})
    outcome = engine.offload_tool_result_detailed(original, thread_id="t")
    assert isinstance(outcome.event, ToolResultOffloaded), outcome.event
    held = pointer_of(outcome.message)
    assert held is not None
    assert engine.token_counter.count_message(outcome.message) < 400
    # the file is text the agent's tools read: the block is there, as JSON, on its own lines
    saved = ws.read_text(held.path)
    assert "\n" + json.dumps(odd, ensure_ascii=False) + "\n" in saved
    back = resolve_pointers([outcome.message], ws)[0]
    assert back.content == original.content
    assert isinstance(back, ToolMessage) and back.artifact == {"a": 1}


def test_old_results_with_blocks_of_other_kinds_are_cleared_and_come_back() -> None:
    ws = Workspace("memory://odd-clear")
    policy = ContextPolicy(
        max_input_tokens=40_000,
        tool_results={"enabled": False},
        summarization={"trigger": {"fraction": 0.99}},
    )
    engine = ContextEngine(ws, policy)
    history: list[Any] = [HumanMessage("search the ledger", id="h")]
    for k in range(6):
        call = {"name": "search", "args": {"k": k}, "id": f"c{k}", "type": "tool_call"}
        history.append(AIMessage("", tool_calls=[call], id=f"a{k}"))
        odd = ODD_BLOCKS[k % len(ODD_BLOCKS)]
        history.append(ToolMessage([odd, {"type": "text", "text": PAGE}], tool_call_id=f"c{k}"))
    result = engine.compact(history, thread_id="t")
    cleared = [e for e in result.events if isinstance(e, ToolResultCleared)]
    assert cleared, [type(e).__name__ for e in result.events]
    assert result.request_tokens <= policy.max_input_tokens
    back = resolve_pointers(result.messages, ws)
    assert [m.content for m in back] == [m.content for m in history]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_block = st.one_of(
    st.text(),
    st.builds(lambda t: {"type": "text", "text": t}, st.text()),
    st.dictionaries(st.text(max_size=8), _json, max_size=4),
)


@settings(max_examples=200, deadline=None)
@given(content=st.lists(_block, min_size=1, max_size=6))
def test_every_json_content_is_saved_and_laid_out_again_exactly(
    content: list[str | dict[str, Any]],
) -> None:
    text = saved_text(content)
    assert text is not None
    assert restore_text(text, text_layout(content)) == content


@pytest.mark.parametrize(
    ("content", "said"),
    [(None, "of type NoneType"), ([["x"]], "a list holding a list"), (7, "of type int")],
)
def test_content_langchain_would_refuse_is_a_clear_error_naming_the_message(
    content: object, said: str
) -> None:
    # model_construct skips LangChain's checks; compaction used to fail deep inside the
    # token counter with "'NoneType' object is not iterable"
    engine = ContextEngine(Workspace("memory://odd-content"), ContextPolicy(max_input_tokens=4_000))
    odd = HumanMessage.model_construct(content=content, id="u1", type="human")
    history = [SystemMessage("s", id="s"), odd, AIMessage("x", id="a")]
    with pytest.raises(ValueError, match=rf"messages\[1\] \(human, id 'u1'\) has content .*{said}"):
        engine.compact(history, thread_id="t")
