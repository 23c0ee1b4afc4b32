"""Every tool result over the threshold is offloaded byte-exact, or an event says why not.

Generated content shapes: a string, or lists of ``str`` blocks, text blocks with any other
keys (langchain-core's ``create_text_block`` ``id``, ``cache_control``, ``annotations``,
``index``...), text with NUL characters, non-text blocks, and keys JSON cannot hold.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.messages.content import create_text_block

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    MediaOffloaded,
    OffloadFailed,
    ToolResultCleared,
    ToolResultOffloaded,
    Workspace,
    pointer_of,
    resolve_pointers,
)
from ctxfs._messages import (
    NUL_STAND_INS,
    message_text,
    restore_text,
    saved_text,
    text_layout,
    why_not_saved,
)
from ctxfs._pointers._pointer import Pointer

_fresh = itertools.count()
_THRESHOLD = 100
_POLICY = ContextPolicy(max_input_tokens=50_000, tool_results={"threshold": {"tokens": _THRESHOLD}})

# Long enough (well over the threshold) that a pointer and its preview are always smaller.
_LINE = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=60)
_BIG = st.lists(_LINE, min_size=1, max_size=6).map(
    lambda lines: "\n".join(
        f"row {n}: {line} " + "lorem ipsum " * 100 for n, line in enumerate(lines)
    )
)
_NULS = st.lists(st.integers(0, 10_000), max_size=3)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
extra_keys = st.dictionaries(
    st.sampled_from(["id", "cache_control", "annotations", "index", "extras", "citations"]),
    json_values,
    max_size=3,
)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """A large text, sometimes with NUL characters (and a stand-in character) in it."""
    text = draw(_BIG)
    for at in draw(_NULS):
        at %= len(text) + 1
        text = text[:at] + draw(st.sampled_from(["\x00", "\x00\x00", NUL_STAND_INS[0]])) + text[at:]
    for at in draw(_NULS):  # lone surrogates, as ``surrogateescape`` decodes bytes
        at %= len(text) + 1
        odd = draw(st.sampled_from(["\udc80", "\udcff\ud800", "\udfff", "\U000f0000"]))
        text = text[:at] + odd + text[at:]
    return text


@st.composite
def text_blocks(draw: st.DrawFn) -> str | dict[str, Any]:
    text = draw(st.one_of(_LINE, texts()))
    kind = draw(st.sampled_from(["str", "plain", "extras", "lc", "keys-first"]))
    if kind == "str":
        return text
    if kind == "plain":
        return {"type": "text", "text": text}
    if kind == "lc":
        return dict(create_text_block(text))
    extras = draw(extra_keys)
    if kind == "keys-first":
        return {**extras, "type": "text", "text": text}
    return {"type": "text", "text": text, **extras}


other_blocks = st.sampled_from(
    [
        {"type": "image", "url": "https://example.com/x.png"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "tool_use", "id": "t", "input": {}},
        {"text": "no type"},
        {"type": "text", "text": "bytes key", "raw": b"\x01"},
        {"type": "text", "text": "tuple", "span": (1, 2)},
        {"type": "text", "text": "int key", "map": {1: "a"}},
        {"type": "text", "text": ["not", "a", "string"]},
    ]
)

contents = st.one_of(
    texts(),
    st.lists(text_blocks(), min_size=1, max_size=5),
    st.lists(st.one_of(text_blocks(), other_blocks), min_size=1, max_size=5),
)


def _over_threshold(engine: ContextEngine, message: ToolMessage) -> bool:
    text = "".join(
        b if isinstance(b, str) else b["text"]
        for b in ([message.content] if isinstance(message.content, str) else message.content)
        if isinstance(b, str) or (b.get("type") == "text" and isinstance(b.get("text"), str))
    )
    return engine.token_counter.count_text(text) > _THRESHOLD


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=contents)
def test_a_large_result_is_offloaded_byte_exact_or_an_event_says_why(content: Any) -> None:
    engine = ContextEngine(Workspace(f"memory://shapes{next(_fresh)}"), _POLICY)
    message = ToolMessage(content, tool_call_id="c1", name="bash", id="r1")
    before = message.model_copy(deep=True)
    outcome = engine.offload_tool_result_detailed(message, thread_id="t")
    assert message == before  # never mutated
    if outcome.media:  # an image billed over the threshold: moved to a file (test_media_offload)
        assert all(isinstance(event, MediaOffloaded) for event in outcome.media)
        return
    if not _over_threshold(engine, message):
        assert outcome.message is message and outcome.event is None
        return
    if outcome.event is None and outcome.message is message:
        # over the threshold, yet a pointer with its preview would cost as much (a short line
        # of characters that each cost a token or more): a pointer never costs more
        assert len(message_text(message)) < 500
        return
    if isinstance(outcome.event, OffloadFailed):
        assert outcome.message is message
        assert outcome.event.reason.startswith("the result (")
        assert saved_text(content) is None and why_not_saved(content) is not None
        return
    # offloaded: a pointer whose file the agent can read as text, and which resolves exactly
    assert isinstance(outcome.event, ToolResultOffloaded)
    held = pointer_of(outcome.message)
    assert held is not None and "\x00" not in engine.workspace.read_text(held.path)
    (back,) = resolve_pointers([outcome.message], engine.workspace)
    assert back == message
    assert json.dumps(back.content) == json.dumps(message.content)  # keys in their order


@settings(max_examples=150, deadline=None)
@given(content=contents)
def test_the_layout_restores_every_content_it_saves(content: Any) -> None:
    text = saved_text(content)
    if text is None:
        assert why_not_saved(content)
        return
    assert why_not_saved(content) is None and "\x00" not in text
    layout = text_layout(content)
    assert restore_text(text, layout) == content
    # the layout survives the pointer's metadata (JSON) as it is
    pointer = Pointer(kind="result", path="/p", lines=1, chars=len(text), tokens=1, shape=layout)
    parsed = Pointer.from_metadata(json.loads(json.dumps(pointer.to_metadata())))
    assert parsed is not None and parsed.shape == layout


def test_a_text_holding_every_stand_in_stays_inline_and_says_so() -> None:
    content = "\x00" + NUL_STAND_INS
    assert saved_text(content) is None
    assert why_not_saved(content) == (
        "its text holds NUL characters and every character that could stand for them"
    )


def test_a_result_with_lone_surrogates_is_offloaded_and_comes_back_exactly() -> None:
    """A tool that decodes bytes with ``surrogateescape`` (a subprocess's output, a file of
    another encoding) returns lone surrogates, which UTF-8 cannot store: such a result over
    the threshold is saved with stand-ins (a range no character of it is from) and comes back
    exactly, where before it stayed inline, however large, and held the window."""
    raw = ("caf\xe9 na\xefve \xff\xfe " + "lorem ipsum " * 40 + "\n").encode("latin-1") * 40
    text = raw.decode("utf-8", "surrogateescape") + chr(0xF0000)  # a first stand-in, too
    engine = ContextEngine(Workspace(f"memory://lone{next(_fresh)}"), _POLICY)
    for content in (text, [{"type": "text", "text": text, "id": "b1"}, "tail \udc80"]):
        message = ToolMessage(content, tool_call_id="c1", name="bash", id="r1")
        outcome = engine.offload_tool_result_detailed(message, thread_id="t")
        assert isinstance(outcome.event, ToolResultOffloaded), outcome.event
        held = pointer_of(outcome.message)
        assert held is not None
        saved = engine.workspace.read_text(held.path)
        assert "\ufffd" not in saved and not any(0xD800 <= ord(c) < 0xE000 for c in saved)
        (back,) = resolve_pointers([outcome.message], engine.workspace)
        assert back == message


def test_langchain_create_text_block_results_are_offloaded() -> None:
    engine = ContextEngine(Workspace(f"memory://lc{next(_fresh)}"), _POLICY)
    blocks = [create_text_block("lorem ipsum " * 500), create_text_block("tail")]
    message = ToolMessage(blocks, tool_call_id="c1", name="bash")
    outcome = engine.offload_tool_result_detailed(message, thread_id="t")
    assert isinstance(outcome.event, ToolResultOffloaded)
    assert resolve_pointers([outcome.message], engine.workspace) == [message]


def test_old_results_with_other_keys_or_nul_are_cleared_and_come_back_exactly() -> None:
    policy = ContextPolicy(
        max_input_tokens=100_000,
        clearing={
            "enabled": True,
            "trigger": {"tokens": 1_000},
            "keep": {"results": 1},
            "min_tokens": 100,
            "clear_at_least": {"tokens": 100},
            "frees_per_rewrite": 0.0,
        },
    )
    engine = ContextEngine(Workspace(f"memory://clear{next(_fresh)}"), policy)
    body = "".join(f"line {n}: some words here\n" for n in range(80))
    contents: list[Any] = [
        [create_text_block(body), {"type": "text", "text": "x", "cache_control": {"a": 1}}],
        body + "\x00tail",
        body,  # the most recent: kept
    ]
    messages: list[Any] = [HumanMessage("go")]
    for n, content in enumerate(contents):
        call = {"name": "bash", "args": {"command": f"run {n}"}, "id": f"c{n}"}
        messages += [
            AIMessage("", tool_calls=[call]),
            ToolMessage(content, tool_call_id=f"c{n}", name="bash"),
        ]
    out = engine.clear_tool_results(messages, thread_id="t")
    cleared = [e for e in out.events if isinstance(e, ToolResultCleared)]
    assert [e.tool_call_id for e in cleared] == ["c0", "c1"]
    assert resolve_pointers(out.messages, engine.workspace) == messages
