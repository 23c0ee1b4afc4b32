"""ctxfs.testing: the scripted chat model finds its place by its own reply ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs.testing import ScriptedChatModel, ScriptExhaustedError, long_history, tool_call


def test_replies_in_order_with_ids_and_tool_call_ids() -> None:
    model = ScriptedChatModel(responses=[tool_call("ls", {"path": "/"}), "done"])
    first = model.invoke([HumanMessage("hi")])
    assert first.id == "scripted-0" and first.tool_calls[0]["id"] == "scripted-0-call0"
    result = ToolMessage("a\nb", tool_call_id="scripted-0-call0")
    assert model.invoke([HumanMessage("hi"), first, result]).content == "done"
    assert model.bind_tools([]) is model


def test_resumes_from_the_conversation_not_from_memory() -> None:
    script = [tool_call("ls"), tool_call("glob", {"pattern": "*"}), "end"]
    history = [HumanMessage("hi"), AIMessage("", id="scripted-1")]
    fresh = ScriptedChatModel(responses=script)  # e.g. a restarted process
    assert fresh.invoke(history).content == "end"


def test_callable_replies_see_the_messages() -> None:
    model = ScriptedChatModel(responses=[lambda messages: f"{len(messages)} messages"])
    assert model.invoke([HumanMessage("a"), HumanMessage("b")]).content == "2 messages"
    assert len(model.requests) == 1


def test_exhausted_script_says_so() -> None:
    model = ScriptedChatModel(responses=["only"])
    reply = model.invoke([HumanMessage("a")])
    with pytest.raises(ScriptExhaustedError, match="1 replies"):
        model.invoke([HumanMessage("a"), reply, HumanMessage("again")])


def test_long_history_is_deterministic_with_ids() -> None:
    history = long_history(3, result_chars=50)
    assert len(history) == 7 and all(m.id for m in history)
    assert history == long_history(3, result_chars=50)
    assert len(history[2].content) == 50


def test_its_replies_summarized_away_do_not_restart_the_script() -> None:
    model = ScriptedChatModel(responses=[tool_call("ls"), tool_call("grep"), "end"])
    first = model.invoke([HumanMessage("hi")])
    assert first.id == "scripted-0"
    summary = HumanMessage(  # as LangChain's summarization middleware writes it
        "Here is a summary of the conversation to date: listed the root.",
        additional_kwargs={"lc_source": "summarization"},
    )
    assert model.invoke([summary]).id == "scripted-1"  # not scripted-0 again
    assert model.invoke([summary, HumanMessage("go on")]).content == "end"
    # a conversation that has not started yet starts the script, as a new sub-agent's does
    assert ScriptedChatModel(responses=["a", "b"]).invoke([HumanMessage("x")]).content == "a"
    again = ScriptedChatModel(responses=["a", "b"])
    again.invoke([HumanMessage("x")])
    assert again.invoke([HumanMessage("y")]).content == "a"


def test_a_ctxfs_summary_goes_on_with_the_script(tmp_path: Path) -> None:
    from ctxfs import ContextEngine, ContextPolicy, Workspace, is_summary

    engine = ContextEngine(
        Workspace(tmp_path),
        ContextPolicy.model_validate(
            {"max_input_tokens": 3000, "summarization": {"trigger": {"fraction": 0.5}}}
        ),
    )
    model = ScriptedChatModel(responses=[tool_call("grep", {"pattern": "x"}), "two", "three"])
    history: list[BaseMessage] = [HumanMessage("start", id="h0")]
    first = model.invoke(history)
    history += [first, *long_history(12, result_chars=800, first_id=1)[1:]]
    compacted = engine.compact(history, thread_id="t").messages
    assert any(is_summary(m) for m in compacted)
    assert not any(m.id == first.id for m in compacted)  # its reply was summarized away
    assert model.invoke(compacted).content == "two"
    # the summary and a new request, as when the kept window holds only the last message
    sent = [*(m for m in compacted if is_summary(m)), HumanMessage("go on", id="h1")]
    assert model.invoke(sent).content == "three"


def test_a_ctxfs_summary_behind_a_cache_breakpoint_goes_on_with_the_script(
    tmp_path: Path,
) -> None:
    """With ``prompt_cache="anthropic"`` the model is sent the summary as a text block with a
    ``cache_control`` breakpoint: still a conversation under way, not a new one (the script
    restarted, and its replies' ids came back into the state a second time)."""
    from ctxfs import ContextEngine, ContextPolicy, Workspace, is_summary
    from ctxfs.integrations._cache import with_breakpoints

    policy = ContextPolicy(max_input_tokens=3_000, clearing={"enabled": False})
    engine = ContextEngine(Workspace(tmp_path), policy)
    model = ScriptedChatModel(responses=[tool_call("grep", {"pattern": "x"}), "two", "three"])
    history: list[BaseMessage] = [HumanMessage("start", id="h0")]
    history += [model.invoke(history), *long_history(12, result_chars=800, first_id=1)[1:]]
    summary = next(m for m in engine.compact(history, thread_id="t").messages if is_summary(m))
    sent = with_breakpoints([summary])
    assert isinstance(sent[0].content, list) and "cache_control" in sent[0].content[0]
    assert model.invoke(sent).content == "two"


@given(
    length=st.integers(1, 12),
    cuts=st.sets(st.integers(0, 11)),
    retries=st.sets(st.integers(0, 11)),
)
def test_a_run_plays_the_script_once_through_summaries_and_retries(
    length: int, cuts: set[int], retries: set[int]
) -> None:
    # at each step the history may be summarized to one message (none of the model's
    # replies left), or the call retried (its reply lost): the script still plays in order
    model = ScriptedChatModel(responses=[f"step {n}" for n in range(length)])
    history: list[BaseMessage] = [HumanMessage("start")]
    marker = {"lc_source": "summarization"}
    played: list[str] = []
    for step in range(length):
        if step in cuts:
            history = [HumanMessage(f"summary before step {step}", additional_kwargs=marker)]
        if step in retries:
            model.invoke(history)  # the reply is lost (the call failed downstream)
        reply = model.invoke(history)
        played.append(str(reply.content))
        history = [*history, reply, HumanMessage("next")]
    assert played == [f"step {n}" for n in range(length)]
