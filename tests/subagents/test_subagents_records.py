"""A sub-task's record is read back safely: odd text is kept; a record that cannot be read
(torn, deep, a key named twice, a newer format, foreign) is reported and kept, never run over;
a write torn mid-way is undone."""

from __future__ import annotations

import contextlib
import json
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ctxfs import ContextPolicy, TaskRecordError, Workspace, WorkspaceError
from ctxfs.subagents import SubAgents, task_records
from ctxfs.subagents._record import child_thread_id, read_record, record_path
from ctxfs.testing import Fault, FaultyStore, RecordingStore, ScriptedChatModel

_TEXT = st.lists(
    st.one_of(st.text(max_size=8), st.sampled_from(["\ud800", "\udfff", "\x00", "é", "\u2028"])),
    min_size=1,
    max_size=6,
).map("".join)
_counter = iter(range(10**9))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=_TEXT, answer=_TEXT)
def test_any_text_in_a_prompt_or_answer_is_recorded_and_reused(prompt: str, answer: str) -> None:
    assume(prompt.strip())  # an empty task is refused (test_subagents_hostile)
    workspace = Workspace(f"memory://sub-records-{next(_counter)}")
    model = ScriptedChatModel(responses=[answer or "."])
    subagents = SubAgents(workspace, model=model, policy=ContextPolicy(max_input_tokens=8_000))
    first = subagents.run("general-purpose", prompt, parent_thread_id="p", tool_call_id="c")
    assert first.status == "completed"
    again = subagents.run("general-purpose", prompt, parent_thread_id="p", tool_call_id="c")
    paired = (
        (answer or ".").encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    )
    assert again.answer == paired  # the recorded result, read back (a split pair rejoined)
    assert len(model.requests) == 1  # not run again
    workspace.read_bytes(record_path(first.thread_id)).decode("utf-8")  # valid UTF-8


_POLICY = ContextPolicy(max_input_tokens=8_000)


def _finished(name: str) -> tuple[Workspace, SubAgents, ScriptedChatModel, str]:
    workspace = Workspace(f"memory://sub-records-{name}-{next(_counter)}")
    model = ScriptedChatModel(responses=["one", "two"])
    subagents = SubAgents(workspace, model=model, policy=_POLICY)
    first = subagents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    assert first.status == "completed" and len(model.requests) == 1
    return workspace, subagents, model, record_path(first.thread_id)


def _whole(workspace: Workspace, path: str) -> dict[str, object]:
    return json.loads(workspace.read_bytes(path))


DAMAGED = {
    "torn": lambda data: data[: len(data) // 2],
    "nested too deep": lambda data: b"[" * 50_000 + b"]" * 50_000,
    "a key named twice": lambda data: (
        data.replace(b'"status": "completed"', b'"status": "running"', 1)
        .rstrip()
        .removesuffix(b"}")
        + b', "status": "completed"}\n'
    ),
    "a newer format": lambda data: data.replace(b'"version": 1', b'"version": 2'),
    "not a record": lambda data: b'{"format": "something else"}',
}
WHY = {
    "torn": "not valid JSON",
    "nested too deep": "nested 50,000 levels deep",
    "a key named twice": "the key 'status' appears twice",
    "a newer format": "record is format version 2, written by a newer ctxfs",
    "not a record": "not a sub-task record",
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_record_that_cannot_be_read_is_reported_and_kept_and_the_task_not_run_again(
    damage: str,
) -> None:
    # it counted as none: the task ran again (its result, in the damaged record, was lost
    # and its work done twice), and the record was written over without a word
    workspace, subagents, model, path = _finished(damage.replace(" ", "-"))
    damaged = DAMAGED[damage](workspace.read_bytes(path))
    workspace.write_bytes(path, damaged)
    with pytest.raises(TaskRecordError, match=re.escape(path)) as caught:
        subagents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    assert WHY[damage] in str(caught.value) and caught.value.path == path
    advice = "upgrade ctxfs" if damage == "a newer format" else "delete it to run the task again"
    assert advice in str(caught.value)
    # the task tool answers it in one line
    tool = subagents.task_tool(parent_thread_id="p")
    args = {"description": "Go.", "subagent_type": "general-purpose"}
    out = tool.invoke({"type": "tool_call", "name": "task", "args": args, "id": "c"})
    assert out.status == "error" and path in out.content and "\n" not in out.content
    assert len(model.requests) == 1 and workspace.read_bytes(path) == damaged
    assert task_records(workspace) == ()  # listed without it
    workspace.rm(path)  # as the message says: the task runs again
    again = subagents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    assert again.status == "completed" and len(model.requests) == 2


def _writes_of(path: str) -> int:
    raw = Workspace(f"memory://sub-records-count-{next(_counter)}")
    store = RecordingStore(raw.store)
    SubAgents(
        Workspace(store, check=False), model=ScriptedChatModel(responses=["one"]), policy=_POLICY
    ).run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    return sum(1 for call in store.calls if call.method == "write" and call.path == path)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_record_torn_mid_write_is_undone_and_a_recorded_result_is_never_run_again(
    data: st.DataObject,
) -> None:
    # the record torn as the task ended was read as no record: the task ran again on the
    # next call, and its first result was lost without a word
    path = record_path(child_thread_id("p", "c"))
    nth = data.draw(st.integers(1, _writes_of(path)), label="write of the record")
    keep = data.draw(st.integers(0, 300), label="bytes kept")
    raw = Workspace(f"memory://sub-records-torn-{next(_counter)}")
    store = FaultyStore(raw.store)
    store.add(Fault(method="write", kind="torn_write", nth=nth, path=path, keep=keep))
    model = ScriptedChatModel(responses=["one", "two"])
    subagents = SubAgents(Workspace(store, check=False), model=model, policy=_POLICY)
    with contextlib.suppress(WorkspaceError):  # the claim or the running record: nothing ran
        subagents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    if raw.exists(path):
        recorded = read_record(raw, child_thread_id("p", "c"))  # whole: parses
        assert recorded is not None
    else:
        recorded = None
    store.heal()
    again = subagents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    assert again.status == "completed"
    if recorded is not None and recorded.result is not None:
        assert len(model.requests) == 1 and again.answer == "one"  # not run again
    final = read_record(raw, child_thread_id("p", "c"))
    assert final is not None and final.result is not None
    assert final.result.answer == again.answer
