"""ctxfs.testing: the scripted chat model finds its place by its own reply ids."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

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
