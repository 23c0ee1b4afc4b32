"""Adversarial review of the recent changes: each test demonstrates one defect.

Every test is ``xfail(strict=True)``: it fails today for the reason given, and the marker
turns into an error the day the defect is fixed, so that the marker gets removed with the fix.
"""

from __future__ import annotations

import itertools
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import (
    ContextEngine,
    ContextEvent,
    ContextPolicy,
    Summarized,
    TranscriptArchive,
    Workspace,
    is_pinned,
    is_summary,
    pointer_of,
    resolve_pointers,
)
from ctxfs._archive._transcripts import decode_jsonl, encode_jsonl
from ctxfs._layout import result_path
from ctxfs._pointers._pointer import Pointer, render_result
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call
from ctxfs.tools import tool_functions

BIG = "".join(f"line {i} of the output\n" for i in range(300))


def _turns(first: int, count: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(first, first + count):
        out.append(HumanMessage(f"question {i} " + "word " * 40, id=f"h{i}"))
        out.append(AIMessage(f"answer {i} " + "word " * 40, id=f"a{i}"))
    return out


def _summarizing_policy() -> ContextPolicy:
    return ContextPolicy(
        max_input_tokens=2_000,
        summarization={"trigger": {"tokens": 1_000}, "keep": {"messages": 2}},
    )


def _offloading_engine(name: str, **settings: Any) -> ContextEngine:
    policy = ContextPolicy(
        max_input_tokens=8_000, tool_results={"threshold": {"tokens": 50}}, **settings
    )
    return ContextEngine(Workspace(f"memory://review-{name}"), policy)


def _dump(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return messages_to_dict(messages)


# -- 1. no loss: re-read pointers ----------------------------------------------------------


def _clearing_engine(name: str) -> ContextEngine:
    policy = ContextPolicy(
        max_input_tokens=16_000,
        tool_results={"threshold": {"tokens": 50}},
        clearing={
            "trigger": {"tokens": 1},
            "keep": {"results": 0},
            "clear_at_least": {"tokens": 1},
            "frees_per_rewrite": 0.0,
            "min_tokens": 1,
        },
    )
    return ContextEngine(Workspace(f"memory://review-{name}"), policy)


def _with_recovery_call(
    offloaded: ToolMessage, name: str, args: dict[str, Any], view: str
) -> list[BaseMessage]:
    return [
        SystemMessage("s", id="s"),
        HumanMessage("go", id="h"),
        AIMessage("", tool_calls=[{"name": "bash", "args": {}, "id": "c0"}], id="a0"),
        offloaded,
        AIMessage("", tool_calls=[{"name": name, "args": args, "id": "c1"}], id="a1"),
        ToolMessage(view, tool_call_id="c1", name=name, id="t1"),
        AIMessage("done", id="a2"),
    ]


def test_a_reread_view_resolves_to_the_text_the_model_saw() -> None:
    engine = _clearing_engine("reread-budget")
    ws = engine.workspace
    text = "\n".join(f"line {i} " + "data " * 20 for i in range(2_000))
    offloaded = engine.offload_tool_result(
        ToolMessage(text, tool_call_id="c0", name="bash", id="t0"), thread_id="t"
    )
    path = pointer_of(offloaded).path
    # the agent's read_file, sized to a small window as ContextMiddleware sizes it
    read_file = {f.name: f for f in tool_functions(ws, max_output_tokens=300)}["read_file"]
    view = read_file(file_path=path)
    history = _with_recovery_call(offloaded, "read_file", {"file_path": path}, view)
    result = engine.compact(history, thread_id="t")
    assert pointer_of(result.messages[5]) is not None  # the view was cleared (re-read)
    assert resolve_pointers(result.messages, ws)[5].content == view


def test_a_reread_of_a_folder_resolves_to_the_matches_it_showed() -> None:
    engine = _clearing_engine("reread-folder")
    ws = engine.workspace

    def report(k: int) -> str:
        return "\n".join(f"row {i} NEEDLE{k} " + "pad " * 10 for i in range(200))

    offloaded = engine.offload_tool_result(
        ToolMessage(report(0), tool_call_id="c0", name="bash", id="t0"), thread_id="t"
    )
    args = {"pattern": "NEEDLE", "path": "/tool_results", "output_mode": "content"}
    view = {f.name: f for f in tool_functions(ws)}["grep"](**args)
    history = _with_recovery_call(offloaded, "grep", args, view)
    result = engine.compact(history, thread_id="t")
    assert pointer_of(result.messages[5]) is not None
    later = ToolMessage(report(1), tool_call_id="c9", name="bash", id="t9")
    engine.offload_tool_result(later, thread_id="t")
    assert resolve_pointers(result.messages, ws)[5].content == view


# -- 1. no loss: provider-format copies and metadata ----------------------------------------


def test_openai_arguments_string_is_restored_byte_exact() -> None:
    engine = _offloading_engine(
        "openai-args", tool_inputs={"trigger": {"tokens": 1}, "keep_messages": 0, "min_chars": 10}
    )
    args = {"file_path": "/a.py", "content": BIG}
    raw = json.dumps(args, separators=(",", ":"))  # as OpenAI sends it
    original = AIMessage(
        "",
        tool_calls=[{"name": "write_file", "args": args, "id": "c1"}],
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": raw},
                }
            ]
        },
        id="a1",
    )
    out = engine.offload_tool_inputs([original], thread_id="t").messages
    assert out[0].tool_calls[0]["args"]["content"] != BIG  # offloaded
    assert _dump(resolve_pointers(out, engine.workspace)) == _dump([original])


