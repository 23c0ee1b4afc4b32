"""A sub-task's record is read back safely: odd text is kept, deep or foreign JSON is no record."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ctxfs import ContextPolicy, Workspace
from ctxfs.subagents import SubAgents
from ctxfs.subagents._record import read_record, record_path
from ctxfs.testing import ScriptedChatModel

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


def test_a_record_nested_deep_counts_as_none_and_the_task_runs_again() -> None:
    workspace = Workspace("memory://sub-records-deep")
    model = ScriptedChatModel(responses=["one", "two"])
    subagents = SubAgents(workspace, model=model, policy=ContextPolicy(max_input_tokens=8_000))
    first = subagents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    path = record_path(first.thread_id)
    workspace.write_text(path, "[" * 50_000 + "]" * 50_000)
    assert read_record(workspace, first.thread_id) is None
    again = subagents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id="c")
    assert again.status == "completed" and len(model.requests) == 2  # it ran again
    assert read_record(workspace, first.thread_id) is not None  # and was recorded anew
