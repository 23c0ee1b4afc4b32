"""A history kept as OpenAI-style dicts compacts like one kept as LangChain messages."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    TranscriptArchive,
    Workspace,
    is_summary,
    pointer_of,
    resolve_pointers,
)
from ctxfs._summary import SUMMARY_TAG

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