def test_a_tool_message_keeps_what_it_carried_under_the_ctxfs_key() -> None:
    engine = _offloading_engine("user-kwargs")
    original = ToolMessage(
        BIG,
        tool_call_id="c1",
        name="bash",
        id="t1",
        additional_kwargs={"ctxfs": {"note": "set by the user"}},
    )
    kept = engine.offload_tool_result(original, thread_id="t")
    assert kept.content != BIG  # offloaded
    assert _dump(resolve_pointers([kept], engine.workspace)) == _dump([original])


def test_an_ai_message_keeps_what_it_carried_under_the_ctxfs_key() -> None:
    engine = _offloading_engine(
        "user-kwargs-ai", tool_inputs={"trigger": {"tokens": 1}, "keep_messages": 0}
    )
    original = AIMessage(
        "",
        tool_calls=[{"name": "write_file", "args": {"file_path": "/b", "content": BIG}, "id": "c"}],
        additional_kwargs={"ctxfs": {"mine": 1}},
        id="a",
    )
    out = engine.offload_tool_inputs([original], thread_id="t").messages
    assert out[0].tool_calls[0]["args"]["content"] != BIG
    assert _dump(resolve_pointers(out, engine.workspace)) == _dump([original])


# -- 2. look-alikes ------------------------------------------------------------------------


def test_a_pointer_copied_to_another_call_is_content() -> None:
    # Fixed in review: result_pointer trusted metadata whose digest matched even when it
    # named another call, so the copy resolved to the other call's file.
    engine = _offloading_engine("copied-pointer")
    first = engine.offload_tool_result(
        ToolMessage(BIG, tool_call_id="c1", name="bash", id="t1"), thread_id="t"
    )
    # a tool whose output is a copy of an earlier message (metadata included)
    copy = first.model_copy(update={"tool_call_id": "c2", "id": "t2"})
    assert pointer_of(copy) is None
    assert resolve_pointers([copy], engine.workspace)[0].content == copy.content


def test_input_pointers_copied_to_another_call_are_content() -> None:
    # Fixed in review: input_pointers trusted metadata naming another call's id.
    engine = _offloading_engine(
        "copied-input", tool_inputs={"trigger": {"tokens": 1}, "keep_messages": 0}
    )
    original = AIMessage(
        "",
        tool_calls=[{"name": "write_file", "args": {"file_path": "/b", "content": BIG}, "id": "c"}],
        id="a",
    )
    out = engine.offload_tool_inputs([original], thread_id="t").messages[0]
    assert isinstance(out, AIMessage)
    calls = [{**call, "id": "other"} for call in out.tool_calls]
    copy = out.model_copy(update={"tool_calls": calls, "id": "b"})
    assert resolve_pointers([copy], engine.workspace) == [copy]


def test_a_legacy_lookalike_naming_no_file_is_content() -> None:
    ws = Workspace("memory://review-legacy")
    fake = Pointer(kind="result", path=result_path("t", "c1", "x"), lines=3, chars=20, tokens=9)
    text = render_result(fake, "a\nb\nc", preview_lines=2, preview_line_chars=50)
    message = ToolMessage(text, tool_call_id="c1", name="bash", id="t1")
    assert resolve_pointers([message], ws) == [message]


