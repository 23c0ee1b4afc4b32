"""A history kept as OpenAI-style dicts compacts like one kept as LangChain messages."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    TranscriptArchive,
    Workspace,
    is_summary,
    pointer_of,
    resolve_pointers,
)
from ctxfs._summary._message import SUMMARY_TAG
from ctxfs.tools import tool_functions

Message = dict[str, Any]
POLICY = ContextPolicy(
    max_input_tokens=32_000,
    tool_results={"threshold": {"tokens": 400}},
    summarization={"trigger": {"messages": 12}, "keep": {"messages": 4}},
)


def _turn(n: int) -> list[Message]:
    """A user question, a tool call with a large result, and an answer."""
    call = {
        "id": f"call_{n}",
        "type": "function",
        # not how json.dumps writes it: a round trip through LangChain would change it
        "function": {"name": "fetch", "arguments": f'{{"page":{n} }}'},
    }
    return [
        {"role": "user", "content": f"question {n}: what is on page {n}?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": f"page {n} line\n" * 300},
        {"role": "assistant", "content": f"answer {n}: page {n} is long."},
    ]


def _run(engine: ContextEngine, turns: int, history: list[Message] | None = None) -> list[Message]:
    history = list(history or [])
    for n in range(len(history) // 4, len(history) // 4 + turns):
        user, call, result, answer = _turn(n)
        history += [user, call]
        history.append(engine.offload_openai_result(result, thread_id="t", name="fetch"))
        history.append(answer)
        history = engine.compact_openai(history, thread_id="t").messages
        json.dumps(history)  # what is sent is plain JSON
    return history


def _summaries(history: list[Message]) -> list[str]:
    return [m["content"] for m in history if str(m.get("content", "")).startswith(SUMMARY_TAG)]


def test_ten_summaries_over_dicts_continue_one_chain_and_lose_nothing() -> None:
    workspace = Workspace("memory://openai-chain")
    engine = ContextEngine(workspace, POLICY)
    history = _run(engine, 30)

    archive = TranscriptArchive(workspace, "t")
    segments = archive.segments()
    assert len(segments) >= 10
    [summary] = _summaries(history)
    assert summary.count(SUMMARY_TAG) == 1  # the summary was never summarized as content
    # the chain continued: each segment starts where the previous one stopped
    assert [s.start for s in segments[1:]] == [s.stop for s in segments[:-1]]
    # no summary was ever archived as conversation
    assert not any(is_summary(m) for m in archive.read_all())
    # nothing lost: the user turns of all 30 rounds are in the archive or the history
    archived = " ".join(str(m.content) for m in archive.read_all())
    kept = " ".join(str(m.get("content")) for m in history)
    for n in range(30):
        assert f"question {n}:" in archived + kept
    # the offloaded results were archived as pointers ctxfs knows, and resolve byte-exact
    results = [m for m in archive.read_all() if m.type == "tool"]
    assert results and all(pointer_of(m) is not None for m in results)
    for message in resolve_pointers(results, workspace):
        n = int(str(message.tool_call_id).removeprefix("call_"))
        assert message.content == _turn(n)[2]["content"]


def test_a_new_process_recognises_the_summary_from_the_archive() -> None:
    workspace = Workspace("memory://openai-resume")
    history = _run(ContextEngine(workspace, POLICY), 6)
    assert _summaries(history)
    before = len(TranscriptArchive(workspace, "t").segments())

    history = _run(ContextEngine(workspace, POLICY), 6, history)  # a fresh engine
    segments = TranscriptArchive(workspace, "t").segments()
    assert len(segments) > before
    assert [s.start for s in segments[1:]] == [s.stop for s in segments[:-1]]
    [summary] = _summaries(history)
    assert summary.count(SUMMARY_TAG) == 1


def test_unchanged_dicts_come_back_as_the_same_objects() -> None:
    engine = ContextEngine(Workspace("memory://openai-same"), POLICY)
    history = _turn(0)
    out = engine.compact_openai(history, thread_id="t")
    assert not out.result.summarized
    assert all(a is b for a, b in zip(out.messages, history, strict=True))
    assert out.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"page":0 }'


def test_the_async_twin_gives_the_same_history() -> None:
    sync = _run(ContextEngine(Workspace("memory://openai-sync"), POLICY), 8)

    async def run() -> list[Message]:
        engine = ContextEngine(Workspace("memory://openai-async"), POLICY)
        history: list[Message] = []
        for n in range(8):
            user, call, result, answer = _turn(n)
            history += [user, call]
            history.append(engine.offload_openai_result(result, thread_id="t", name="fetch"))
            history.append(answer)
            history = (await engine.acompact_openai(history, thread_id="t")).messages
        return history

    assert asyncio.run(run()) == sync


def test_a_small_result_stays_the_dict_given() -> None:
    engine = ContextEngine(Workspace("memory://openai-small"), POLICY)
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    assert engine.offload_openai_result(result, thread_id="t", name="fetch") == result


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ([{"content": "no role"}], "not an OpenAI-style message dict"),
        (["a string"], "not an OpenAI-style message dict"),
    ],
)
def test_bad_histories_are_refused_with_a_clear_error(history: list[Any], message: str) -> None:
    engine = ContextEngine(Workspace("memory://openai-bad"), POLICY)
    with pytest.raises(TypeError, match=message):
        engine.compact_openai(history, thread_id="t")


def test_a_result_without_its_call_id_is_refused() -> None:
    engine = ContextEngine(Workspace("memory://openai-bad-result"), POLICY)
    with pytest.raises(TypeError, match="tool_call_id"):
        engine.offload_openai_result({"role": "tool", "content": "x"}, thread_id="t")
    with pytest.raises(TypeError, match="role"):
        engine.offload_openai_result({"role": "user", "content": "x"}, thread_id="t")


# OpenAI's tool message is {"role", "tool_call_id", "content"}; strict endpoints refuse more
TOOL_KEYS = {"role", "tool_call_id", "content"}


def test_pointer_dicts_hold_only_the_keys_of_an_openai_tool_message() -> None:
    engine = ContextEngine(Workspace("memory://openai-tool-keys"), POLICY)
    _user, call, result, _answer = _turn(0)
    named = {**result, "name": "fetch"}  # some clients write the tool's name on its result
    offloaded = engine.offload_openai_result(named, thread_id="t", name="fetch")
    assert offloaded["content"].startswith("[ctxfs: tool result offloaded]")
    assert set(offloaded) == TOOL_KEYS

    # a large result cleared by compaction, not offloaded on the way in
    clearing = ContextPolicy(
        max_input_tokens=32_000,
        tool_results={"enabled": False},
        clearing={
            "trigger": {"tokens": 500},
            "keep": {"results": 0},
            "clear_at_least": {"tokens": 100},
            "frees_per_rewrite": 0.0,
        },
    )
    engine = ContextEngine(Workspace("memory://openai-tool-keys-cleared"), clearing)
    history = [_user, call, named, _answer, *_turn(1)]
    out = engine.compact_openai(history, thread_id="t").messages
    assert out[2] is not named and out[2]["content"].startswith("[ctxfs: tool result")
    assert set(out[2]) == TOOL_KEYS


def test_the_name_on_a_result_dict_is_the_tool_name() -> None:
    exempt = ContextPolicy(
        max_input_tokens=32_000,
        tool_results={"threshold": {"tokens": 400}, "exempt_tools": {"lookup"}},
    )
    engine = ContextEngine(Workspace("memory://openai-named-result"), exempt)
    # the dict's own name is the tool's: a tool the policy exempts by name stays inline
    result = {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "x\n" * 2000}
    assert engine.offload_openai_result(result, thread_id="t") is result
    # ctxfs's read_file is exempt as the tool it is; a result merely named read_file is not
    read_file = {f.name: f for f in tool_functions(engine.workspace)}["read_file"]
    named = {**result, "name": "read_file", "tool_call_id": "c2"}
    assert engine.offload_openai_result(named, thread_id="t", tool=read_file) is named
    assert engine.offload_openai_result(named, thread_id="t")["content"].startswith(
        "[ctxfs: tool result offloaded]"
    )


def test_a_tool_call_whose_arguments_are_not_json_is_kept_as_given() -> None:
    # models do write broken arguments; the history is still one a provider accepts
    engine = ContextEngine(Workspace("memory://openai-bad-arguments"), POLICY)
    broken = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": '{"pa'}},
            {"id": "c2", "type": "function", "function": {"name": "fetch", "arguments": "[1]"}},
            {"id": "c3", "type": "function", "function": {"name": "fetch", "arguments": ""}},
        ],
    }
    history: list[Message] = [
        {"role": "user", "content": "fetch"},
        broken,
        {"role": "tool", "tool_call_id": "c1", "content": "Error: arguments are not JSON"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: arguments are not an object"},
        {"role": "tool", "tool_call_id": "c3", "content": "fetched"},
    ]
    out = engine.compact_openai(history, thread_id="t")
    assert all(a is b for a, b in zip(out.messages, history, strict=True))

    # archived, the calls keep their ids and the broken arguments their exact text
    workspace = Workspace("memory://openai-bad-arguments-archived")
    engine = ContextEngine(workspace, POLICY)
    engine.compact_openai(
        [*history, {"role": "user", "content": "go on"}], thread_id="t", force=True
    )
    [message] = [m for m in TranscriptArchive(workspace, "t").read_all() if m.type == "ai"]
    assert isinstance(message, AIMessage)
    calls = {c["id"]: c["args"] for c in message.tool_calls}
    invalid = {c["id"]: c["args"] for c in message.invalid_tool_calls}
    assert calls == {"c3": {}}
    assert invalid == {"c1": '{"pa', "c2": "[1]"}


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"role": "tool", "content": "x"}, "message 0 .*tool_call_id"),
        ({"role": "tool", "tool_call_id": 7, "content": "x"}, "message 0 .*tool_call_id"),
        ({"role": "ipython", "content": "x"}, "message 0 .*'ipython'"),
        ({"role": "remove", "id": "__remove_all__", "content": ""}, "message 0 .*'remove'"),
        ({"role": "user"}, "message 0 .*content"),
        ({"role": "user", "content": 5}, "message 0"),
        (
            {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}]},
            "message 0: a tool call",
        ),
        ({"role": "assistant", "content": "", "tool_calls": "call"}, "message 0: tool_calls"),
    ],
)
def test_dicts_that_are_not_chat_messages_are_refused_naming_the_message(
    message: Message, error: str
) -> None:
    engine = ContextEngine(Workspace("memory://openai-not-messages"), POLICY)
    with pytest.raises(ValueError, match=error):
        engine.compact_openai([message], thread_id="t")


def test_every_shape_openai_accepts_comes_back_as_given() -> None:
    engine = ContextEngine(Workspace("memory://openai-shapes"), POLICY)
    call = {"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
    history: list[Message] = [
        {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
        {"role": "user", "name": "ann", "content": [{"type": "text", "text": "fetch"}]},
        {"role": "assistant", "tool_calls": [call]},  # content is optional beside tool calls
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
        {"role": "tool", "tool_call_id": "c9", "content": "a result without its call"},
        {"role": "assistant", "content": None, "refusal": "I can't", "annotations": []},
    ]
    out = engine.compact_openai(history, thread_id="t")
    assert all(a is b for a, b in zip(out.messages, history, strict=True))


@pytest.mark.parametrize("run", ["sync", "async"])
def test_the_live_plan_comes_back_after_a_summary_of_dicts(run: str) -> None:
    """``compact_openai`` takes the live plan as ``compact`` does: a summary puts it back
    after itself, so an agent kept as dicts stays on its plan (it could not pass one)."""
    engine = ContextEngine(Workspace(f"memory://openai-plan-{run}"), POLICY)
    todos = [
        {"content": "read every page", "status": "completed"},
        {"content": "compare page 3 with page 7", "status": "in_progress"},
    ]
    history: list[Message] = []
    for n in range(8):
        history += _turn(n)
    if run == "sync":
        out = engine.compact_openai(history, thread_id="p", plan=todos)
    else:
        out = asyncio.run(engine.acompact_openai(history, thread_id="p", plan=todos))
    assert out.result.summarized
    text = "\n".join(str(d.get("content")) for d in out.messages)
    assert "[in_progress] compare page 3 with page 7" in text
