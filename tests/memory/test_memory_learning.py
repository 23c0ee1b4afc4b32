"""Learning: structured extraction with a scripted model, invalid output, the debounced queue."""

from __future__ import annotations

import logging

import pytest
from _memory_helpers import FakeClock, FakeTime, extraction_reply, fact, replies_in_turn
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxfs import Workspace
from ctxfs.memory import LongTermMemory, MemorySettings, TurnQueue
from ctxfs.testing import ScriptedChatModel, tool_call


def _memory(model: ScriptedChatModel, clock: FakeClock, **settings: object) -> LongTermMemory:
    return LongTermMemory(
        Workspace("memory://learning"),
        ("alice",),
        model=model,
        settings=MemorySettings.model_validate(settings),
        clock=clock,
        now=FakeTime(),
    )


TURN = [
    HumanMessage("I'm moving our billing service to Postgres 16.", id="h1"),
    tool_call("grep", {"pattern": "mysql"}, call_id="c1"),
    ToolMessage("config/db.yml:3: mysql://...", tool_call_id="c1", id="t1"),
    AIMessage("Done: the billing service now points at Postgres 16.", id="a1"),
]


def test_the_model_is_sent_the_conversation_without_tool_traffic() -> None:
    model = ScriptedChatModel(responses=[extraction_reply(fact("Alice owns billing."))])
    memory = _memory(model, FakeClock(), debounce_seconds=0)
    assert memory.record("thread-1", TURN) == 2
    (learned,) = memory.process_due()
    assert learned.applied is not None and learned.messages == 2
    prompt = model.requests[0][-1].content
    assert "User: I'm moving our billing service to Postgres 16." in prompt
    assert "Assistant: Done: the billing service now points at Postgres 16." in prompt
    assert "mysql://" not in prompt and "grep" not in prompt
    assert [t.__name__ for t in model.request_tools[0]] == ["MemoryUpdate"]


def test_facts_under_the_threshold_are_not_stored_and_duplicates_merge() -> None:
    model = ScriptedChatModel(
        responses=[
            replies_in_turn(
                extraction_reply(
                    fact("Alice owns billing.", 0.8, tags=["billing"]),
                    fact("Alice might like jazz.", 0.69),
                    user={"work": "Runs the billing team."},
                ),
                extraction_reply(fact("alice owns  BILLING", 0.95, tags=["team"])),
            )
        ]
    )
    memory = _memory(model, FakeClock(), debounce_seconds=0)
    first = memory.learn(TURN, thread_id="t1").applied
    assert first is not None and first.below_threshold == ("Alice might like jazz.",)
    second = memory.learn(TURN, thread_id="t2").applied
    assert second is not None and second.merged == first.added and second.added == ()
    (stored,) = memory.load().facts
    assert (stored.content, stored.confidence, stored.tags) == (
        "Alice owns billing.",
        0.95,
        ("billing", "team"),
    )
    assert stored.source == "t1"
    assert memory.load().user.work == "Runs the billing team."
    assert memory.load().threads == ("t1", "t2")


def test_the_cap_drops_the_lowest_confidence_first() -> None:
    model = ScriptedChatModel(
        responses=[
            extraction_reply(
                fact("Fact A.", 0.9),
                fact("Fact B.", 0.75),
                fact("Fact C.", 0.99),
                fact("Fact D.", 0.8),
            )
        ]
    )
    memory = _memory(model, FakeClock(), max_facts=2)
    applied = memory.learn(TURN, thread_id="t").applied
    assert applied is not None
    assert [f.content for f in memory.load().facts] == ["Fact A.", "Fact C."]
    from ctxfs.memory import fact_id

    assert set(applied.evicted) == {fact_id("Fact B."), fact_id("Fact D.")}
    assert set(applied.added) == {fact_id("Fact A."), fact_id("Fact C.")}


@pytest.mark.parametrize(
    "reply",
    [
        "I could not find anything worth remembering.",
        tool_call(
            "MemoryUpdate", {"new_facts": [{"content": "x", "category": "gossip", "confidence": 2}]}
        ),
        tool_call("MemoryUpdate", {"new_facts": "not a list"}),
        tool_call("SomethingElse", {"a": 1}),
    ],
    ids=["prose", "invalid-fields", "wrong-type", "other-tool"],
)
def test_invalid_extraction_output_is_logged_and_dropped_without_touching_the_memory(
    reply: object, caplog: pytest.LogCaptureFixture
) -> None:
    good = extraction_reply(fact("Alice owns billing."))
    model = ScriptedChatModel(responses=[replies_in_turn(good, reply)])  # type: ignore[arg-type]
    memory = _memory(model, FakeClock())
    memory.learn(TURN, thread_id="t1")
    before = memory.file.workspace.read_bytes(memory.file.path)
    with caplog.at_level(logging.WARNING, logger="ctxfs.memory"):
        learned = memory.learn(TURN, thread_id="t2")
    assert learned.applied is None
    assert "extraction output is invalid and was dropped" in caplog.text
    assert memory.file.workspace.read_bytes(memory.file.path) == before


def test_a_failing_model_is_logged_and_nothing_is_written(caplog: pytest.LogCaptureFixture) -> None:
    def boom(messages: object) -> AIMessage:
        raise ConnectionError("provider unreachable")

    memory = _memory(ScriptedChatModel(responses=[boom]), FakeClock())
    with caplog.at_level(logging.WARNING, logger="ctxfs.memory"):
        assert memory.learn(TURN, thread_id="t").applied is None
    assert "provider unreachable" in caplog.text
    assert not memory.file.workspace.exists(memory.file.path)


def test_without_a_model_learning_is_refused() -> None:
    with pytest.raises(ValueError, match="no model"):
        LongTermMemory(Workspace("memory://no-model"), ("a",)).learn(TURN, thread_id="t")