def test_a_reused_call_id_echoing_a_pointer_text_is_content() -> None:
    engine = _offloading_engine("legacy-echo")
    first = engine.offload_tool_result(
        ToolMessage(BIG, tool_call_id="c1", name="bash", id="t1"), thread_id="t"
    )
    echo = ToolMessage(str(first.content), tool_call_id="c1", name="bash", id="t2")
    assert resolve_pointers([echo], engine.workspace) == [echo]


def test_a_message_with_copied_summary_metadata_is_archived() -> None:
    ws = Workspace("memory://review-fake-summary")
    engine = ContextEngine(ws, _summarizing_policy())
    task = HumanMessage(
        "MY REAL TASK: build the thing",
        id="task",
        additional_kwargs={"ctxfs": {"kind": "summary", "next_index": 2}},
    )
    history = [SystemMessage("sys", id="sys"), task, *_turns(0, 20)]
    result = engine.compact(history, thread_id="t")
    assert any(isinstance(e, Summarized) for e in result.events)
    archived = TranscriptArchive(ws, "t").read_all()
    kept = [m for m in result.messages if not (is_summary(m) or is_pinned(m))]
    assert "task" in {m.id for m in [*archived, *kept]}


def test_the_archive_restores_objects_that_look_like_its_bytes_tag() -> None:
    message = HumanMessage(
        "hi", id="h", additional_kwargs={"blob": {"__ctxfs_bytes_base64__": "aGk="}}
    )
    assert _dump(decode_jsonl(encode_jsonl([message]))) == _dump([message])


# -- 5. archive ----------------------------------------------------------------------------


def test_a_forked_thread_can_summarize() -> None:
    ws = Workspace("memory://review-fork")
    engine = ContextEngine(ws, _summarizing_policy())
    parent = engine.compact([SystemMessage("sys", id="sys"), *_turns(0, 20)], thread_id="A")
    assert any(isinstance(e, Summarized) for e in parent.events)
    fork = engine.compact([*parent.messages, *_turns(100, 20)], thread_id="B")
    assert any(isinstance(e, Summarized) for e in fork.events), fork.events


def test_an_unpersisted_compaction_leaves_no_overlapping_segment() -> None:
    ws = Workspace("memory://review-orphan")
    engine = ContextEngine(ws, _summarizing_policy())
    history = [SystemMessage("sys", id="sys"), *_turns(0, 20)]
    engine.compact(history, thread_id="t")  # the model call after it fails
    engine.compact([*history, *_turns(50, 1)], thread_id="t")
    segments = TranscriptArchive(ws, "t").segments()
    ranges = [(s.start, s.stop) for s in segments]
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges)), ranges


def test_a_compaction_whose_index_write_failed_once_summarizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [datetime(2025, 1, 1, tzinfo=UTC)]

    def clock() -> datetime:  # a real clock moves on between two attempts
        now[0] += timedelta(seconds=5)
        return now[0]

    ws = Workspace("memory://review-index-fault")
    engine = ContextEngine(ws, _summarizing_policy(), clock=clock)
    first = engine.compact([SystemMessage("sys", id="sys"), *_turns(0, 20)], thread_id="t")
    history = [*first.messages, *_turns(100, 20)]

    write_bytes = Workspace.write_bytes
    failures = [1]

    def faulty(self: Workspace, path: str, data: bytes, **kwargs: Any) -> Any:
        if path.endswith("/index.json") and failures:
            failures.pop()
            raise OSError("the store timed out")
        return write_bytes(self, path, data, **kwargs)

    monkeypatch.setattr(Workspace, "write_bytes", faulty)
    done = engine.compact(history, thread_id="t")  # the head write is tried again
    assert not failures
    assert any(isinstance(e, Summarized) for e in done.events), done.events
    summarized = next(e for e in done.events if isinstance(e, Summarized))
    listed = [s.markdown_path for s in TranscriptArchive(ws, "t").segments()]
    assert summarized.segment_paths[1] in listed


def test_a_torn_version_2_index_is_rebuilt_from_the_segment_files() -> None:
    ws = Workspace("memory://review-v2")
    archive = TranscriptArchive(ws, "t")
    index = archive.segments()
    segment, _ = archive.write_segment([HumanMessage("one", id="1")], start=0, tokens=1)
    segment = archive.commit(segment, summary=HumanMessage("s", id="s"), committed=index)
    ws.rm(archive.record_path(1))  # what version 2 wrote: no record
    document = json.loads(ws.read_text(archive.index_path))
    document["version"] = 2
    ws.write_bytes(archive.index_path, json.dumps(document).encode()[:-20])  # torn
    found = TranscriptArchive(ws, "t").segments(expected=[segment.markdown_path])
    assert [s.number for s in found] == [1]


