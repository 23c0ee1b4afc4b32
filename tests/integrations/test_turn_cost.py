"""A turn of a ``create_agent`` agent costs what the turn adds, not what the thread holds.

Each turn of an agent with a checkpointer starts from the thread reloaded from the
checkpoint: every message a new object. The middleware still tokenizes only the messages the
thread gained since the last model call, looks at no other message one by one, and counts
the history once per model call, at 100 messages and at 2,000 alike (the counter itself is
held to the same at 20,000: tests/sdk/test_tokens_incremental.py). No timing: the
tokenizer's calls and the counter's per-message work are counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from ctxfs import ContextPolicy, Workspace
from ctxfs._tokens import CallableTokenCounter
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, long_history

CONFIG: Any = {"configurable": {"thread_id": "long"}}


class _Counting(CallableTokenCounter):
    """One token per four characters; counts tokenizer calls, per-message lookups and
    history counts."""

    def __init__(self) -> None:
        super().__init__(lambda text: (len(text) + 3) // 4)
        self.texts = self.slow = self.histories = 0

    def count_text(self, text: str) -> int:
        self.texts += 1
        return super().count_text(text)

    def _snapshot_of(self, message: BaseMessage, fingerprint: object | None = None) -> Any:
        self.slow += 1
        return super()._snapshot_of(message, fingerprint)

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        self.histories += 1
        return super().count_messages(messages)


def _texts(message: BaseMessage) -> int:
    fresh = _Counting()
    fresh.count_message(message)
    return fresh.texts


@pytest.mark.parametrize("size", [100, 2_000])
def test_a_turn_tokenizes_only_what_the_thread_gained(size: int) -> None:
    counter = _Counting()
    policy = ContextPolicy(max_input_tokens=400 * size + 100_000)  # nothing to compact
    middleware = ContextMiddleware(Workspace("memory://turn-cost"), policy, token_counter=counter)
    model = ScriptedChatModel(responses=["first answer", "second answer"])
    agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
    agent.update_state(CONFIG, {"messages": long_history(size // 2)})
    agent.invoke({"messages": [("user", "a first question")]}, CONFIG)
    counter.texts = counter.slow = counter.histories = 0

    after = agent.invoke({"messages": [("user", "one more question")]}, CONFIG)["messages"]

    # gained since the last model call: that call's answer and the new question
    answer, question = after[-3], after[-2]
    assert (answer.content, question.content) == ("first answer", "one more question")
    assert counter.histories == 1  # the history is counted once per model call
    assert counter.slow == 2  # and only those two messages were looked at one by one
    assert counter.texts == _texts(answer) + _texts(question)
