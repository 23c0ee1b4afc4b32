"""The history tools search the branch the conversation is on: after a fork (time travel, a
retried turn) the segments another branch archived are left out, with a note saying how many,
and a read of one says it is not the history that led here."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxfs import ContextEngine, ContextPolicy, TiktokenCounter, TranscriptArchive, Workspace
from ctxfs.integrations._on_request import _leaf_of
from ctxfs.testing import ScriptedChatModel
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._history import history_functions

POLICY = ContextPolicy(
    max_input_tokens=4_000,
    clearing={"enabled": False},
    summarization={"trigger": {"tokens": 2_000}, "keep": {"messages": 2}},
)


def _turns(tag: str, count: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n in range(count):
        words = " ".join(f"{tag}{n}x{i}" for i in range(80))
        out += [HumanMessage(f"{tag} {n}: {words}", id=f"{tag}-h{n}")]
        out += [AIMessage(f"noted {tag}word {n}", id=f"{tag}-a{n}")]
    return out


def _agent_runs(workspace: Workspace, *, summaries: int) -> tuple[Any, Any, dict[str, object]]:
    """``run(text, replies, at=None)``: one turn of a ``create_agent`` with ctxfs's middleware
    on one thread of an ``InMemorySaver`` (from the checkpoint ``at`` when given), its model
    answering ``replies``; with the saver and the thread's config."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from ctxfs.integrations.langchain import ContextMiddleware

    model = ScriptedChatModel(script_id="s", responses=[f"S{n}." for n in range(summaries)])
    policy = POLICY.model_copy(
        update={"summarization": POLICY.summarization.model_copy(update={"model": model})}
    )
    saver = InMemorySaver()
    config: dict[str, object] = {"configurable": {"thread_id": "t"}}

    def run(text: str, replies: list[object], at: object = None) -> dict[str, object]:
        answers = ScriptedChatModel(script_id=text, responses=replies)
        middleware = ContextMiddleware(workspace, policy)
        agent = create_agent(answers, [], middleware=[middleware], checkpointer=saver)
        return agent.invoke({"messages": [("user", text)]}, at or config)  # type: ignore[arg-type]

    return run, saver, config


def _words(tag: str) -> str:
    return " ".join(f"{tag}x{i}" for i in range(150))


def _compact(engine: ContextEngine, messages: list[BaseMessage]) -> list[BaseMessage]:
    model = ScriptedChatModel(responses=[f"Summary {n}." for n in range(4)])
    result = engine.compact(messages, thread_id="t", model=model)
    assert result.summarized, [type(e).__name__ for e in result.events]
    return list(result.messages)


def _fork() -> tuple[Workspace, list[BaseMessage], list[BaseMessage]]:
    """Segment 1 (alpha), then segment 2 (beta) on one line, segment 3 (gamma) forked from
    segment 1: the two histories' states."""
    workspace = Workspace("memory://history-branches")
    engine = ContextEngine(workspace, POLICY)
    first = _compact(engine, _turns("alpha", 8))
    line = _compact(engine, [*first, *_turns("beta", 8)])
    forked = _compact(engine, [*first, *_turns("gamma", 8)])
    parents = {s.number: s.parent for s in TranscriptArchive(workspace, "t").segments()}
    assert parents == {1: 0, 2: 1, 3: 1}, parents
    return workspace, line, forked


def _tools(workspace: Workspace, leaf: int | None) -> dict[str, object]:
    budget = OutputBudget(4_000, TiktokenCounter())
    found = history_functions(workspace, budget, thread_id="t", branch=lambda: leaf)
    return {f.name: f for f in found}


def _segments(text: str) -> set[str]:
    return set(re.findall(r"segment-(\d+)\.jsonl", text))


def test_a_forked_branch_searches_its_own_segments_and_says_what_it_left_out() -> None:
    workspace, line, forked = _fork()
    assert (_leaf_of({"messages": line}), _leaf_of({"messages": forked})) == (2, 3)
    query = "alphaword betaword gammaword"
    on_fork = _tools(workspace, 3)["history_search"](query=query)  # type: ignore[operator]
    assert _segments(on_fork) == {"0001", "0003"}, on_fork
    assert "left out: 1 archived segment of other branches" in on_fork
    on_line = _tools(workspace, 2)["history_search"](query=query)  # type: ignore[operator]
    assert _segments(on_line) == {"0001", "0002"}, on_line
    everything = _tools(workspace, None)["history_search"](query=query)  # type: ignore[operator]
    assert _segments(everything) == {"0001", "0002", "0003"}
    before_any = _tools(workspace, 0)["history_search"](query=query)  # type: ignore[operator]
    assert _segments(before_any) == set() and "left out: 3 archived segments" in before_any