def test_two_archives_committing_in_turn_keep_both_segments() -> None:
    ws = Workspace("memory://review-two-writers")
    one, two = TranscriptArchive(ws, "t"), TranscriptArchive(ws, "t")
    seen_one, seen_two = one.segments(), two.segments()
    first, _ = one.write_segment([HumanMessage("a", id="1")], start=0, tokens=1, committed=seen_one)
    second, _ = two.write_segment(
        [HumanMessage("b", id="2")], start=1, tokens=1, committed=seen_two
    )
    one.commit(first, summary=HumanMessage("s1", id="s1"), committed=seen_one)
    two.commit(second, summary=HumanMessage("s2", id="s2"), committed=seen_two)
    assert [s.number for s in TranscriptArchive(ws, "t").segments()] == [1, 2]


# -- 3. the middleware ---------------------------------------------------------------------


@tool
def fetch(n: int = 0) -> str:
    """Fetches record n."""
    return f"result {n}: " + " ".join(f"w{n}_{i}" for i in range(150))


def _agent_policy(keep: int) -> ContextPolicy:
    return ContextPolicy(
        max_input_tokens=3_000,
        summarization={"trigger": {"tokens": 800 if keep > 2 else 500}, "keep": {"messages": keep}},
        clearing={"enabled": False},
    )


def _reconstructed(messages: list[BaseMessage], ws: Workspace) -> list[BaseMessage]:
    archived = TranscriptArchive(ws, "t").read_all()
    kept = [m for m in messages if not (is_summary(m) or is_pinned(m))]
    return resolve_pointers([*archived, *kept], ws)


def test_the_overflow_retry_archives_each_message_once() -> None:
    class Refusing(ScriptedChatModel):
        refused: int = 0

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            if self.refused == 0 and any(is_summary(m) for m in messages):
                self.refused += 1
                raise ValueError("Error code: 400 - context_length_exceeded")
            return super()._generate(messages, *args, **kwargs)

    ws = Workspace("memory://review-retry")
    model = Refusing(responses=[*(tool_call("fetch", {"n": i}) for i in range(8)), "done"])
    middleware = ContextMiddleware(ws, _agent_policy(keep=4), tools=False)
    agent = create_agent(model, [fetch], middleware=[middleware], checkpointer=InMemorySaver())
    logging.disable(logging.WARNING)
    try:
        out = agent.invoke(
            {"messages": [HumanMessage("go", id="u0")]}, {"configurable": {"thread_id": "t"}}
        )
    finally:
        logging.disable(logging.NOTSET)
    assert model.refused == 1
    ids = [m.id for m in _reconstructed(out["messages"], ws)]
    assert len(ids) == len(set(ids)) == 18  # go + 8 calls + 8 results + done


def test_an_outer_middleware_edit_is_not_persisted() -> None:
    ws = Workspace("memory://review-editing")
    editing = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=300, keep=1)])
    middleware = ContextMiddleware(ws, _agent_policy(keep=2), tools=False)
    model = ScriptedChatModel(responses=[*(tool_call("fetch", {"n": i}) for i in range(8)), "done"])
    agent = create_agent(
        model, [fetch], middleware=[editing, middleware], checkpointer=InMemorySaver()
    )
    logging.disable(logging.WARNING)
    try:
        out = agent.invoke(
            {"messages": [HumanMessage("go", id="u0")]}, {"configurable": {"thread_id": "t"}}
        )
    finally:
        logging.disable(logging.NOTSET)
    results = [m for m in _reconstructed(out["messages"], ws) if isinstance(m, ToolMessage)]
    assert [m.content for m in results] == [fetch.invoke({"n": i}) for i in range(8)]


# -- 4. the request budget -----------------------------------------------------------------


def test_a_request_over_the_limit_that_a_summary_can_fix_is_summarized() -> None:
    policy = ContextPolicy(max_input_tokens=10_000, reserve_output_tokens=5_000)
    engine = ContextEngine(Workspace("memory://review-reserve"), policy)
    result = engine.compact([SystemMessage("sys", id="sys"), *_turns(0, 70)], thread_id="t")
    assert result.tokens_before > policy.request_limit_tokens
    assert result.request_tokens <= policy.request_limit_tokens, result.events


