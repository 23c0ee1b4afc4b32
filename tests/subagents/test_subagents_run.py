"""SubAgents in plain Python: the registry, a task's result, its limits, its failures, its
record, its transcript, on every backend."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from pydantic import ValidationError

from ctxfs import ContextPolicy, TranscriptArchive, Workspace
from ctxfs.subagents import (
    GENERAL_PURPOSE,
    SubAgent,
    SubAgents,
    TaskProgress,
    TaskResult,
    UnknownSubAgentError,
    child_thread_id,
    merge_artifacts,
    task_records,
)
from ctxfs.testing import ScriptedChatModel, tool_call

_WORKSPACES = itertools.count()
POLICY = ContextPolicy(max_input_tokens=16_000, tool_results={"threshold": {"tokens": 500}})


@tool
def query(name: str) -> str:
    """Runs a named query over the orders table (about 3,000 tokens of rows)."""
    rows = [f"{name} row {i}: order {1000 + i} settled by worker-{i % 5}" for i in range(300)]
    rows[217] = f"{name} row 217: order 8841 refunded twice by worker-3"
    return "\n".join(rows)


def _agents(workspace: Workspace, replies: Sequence[object], **kwargs: object) -> SubAgents:
    model = ScriptedChatModel(responses=list(replies))
    return SubAgents(workspace, model=model, policy=POLICY, tools=[query], **kwargs)  # type: ignore[arg-type]


# -- the registry ---------------------------------------------------------------------------


def test_general_purpose_is_registered_first_and_users_add_their_own() -> None:
    ws = Workspace("memory://sub-registry")
    mine = SubAgent(name="researcher", description="Reads papers.", system_prompt="Be brief.")
    agents = _agents(ws, ["x"], subagents=[mine])
    assert agents.names == (GENERAL_PURPOSE, "researcher")
    assert agents.get("researcher") is mine and "researcher" in agents
    assert (
        SubAgents(
            ws, model=ScriptedChatModel(responses=[]), policy=POLICY, general_purpose=False
        ).names
        == ()
    )
    with pytest.raises(ValueError, match="registered already"):
        agents.register(mine)


def test_an_unknown_name_is_an_error_listing_the_registered_ones() -> None:
    agents = _agents(Workspace("memory://sub-unknown"), ["x"])
    with pytest.raises(UnknownSubAgentError) as caught:
        agents.run("reseacher", "go", parent_thread_id="p", tool_call_id="c")
    assert str(caught.value) == "no sub-agent named 'reseacher'; registered: 'general-purpose'"
    assert isinstance(caught.value, LookupError) and caught.value.registered == (GENERAL_PURPOSE,)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "has space", "description": "d"}, "should match pattern"),
        ({"name": "ok", "description": ""}, "at least 1 character"),
        ({"name": "ok", "description": "d", "max_turns": 0}, "greater than or equal to 1"),
        ({"name": "ok", "description": "d", "max_token": 5}, "Extra inputs are not permitted"),
        ({"name": "ok", "description": "d", "model": "openai:gpt-5"}, "instance of BaseChatModel"),
        ({"name": "ok", "description": "d", "tools": [print]}, "instance of BaseTool"),
    ],
)
def test_a_spec_is_validated(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SubAgent(**fields)  # type: ignore[arg-type]


def test_max_depth_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_depth must be at least 1"):
        _agents(Workspace("memory://sub-depth"), [], max_depth=0)


@given(st.lists(st.lists(st.sampled_from("abcdef"), max_size=8), max_size=6))
def test_merge_artifacts_keeps_first_order_and_never_repeats(batches: list[list[str]]) -> None:
    merged: list[str] = []
    for batch in batches:
        merged = merge_artifacts(merged, batch)
    flat = [p for batch in batches for p in batch]
    assert merged == list(dict.fromkeys(flat))  # each once, in order of first appearance
    assert merge_artifacts(merged, merged) == merged  # idempotent
    assert merge_artifacts(None, None) == []


# -- one task -------------------------------------------------------------------------------


def test_a_task_returns_answer_artifacts_and_transcript(workspace: Workspace) -> None:
    agents = _agents(
        workspace,
        [
            tool_call("query", {"name": "refunds"}),
            tool_call("write_file", {"file_path": "notes/refunds.md", "content": "1 double\n"}),
            tool_call(
                "edit_file",
                {"file_path": "/notes/refunds.md", "old_string": "1", "new_string": "One"},
            ),
            tool_call("write_file", {"file_path": "/tool_results/x.md", "content": "no"}),
            "One order was refunded twice; notes in /notes/refunds.md.",
        ],
    )
    result = agents.run(
        "general-purpose", "Check refunds.", parent_thread_id="main", tool_call_id="call-1"
    )
    assert result.status == "completed" and result.reason == ""
    assert result.answer == "One order was refunded twice; notes in /notes/refunds.md."
    assert result.thread_id == child_thread_id("main", "call-1") == "main/task-call-1"
    # written and edited: one artifact; the refused write into an SDK area is none
    assert result.artifacts == ("/notes/refunds.md",)
    assert workspace.read_text("/notes/refunds.md") == "One double\n"
    assert result.turns == 5 and result.tokens > 0
    # the big query result was offloaded under the sub-agent's own thread
    (offloaded,) = workspace.glob("**/*.txt", "/tool_results").paths
    assert offloaded.startswith("/tool_results/main_task-call-1-")
    assert "order 8841 refunded twice" in workspace.read_text(offloaded)
    # the whole conversation is archived, and reads back as the sub-agent had it
    archive = TranscriptArchive(workspace, result.thread_id)
    messages = archive.read_all()
    assert [m.type for m in messages] == ["human", *["ai", "tool"] * 4, "ai"]
    assert messages[0].content == "Check refunds."
    assert result.transcripts == (result.transcript,) == (archive.segments()[0].markdown_path,)
    assert "Check refunds." in workspace.read_text(str(result.transcript))
    # and the record ties the thread to its parent
    (record,) = task_records(workspace)
    assert (record.parent_thread_id, record.tool_call_id, record.subagent) == (
        "main",
        "call-1",
        "general-purpose",
    )
    assert record.result == result and record.status == "completed"


def test_the_sub_agent_sees_only_its_system_prompt_and_task() -> None:
    model = ScriptedChatModel(responses=["Done."])
    spec = SubAgent(
        name="critic",
        description="Critiques.",
        system_prompt="You critique.",
        model=model,
        tools=(),
        workspace_tools=False,
    )
    agents = _agents(Workspace("memory://sub-isolated"), [], subagents=[spec])
    agents.run("critic", "Critique the plan.", parent_thread_id="main", tool_call_id="c")
    (request,) = model.requests
    assert [type(m) for m in request] == [SystemMessage, HumanMessage]
    assert [m.content for m in request] == ["You critique.", "Critique the plan."]
    assert model.request_tools == [[]]  # no workspace tools, no task tool


def test_text_the_parent_reads() -> None:
    result = TaskResult(
        subagent="gp",
        thread_id="p/task-c",
        parent_thread_id="p",
        tool_call_id="c",
        status="completed",
        answer="It is 7.",
        artifacts=("/a.md",),
        transcript="/transcripts/t/segment-0001.md",
        transcripts=("/transcripts/t/segment-0001.md",),
        turns=2,
        tokens=90,
    )
    assert result.to_text() == (
        "[sub-agent 'gp': 2 turn(s); transcript: /transcripts/t/segment-0001.md "
        "(thread 'p/task-c'); files written: /a.md]\n"
        '<subagent_answer subagent="gp" status="completed">\nIt is 7.\n</subagent_answer>'
    )
    assert TaskResult.from_json(json.loads(json.dumps(result.to_json()))) == result
    with pytest.raises(ValueError, match="not a task result"):
        TaskResult.from_json({"status": "completed"})


# -- limits ---------------------------------------------------------------------------------


def test_max_turns_gives_a_clear_partial_result(workspace: Workspace) -> None:
    spec = SubAgent(name="looper", description="Loops.", max_turns=3)
    agents = _agents(
        workspace,
        [
            AIMessage(
                content=f"step {n}",
                tool_calls=[{"name": "ls", "args": {"path": "/"}, "id": f"ls-{n}"}],
            )
            for n in range(10)
        ],
        subagents=[spec],
    )
    result = agents.run("looper", "Loop.", parent_thread_id="p", tool_call_id="c")
    assert result.status == "partial" and result.turns == 3
    assert result.answer == "step 2"
    assert "limit of 3 model call(s) (max_turns)" in result.reason
    assert result.to_text().startswith("[sub-agent 'looper' stopped before finishing: it reached")
    messages = TranscriptArchive(workspace, result.thread_id).read_all()
    assert [m.type for m in messages] == ["human", *["ai", "tool"] * 3]  # each call answered


def test_max_tokens_stops_before_the_call_that_would_go_over() -> None:
    model = ScriptedChatModel(responses=[tool_call("query", {"name": f"q{n}"}) for n in range(9)])
    spec = SubAgent(name="spender", description="Spends.", model=model, max_tokens=12_000)
    agents = _agents(Workspace("memory://sub-budget"), [], subagents=[spec])
    result = agents.run("spender", "Spend.", parent_thread_id="p", tool_call_id="c")
    assert result.status == "partial" and "max_tokens" in result.reason
    assert 0 < result.tokens <= 12_000
    assert result.turns == len(model.requests) >= 1  # the call over the budget was not made
    assert result.answer == ""
    assert "(it had not written an answer yet)" in result.to_text()


def test_a_sub_agent_that_raises_gives_an_error_result_naming_it_and_its_transcript() -> None:
    def explode(messages: Sequence[BaseMessage]) -> AIMessage:
        raise ConnectionError("provider unreachable")

    ws = Workspace("memory://sub-raises")
    agents = _agents(ws, [tool_call("ls", {"path": "/"}), explode])
    result = agents.run("general-purpose", "Look.", parent_thread_id="p", tool_call_id="c")
    assert result.status == "failed" and not result.ok
    assert result.reason == "ConnectionError: provider unreachable"
    assert result.transcript is not None and ws.exists(result.transcript)
    text = result.to_text()
    assert text.startswith(
        f"Error: sub-agent 'general-purpose' failed. What it did is in its transcript: "
        f"{result.transcript} (thread 'p/task-c'); files written: none. Why: ConnectionError"
    )
    assert [m.type for m in TranscriptArchive(ws, result.thread_id).read_all()] == [
        "human",
        "ai",
        "tool",
    ]


def test_a_tool_that_raises_is_an_error_result_for_the_sub_agent() -> None:
    @tool
    def flaky() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    model = ScriptedChatModel(responses=[tool_call("flaky"), tool_call("nope"), "Gave up."])
    spec = SubAgent(name="f", description="d", model=model, tools=(flaky,))
    agents = _agents(Workspace("memory://sub-flaky"), [], subagents=[spec])
    result = agents.run("f", "Try.", parent_thread_id="p", tool_call_id="c")
    assert result.status == "completed"
    tool_results = [m for m in model.requests[-1] if m.type == "tool"]
    assert [m.text for m in tool_results] == [
        "Error: flaky raised RuntimeError: disk on fire",
        "Error: there is no tool named 'nope'; your tools: edit_file, flaky, glob, grep, ls, "
        "read_file, write_file",
    ]


# -- records: re-runs, reused call ids --------------------------------------------------------


def test_a_finished_task_is_not_run_again() -> None:
    ws = Workspace("memory://sub-rerun")
    model = ScriptedChatModel(responses=["First answer."])
    agents = SubAgents(ws, model=model, policy=POLICY)
    first = agents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    again = agents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    assert again == first and len(model.requests) == 1


def test_an_interrupted_task_runs_again_on_its_thread() -> None:
    ws = Workspace("memory://sub-interrupted")
    ws.write_text(
        "/transcripts/x/placeholder.md", "x"
    )  # unrelated folders without records are ignored
    from ctxfs.subagents._record import TaskRecord, write_record

    thread = child_thread_id("p", "c")
    write_record(
        ws,
        TaskRecord(
            thread_id=thread,
            parent_thread_id="p",
            tool_call_id="c",
            subagent="general-purpose",
            prompt="Go.",
        ),
    )
    agents = _agents(ws, ["Done."])
    result = agents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    assert result.thread_id == thread and result.status == "completed"


def test_a_reused_call_id_with_another_task_gets_a_thread_of_its_own() -> None:
    ws = Workspace("memory://sub-reused")
    agents = SubAgents(ws, model=ScriptedChatModel(responses=["Answer."]), policy=POLICY)
    one = agents.run("general-purpose", "Task one.", parent_thread_id="p", tool_call_id="c")
    two = agents.run("general-purpose", "Task two.", parent_thread_id="p", tool_call_id="c")
    assert (one.thread_id, two.thread_id) == ("p/task-c", "p/task-c.2")
    assert [r.prompt for r in task_records(ws)] == ["Task one.", "Task two."]


# -- nesting --------------------------------------------------------------------------------


def test_sub_agents_spawn_sub_agents_only_when_configured() -> None:
    inner_model = ScriptedChatModel(
        responses=[tool_call("write_file", {"file_path": "/deep.md", "content": "x"}), "Inner."]
    )
    inner = SubAgent(name="inner", description="Inner.", model=inner_model)
    outer_model = ScriptedChatModel(
        responses=[
            tool_call("task", {"description": "Go deeper.", "subagent_type": "inner"}),
            "Outer.",
        ]
    )
    outer = SubAgent(name="outer", description="Outer.", model=outer_model, subagents=True)
    ws = Workspace("memory://sub-nested")
    flat = _agents(ws, [], subagents=[inner, outer])  # max_depth 1: no task tool for anyone
    result = flat.run("outer", "Go.", parent_thread_id="p", tool_call_id="c1")
    assert "task" not in {t.name for t in outer_model.request_tools[0]}
    assert "there is no tool named 'task'" in str(outer_model.requests[-1][-1].content)

    outer_model.requests.clear()
    outer_model.request_tools.clear()
    deep = _agents(ws, [], subagents=[inner, outer], max_depth=2)
    result = deep.run("outer", "Go.", parent_thread_id="p", tool_call_id="c2")
    assert result.status == "completed" and result.artifacts == ("/deep.md",)
    assert "task" in {t.name for t in outer_model.request_tools[0]}
    assert "task" not in {t.name for t in inner_model.request_tools[-1]}  # depth 2 is the end
    relations = {(r.parent_thread_id, r.thread_id, r.subagent) for r in task_records(ws)}
    assert relations == {
        ("p", "p/task-c1", "outer"),
        ("p", "p/task-c2", "outer"),
        ("p/task-c2", "p/task-c2/task-scripted-0-call0", "inner"),
    }


# -- async and progress ---------------------------------------------------------------------


def test_arun_gives_the_same_result_and_reports_progress() -> None:
    def replies() -> list[object]:
        return [tool_call("ls", {"path": "/"}), "Listed."]

    seen: list[TaskProgress] = []
    sync = _agents(Workspace("memory://sub-sync"), replies())
    asyn = SubAgents(
        Workspace("memory://sub-async"),
        model=ScriptedChatModel(responses=replies()),
        policy=POLICY,
        tools=[query],
        on_event=lambda event, thread: (
            seen.append(event) if isinstance(event, TaskProgress) else None
        ),
    )
    a = sync.run("general-purpose", "List.", parent_thread_id="p", tool_call_id="c")
    b = asyncio.run(asyn.arun("general-purpose", "List.", parent_thread_id="p", tool_call_id="c"))
    assert (a.status, a.answer, a.turns, a.tokens) == (b.status, b.answer, b.turns, b.tokens)
    assert [(e.kind, e.turn, e.tools, e.detail) for e in seen] == [
        ("started", 0, (), ""),
        ("model", 1, ("ls",), ""),
        ("tool", 1, (), "ls"),
        ("model", 2, (), ""),
        ("finished", 2, (), "completed"),
    ]
    assert {e.thread_id for e in seen} == {"p/task-c"}


# -- properties -----------------------------------------------------------------------------

_IDS = st.sampled_from(["p", "p/task-c", "c", "c/task-c", "c.2"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_IDS, _IDS, st.sampled_from(["A.", "B."])), min_size=1, max_size=6))
def test_every_task_gets_its_own_thread_and_a_repeat_gets_its_result(
    tasks: list[tuple[str, str, str]],
) -> None:
    # Parent threads and call ids chosen so that some pairs spell the same thread id.
    ws = Workspace("memory://sub-prop-" + str(next(_WORKSPACES)))
    model = ScriptedChatModel(responses=[lambda messages: f"did {messages[1].content}"])
    spec = SubAgent(name="quick", description="d", tools=(), workspace_tools=False)
    agents = SubAgents(ws, model=model, policy=POLICY, subagents=[spec])
    threads: dict[tuple[str, str, str], str] = {}
    for parent, call, prompt in tasks:
        result = agents.run("quick", prompt, parent_thread_id=parent, tool_call_id=call)
        assert result.answer == f"did {prompt}"
        key = (parent, call, prompt)
        assert threads.setdefault(key, result.thread_id) == result.thread_id  # a repeat: same
    assert len(set(threads.values())) == len(threads)  # distinct tasks: distinct threads
    assert len(model.requests) == len(threads)  # a repeat is not run again
    recorded = {
        (r.parent_thread_id, r.tool_call_id, r.prompt): r.thread_id for r in task_records(ws)
    }
    assert recorded == threads


def test_a_long_sub_task_is_summarized_and_its_transcript_still_holds_everything() -> None:
    ws = Workspace("memory://sub-long")
    pages = [tool_call("query", {"name": f"q{n}"}) for n in range(8)]
    small = ContextPolicy(
        max_input_tokens=12_000,
        tool_results={"threshold": {"tokens": 5_000}},  # results stay in the context
        clearing={"enabled": False},
        summarization={"trigger": {"fraction": 0.6}, "keep": {"fraction": 0.2}},
    )
    spec = SubAgent(name="long", description="d", policy=small, workspace_tools=False)
    agents = _agents(ws, [*pages, "Read all eight."], subagents=[spec])
    result = agents.run("long", "Read them all.", parent_thread_id="p", tool_call_id="c")
    assert result.status == "completed" and result.turns == 9
    archive = TranscriptArchive(ws, result.thread_id)
    segments = archive.segments()
    assert len(segments) >= 2  # summarized on the way, then the rest at the end
    assert [s.start for s in segments[1:]] == [s.stop for s in segments[:-1]]  # contiguous
    assert result.transcripts == tuple(s.markdown_path for s in segments)
    messages = archive.read_all()
    assert [m.type for m in messages] == ["human", *["ai", "tool"] * 8, "ai"]
    assert [m.id for m in messages if m.type == "ai"] == [f"scripted-{n}" for n in range(9)]