def test_reading_a_segment_of_another_branch_says_so() -> None:
    workspace, _, _ = _fork()
    (other,) = [s.jsonl_path for s in TranscriptArchive(workspace, "t").segments() if s.number == 2]
    read = _tools(workspace, 3)["history_read"]
    assert "another branch of the thread" in read(segment=other, message=0)  # type: ignore[operator]
    own = _tools(workspace, 2)["history_read"]
    assert "another branch" not in own(segment=other, message=0)  # type: ignore[operator]


def test_a_state_without_messages_or_summary() -> None:
    assert _leaf_of({}) is None and _leaf_of(None) is None
    assert _leaf_of({"messages": _turns("x", 2)}) == 0


def test_an_agent_that_time_travelled_searches_its_own_branch() -> None:
    """create_agent with ContextMiddleware and a checkpointer: two summaries on the first
    line, then a run resumed from a checkpoint between them: the model's history_search,
    run through the middleware, leaves out the second summary's segment."""
    from ctxfs.testing import tool_call

    workspace = Workspace("memory://history-branches-agent")
    run, saver, config = _agent_runs(workspace, summaries=9)
    for n in range(4):
        run(f"alphaword {n} {_words(f'a{n}')}", [f"ok a{n}"])
    # the checkpoint to come back to: the latest segment on the line at this point
    archive = TranscriptArchive(workspace, "t")
    back_to = saver.get_tuple(config)  # type: ignore[arg-type]
    assert back_to is not None
    before = {s.number for s in archive.segments()}
    for n in range(4):
        run(f"betaword {n} {_words(f'b{n}')}", [f"ok b{n}"])
    later = {s.number for s in archive.segments()} - before
    assert later, "the line summarized again after the checkpoint"
    search = tool_call("history_search", {"query": "alphaword betaword"})
    out = run("gammaword: what did we do?", [search, "done"], back_to.config)
    (found,) = [m for m in out["messages"] if getattr(m, "name", None) == "history_search"]  # type: ignore[union-attr]
    text = str(found.content)
    assert not {str(n).zfill(4) for n in later} & _segments(text), text
    assert "left out:" in text


@pytest.mark.slow
def test_twenty_forks_from_one_checkpoint_each_search_only_their_own_branch() -> None:
    """create_agent with ContextMiddleware on InMemorySaver: 20 runs resumed from the same
    checkpoint, each summarizing on its own; the model's history_search on each finds only
    that branch's words and segments (and the shared ones), and going back to the
    checkpoint once more after all of them answers."""
    from ctxfs.testing import tool_call

    workspace = Workspace("memory://history-twenty-forks")
    run, saver, config = _agent_runs(workspace, summaries=300)
    for n in range(4):
        run(f"alphaword {n} {_words(f'a{n}')}", [f"ok a{n}"])
    back_to = saver.get_tuple(config)  # type: ignore[arg-type]
    assert back_to is not None
    archive = TranscriptArchive(workspace, "t")
    shared = {s.number for s in archive.segments()}
    query = " ".join(f"br{k}word" for k in range(20))
    for branch in range(20):
        before = {s.number for s in archive.segments()}
        for n in range(4):
            at = back_to.config if n == 0 else None
            run(f"br{branch}word {n} {_words(f'b{branch}n{n}')}", [f"ok {branch} {n}"], at)
        mine = {s.number for s in archive.segments()} - before
        assert mine, "the branch summarized"
        out = run("what?", [tool_call("history_search", {"query": query}), "done"])
        found = [m for m in out["messages"] if getattr(m, "name", None) == "history_search"]  # type: ignore[union-attr]
        text = str(found[-1].content)
        assert {int(n) for n in _segments(text)} <= mine | shared, (branch, text)
        assert set(re.findall(r"br(\d+)word", text)) == {str(branch)}, (branch, text)
    out = run(f"back again {_words('z')}", ["ok z"], back_to.config)
    assert out["messages"][-1].content == "ok z"  # type: ignore[index]