def test_a_policy_that_does_not_fit_the_profile_window_is_reported() -> None:
    # a misuse, found at the first model call: it stops the run with a clear error instead of
    # letting every request go out uncompacted with only a log line
    middleware = ContextMiddleware(
        Workspace("memory://review-profile"),
        ContextPolicy(reserve_output_tokens=8_192),
        tools=False,
    )
    model = ScriptedChatModel(responses=["ok"], profile={"max_input_tokens": 8_000})
    agent = create_agent(model, [], middleware=[middleware])
    with pytest.raises(ValueError) as info:
        agent.invoke({"messages": [("user", "hi " * 9_000)]})  # over the 8,000-token window
    assert str(info.value).startswith(
        "the policy does not fit the window of the model's profile (8,000 tokens): "
        "reserve_output_tokens (8192) leaves no room"
    )
    assert model.requests == []  # nothing was sent


def test_messages_an_inner_middleware_adds_survive_a_summary() -> None:
    from langchain.agents.middleware import AgentMiddleware
    from langchain.agents.middleware.types import ExtendedModelResponse
    from langgraph.types import Command

    class Noting(AgentMiddleware):  # type: ignore[type-arg]
        calls = 0

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            response = handler(request)
            Noting.calls += 1
            note = HumanMessage(f"note {Noting.calls}", id=f"note{Noting.calls}")
            return ExtendedModelResponse(
                model_response=response, command=Command(update={"messages": [note]})
            )

    ws = Workspace("memory://review-inner-command")
    middleware = ContextMiddleware(ws, _agent_policy(keep=4), tools=False)
    model = ScriptedChatModel(responses=[*(tool_call("fetch", {"n": i}) for i in range(8)), "done"])
    agent = create_agent(
        model, [fetch], middleware=[middleware, Noting()], checkpointer=InMemorySaver()
    )
    logging.disable(logging.WARNING)
    try:
        out = agent.invoke(
            {"messages": [HumanMessage("go", id="u0")]}, {"configurable": {"thread_id": "t"}}
        )
    finally:
        logging.disable(logging.NOTSET)
    notes = {m.id for m in _reconstructed(out["messages"], ws) if str(m.id).startswith("note")}
    assert notes == {f"note{k}" for k in range(1, Noting.calls + 1)}


def test_structured_output_tools_are_counted_in_the_request() -> None:
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel, Field

    from ctxfs import TiktokenCounter
    from ctxfs._compaction._request import tool_schema_text
    from ctxfs.integrations.langchain import ContextMeasured

    class Report(BaseModel):
        """A detailed report."""

        summary: str = Field(description="word " * 400)

    events: list[ContextEvent] = []
    middleware = ContextMiddleware(
        Workspace("memory://review-structured"),
        ContextPolicy(max_input_tokens=16_000),
        tools=False,
        on_event=lambda e, _: events.append(e),
    )
    reply = AIMessage("", tool_calls=[{"name": "Report", "args": {"summary": "x"}, "id": "r1"}])
    model = ScriptedChatModel(responses=[reply])
    agent = create_agent(model, [], middleware=[middleware], response_format=ToolStrategy(Report))
    agent.invoke({"messages": [("user", "hi")]})
    counter = TiktokenCounter()
    sent = sum(counter.count_text(tool_schema_text(t)) for t in model.request_tools[0])
    measured = next(e for e in events if isinstance(e, ContextMeasured))
    assert sent > 0 and measured.tool_tokens == sent


def test_a_torn_record_does_not_drop_a_committed_segment_from_the_index() -> None:
    from ctxfs import ArchiveError

    ws = Workspace("memory://review-torn-record")
    archive = TranscriptArchive(ws, "t")
    for k in range(3):
        index = archive.segments()
        segment, _ = archive.write_segment([HumanMessage(f"m{k}", id=str(k))], start=k, tokens=1)
        archive.commit(segment, summary=HumanMessage("s", id=f"s{k}"), committed=index)
    record = ws.read_bytes(archive.record_path(2))
    ws.rm(archive.record_path(2))
    ws.write_bytes(archive.record_path(2), record[: len(record) // 2])  # reads back torn
    ws.rm(archive.index_path)
    try:
        numbers = [s.number for s in TranscriptArchive(ws, "t").segments()]
    except ArchiveError:
        numbers = [1, 2, 3]  # refusing is fine too: nothing was dropped
    assert numbers == [1, 2, 3]
