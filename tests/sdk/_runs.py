"""Helpers for the compaction tests: agent runs, summarization policies, replay and checks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from _histories import _CJK, _UNICODE, comparable, outputs, resolve
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxfs import (
    CompactionResult,
    ContextEngine,
    ContextPolicy,
    TranscriptArchive,
    Workspace,
    is_pinned,
    is_summary,
)


def fixed_clock() -> datetime:
    return datetime(2025, 1, 1, tzinfo=UTC)


# -- strategies -----------------------------------------------------------------------------

_texts = st.text(_UNICODE | _CJK, max_size=40)


@st.composite
def _call(draw: st.DrawFn, call_id: str) -> dict[str, Any]:
    name = draw(st.sampled_from(["bash", "write_file", "edit_file", "read_file"]))
    if name == "write_file":
        args: dict[str, Any] = {"file_path": "/src/a.py", "content": draw(outputs)}
    elif name == "edit_file":
        args = {"file_path": "/src/b.py", "old_string": draw(outputs), "new_string": "x"}
    else:
        args = {"command": draw(_texts)}
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _result(draw: st.DrawFn, call: dict[str, Any], mid: str) -> ToolMessage:
    content: str | list[str | dict[Any, Any]] = draw(outputs)
    if draw(st.booleans()) and content:
        content = [{"type": "text", "text": content}]
    return ToolMessage(content=content, tool_call_id=call["id"], name=call["name"], id=mid)


@st.composite
def runs(draw: st.DrawFn) -> list[BaseMessage]:
    """A system prompt, then turns: plain answers, parallel calls with shuffled results,
    results interleaved across two AI messages, and maybe a last call left unanswered."""
    messages: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    ids = iter(range(10_000))
    dup = draw(st.booleans())  # reuse call ids across turns (they still pair in order)

    def new_id() -> str:
        n = next(ids)
        return f"call_{n % 2}" if dup else f"call_{n}"

    for turn in range(draw(st.integers(min_value=1, max_value=7))):
        messages.append(HumanMessage(draw(_texts), id=f"h{turn}"))
        shape = draw(st.sampled_from(["plain", "parallel", "interleaved"]))
        if shape == "plain":
            messages.append(AIMessage(draw(_texts), id=f"a{turn}"))
            continue
        first = [draw(_call(new_id())) for _ in range(draw(st.integers(1, 3)))]
        messages.append(AIMessage(draw(_texts), tool_calls=first, id=f"a{turn}"))
        calls = list(first)
        if shape == "interleaved":
            second = [draw(_call(new_id()))]
            messages.append(AIMessage("", tool_calls=second, id=f"b{turn}"))
            calls += second
        # with reused ids, results come in call order so that they pair unambiguously
        order = list(range(len(calls))) if dup else draw(st.permutations(range(len(calls))))
        for k in order:
            messages.append(_result(draw, calls[k], f"t{turn}_{k}"))
    if draw(st.booleans()):
        last = [{"name": "submit", "args": {}, "id": "final", "type": "tool_call"}]
        messages.append(AIMessage("submitting", tool_calls=last, id="a_last"))
    return messages


@st.composite
def summary_policies(draw: st.DrawFn) -> ContextPolicy:
    """Small windows and every trigger and keep kind, so that summaries really happen."""
    window = draw(st.integers(min_value=300, max_value=6_000))
    trigger: dict[str, Any] = {}
    kinds = draw(st.sets(st.sampled_from(["fraction", "tokens", "messages"]), min_size=1))
    if "fraction" in kinds:
        trigger["fraction"] = draw(st.floats(min_value=0.3, max_value=1.0))
    if "tokens" in kinds:
        trigger["tokens"] = draw(st.integers(min_value=int(0.3 * window), max_value=window))
    if "messages" in kinds:
        trigger["messages"] = draw(st.integers(min_value=2, max_value=30))
    keep_kind = draw(st.sampled_from(["messages", "tokens", "fraction"]))
    keep: dict[str, Any]
    if keep_kind == "messages":
        most = min(8, trigger.get("messages", 9) - 1)  # keep.messages < trigger.messages
        keep = {"messages": draw(st.integers(min_value=0, max_value=most))}
    elif keep_kind == "tokens":
        keep = {"tokens": draw(st.integers(min_value=1, max_value=int(0.28 * window)))}
    else:
        keep = {"fraction": draw(st.floats(min_value=0.01, max_value=0.25))}
    return ContextPolicy(
        max_input_tokens=window,
        tool_results={"threshold": {"tokens": draw(st.integers(min_value=5, max_value=300))}},
        tool_inputs={
            "trigger": draw(st.sampled_from([{"tokens": 1}, {"fraction": 0.3}])),
            "keep_messages": draw(st.integers(min_value=0, max_value=6)),
            "min_chars": draw(st.integers(min_value=1, max_value=60)),
        },
        summarization={"trigger": trigger, "keep": keep},
    )


# -- replay ---------------------------------------------------------------------------------


def replay(
    engine: ContextEngine,
    history: Sequence[BaseMessage],
    thread_id: str,
    *,
    check: bool = True,
    also_check: Callable[[CompactionResult, CompactionResult], None] | None = None,
) -> tuple[list[BaseMessage], list[CompactionResult]]:
    """Feeds a run to the engine as an agent loop would: each tool result through result
    offload as it arrives, compaction before each assistant turn and at the end.

    With ``check``, every compaction is checked (invariants, input untouched, idempotent),
    and ``also_check(result, result_of_compacting_it_again)`` is called for more."""
    state: list[BaseMessage] = []
    results: list[CompactionResult] = []

    def compact() -> None:
        nonlocal state
        snapshot = [m.model_dump() for m in state]
        result = engine.compact(state, thread_id=thread_id)
        if check:
            check_compaction(state, result)
            assert [m.model_dump() for m in state] == snapshot  # never mutated
            again = engine.compact(result.messages, thread_id=thread_id)
            assert again.messages == result.messages  # compact(compact(x)) == compact(x)
            if also_check is not None:
                also_check(result, again)
        results.append(result)
        state = result.messages

    for message in history:
        if isinstance(message, AIMessage) and state:
            compact()
        if isinstance(message, ToolMessage):
            message = engine.offload_tool_result(message, thread_id=thread_id)
        state = [*state, message]
    compact()
    return state, results


# -- checks ---------------------------------------------------------------------------------


def pairing(messages: Sequence[BaseMessage]) -> tuple[Counter[str], Counter[str]]:
    """Returns (orphan result ids, unanswered call ids), pairing each result with the
    earliest open call of its id."""
    pending: Counter[str] = Counter()
    orphans: Counter[str] = Counter()
    for message in messages:
        if isinstance(message, AIMessage):
            pending.update(call["id"] or "" for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            if pending[message.tool_call_id] > 0:
                pending[message.tool_call_id] -= 1
            else:
                orphans[message.tool_call_id] += 1
    return orphans, +pending


def _content(message: BaseMessage) -> bool:
    """Whether a message is the conversation's own: not the system prompt, not something a
    summary wrote (itself, or what it put back in view)."""
    return not (isinstance(message, SystemMessage) or is_summary(message) or is_pinned(message))


def check_compaction(before: list[BaseMessage], result: CompactionResult) -> None:
    """Invariants 2, 3 and 6 for one compaction."""
    out = result.messages
    orphans_in, dangling_in = pairing(before)
    orphans_out, dangling_out = pairing(out)
    assert not orphans_out - orphans_in, "a cut left a tool result without its call"
    assert not dangling_out - dangling_in, "a cut left a tool call without its results"
    assert result.reached_target or result.reason, "target missed without a reason"
    assert result.reached_target == (result.tokens_after <= result.target)
    # order: system prompt first, kept messages are a suffix of the input, in order
    if before and isinstance(before[0], SystemMessage):
        assert out[0] is before[0] or out[0] == before[0]
    body = [
        m
        for m in out
        if not isinstance(m, SystemMessage) and not is_summary(m) and not is_pinned(m)
    ]
    tail = before[len(before) - len(body) :] if body else []
    assert [m.id for m in body] == [m.id for m in tail]


def reconstruct(engine: ContextEngine, state: list[BaseMessage], thread_id: str) -> list[Any]:
    """System prompt + every archived message + the kept ones, pointers resolved."""
    archive = TranscriptArchive(engine.workspace, thread_id)
    segments = archive.segments()
    position = 1  # the runs have one system message
    for segment in segments:
        assert segment.start == position, "segments are not contiguous"
        position = segment.stop
    archived = archive.read_all()
    system = [m for m in state if isinstance(m, SystemMessage)]
    kept = [
        m
        for m in state
        if not isinstance(m, SystemMessage) and not is_summary(m) and not is_pinned(m)
    ]
    whole = resolve([*system, *archived, *kept], engine.workspace)
    return [comparable(m) for m in whole]


def fresh_engine(policy: ContextPolicy, name: str) -> ContextEngine:
    return ContextEngine(Workspace(f"memory://{name}"), policy, clock=fixed_clock)