# -- the debounced queue ---------------------------------------------------------------------


def test_a_thread_is_due_once_quiet_for_the_debounce() -> None:
    clock = FakeClock()
    queue = TurnQueue(debounce_seconds=30, clock=clock)
    queue.add("t1", [HumanMessage("first", id="1")])
    clock.advance(20)
    queue.add("t1", [HumanMessage("first", id="1"), HumanMessage("second", id="2")])
    clock.advance(29)
    assert queue.due() == []  # the second turn pushed the due time back
    assert queue.next_due() == 50
    clock.advance(1)
    (batch,) = queue.due()
    assert [m.content for m in batch.messages] == ["first", "second"]
    assert queue.pending() == {} and queue.due() == []


def test_threads_are_debounced_apart_and_drain_takes_all() -> None:
    clock = FakeClock()
    queue = TurnQueue(debounce_seconds=30, clock=clock)
    queue.add("a", [HumanMessage("x", id="1")])
    clock.advance(15)
    queue.add("b", [HumanMessage("y", id="2")])
    clock.advance(15)
    assert [b.thread_id for b in queue.due()] == ["a"]
    assert queue.pending() == {"b": 1}
    assert [b.thread_id for b in queue.drain()] == ["b"]


def test_a_message_is_queued_once_however_often_it_is_offered() -> None:
    queue = TurnQueue(debounce_seconds=0, clock=FakeClock())
    state = [HumanMessage("hello"), AIMessage("hi", id="a")]
    assert queue.add("t", state) == 2
    assert queue.add("t", state) == 0
    assert queue.add("t", [*state, HumanMessage("more", id="h2")]) == 1
    (batch,) = queue.due()
    assert [m.content for m in batch.messages] == ["hello", "hi", "more"]


def test_the_memory_learns_from_a_burst_of_turns_in_one_call() -> None:
    clock = FakeClock()
    model = ScriptedChatModel(responses=[extraction_reply(fact("Alice owns billing."))])
    memory = _memory(model, clock)
    memory.record("t", TURN[:1])
    clock.advance(10)
    memory.record("t", TURN)
    clock.advance(29.9)
    assert memory.process_due() == []
    clock.advance(0.1)
    (learned,) = memory.process_due()
    assert learned.messages == 2 and len(model.requests) == 1


def test_flush_learns_from_every_queued_turn_now() -> None:
    model = ScriptedChatModel(responses=[extraction_reply(fact("Alice owns billing."))])
    memory = _memory(model, FakeClock())
    memory.record("t", TURN)
    assert [learned.thread_id for learned in memory.flush()] == ["t"]
    assert len(memory.load().facts) == 1


def test_a_storage_failure_while_learning_queues_the_turns_again() -> None:
    from ctxfs import BackendError
    from ctxfs.testing import Fault, FaultyStore

    store = FaultyStore(Workspace("memory://learning-faults").store)
    clock = FakeClock()
    model = ScriptedChatModel(
        responses=[replies_in_turn(*[extraction_reply(fact("Alice owns billing."))] * 3)]
    )
    memory = LongTermMemory(Workspace(store), ("alice",), model=model, clock=clock)
    memory.record("t1", TURN)
    memory.record("t2", [HumanMessage("Second thread.", id="x")])
    clock.advance(30)
    store.add(Fault(method="write", kind="error", path=memory.file.path))
    with pytest.raises(BackendError):
        memory.process_due()
    assert memory.queue.pending() == {"t1": 2, "t2": 1}
    assert memory.process_due() == []  # due again only after the debounce
    clock.advance(30)
    assert [learned.thread_id for learned in memory.process_due()] == ["t1", "t2"]
    assert len(memory.load().facts) == 1


def test_a_memory_without_a_model_queues_nothing() -> None:
    memory = LongTermMemory(Workspace("memory://no-model-queue"), ("a",))
    assert memory.record("t", TURN) == 0 and memory.queue.pending() == {}


def test_a_model_outage_while_learning_queues_the_turns_again() -> None:
    """A provider that cannot be reached is worth trying again (unlike a reply that does not
    validate, which is dropped): the queued turns wait for the next try."""
    from ctxfs.memory._extract import ExtractionModelError

    calls = []

    def flaky(messages: object) -> AIMessage:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("provider unreachable")
        return extraction_reply(fact("Alice owns billing."))

    clock = FakeClock()
    memory = _memory(ScriptedChatModel(responses=[flaky, flaky]), clock)
    memory.record("t1", TURN)
    clock.advance(30)
    with pytest.raises(ExtractionModelError, match="provider unreachable"):
        memory.process_due()
    assert memory.queue.pending() == {"t1": 2}
    clock.advance(30)
    assert [learned.thread_id for learned in memory.process_due()] == ["t1"]
    assert [f.content for f in memory.load().facts] == ["Alice owns billing."]


def test_a_defect_while_learning_still_keeps_the_turns_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever stops learning (here a defect in applying the update), the turns it had not
    learned from wait in the queue: they were dropped unless the error was a ctxfs one."""
    clock = FakeClock()
    model = ScriptedChatModel(
        responses=[replies_in_turn(*[extraction_reply(fact("Alice owns billing."))] * 2)]
    )
    memory = _memory(model, clock)
    memory.record("t1", TURN)
    clock.advance(30)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a defect")

    monkeypatch.setattr(memory, "apply", broken)
    with pytest.raises(RuntimeError, match="a defect"):
        memory.process_due()
    assert memory.queue.pending() == {"t1": 2}
    monkeypatch.undo()
    clock.advance(30)
    assert [learned.thread_id for learned in memory.process_due()] == ["t1"]
