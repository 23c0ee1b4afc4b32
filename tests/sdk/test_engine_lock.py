"""ContextEngine.lock: held around every stretch of engine work, free while the model answers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs import ContextEngine, ContextPolicy, Summarized, Workspace
from ctxfs.testing import ScriptedChatModel

THREAD = "t"


def _held_elsewhere(lock: threading.RLock) -> bool:
    """Whether another thread could not take ``lock`` right now (the caller may hold it)."""
    got: list[bool] = []

    def attempt() -> None:
        got.append(lock.acquire(blocking=False))
        if got[0]:
            lock.release()

    probe = threading.Thread(target=attempt)
    probe.start()
    probe.join()
    return not got[0]


class _Probe:
    """A token counter and a summary model reply that record the lock and the thread."""

    def __init__(self) -> None:
        self.engine: ContextEngine | None = None
        self.counted_locked: list[bool] = []
        self.counted_in: set[int] = set()
        self.asked_locked: list[bool] = []

    def count(self, text: str) -> int:
        assert self.engine is not None
        self.counted_locked.append(_held_elsewhere(self.engine.lock))
        self.counted_in.add(threading.get_ident())
        return len(text.split())

    def reply(self, messages: Sequence[BaseMessage]) -> str:
        assert self.engine is not None
        self.asked_locked.append(_held_elsewhere(self.engine.lock))
        return "SUMMARY: the user said hello five times."


def _engine(probe: _Probe, name: str) -> tuple[ContextEngine, ScriptedChatModel]:
    model = ScriptedChatModel(responses=[probe.reply])
    policy = ContextPolicy(
        max_input_tokens=16_000,
        tool_inputs={"trigger": {"tokens": 10}, "keep_messages": 1, "min_chars": 50},
        clearing={"enabled": True, "trigger": {"tokens": 10}, "keep": {"results": 0}},
        summarization={"trigger": {"messages": 4}, "keep": {"messages": 1}, "model": model},
    )
    probe.engine = ContextEngine(Workspace(f"memory://{name}"), policy, probe.count)
    return probe.engine, model


def _history() -> list[BaseMessage]:
    call = {"name": "write_file", "args": {"path": "/a.py", "content": "x = 1\n" * 40}, "id": "w"}
    return [
        *(HumanMessage(f"hello {i}", id=f"h{i}") for i in range(5)),
        AIMessage("", tool_calls=[call], id="a"),
        ToolMessage("wrote /a.py " + "ok " * 300, tool_call_id="w", name="write_file", id="r"),
        AIMessage("done", id="b"),
    ]


def _check(probe: _Probe, model: ScriptedChatModel, events: Sequence[object]) -> None:
    assert any(isinstance(e, Summarized) and e.source == "model" for e in events)
    assert len(model.requests) == 1
    assert probe.counted_locked and all(probe.counted_locked)  # engine work: under the lock
    assert probe.asked_locked == [False]  # the summary model: never under it


def test_compact_holds_the_lock_except_while_the_model_answers() -> None:
    probe = _Probe()
    engine, model = _engine(probe, "lock-sync")
    result = engine.compact(_history(), thread_id=THREAD)
    _check(probe, model, result.events)


def test_acompact_runs_engine_work_off_the_loop_and_awaits_the_model_unlocked() -> None:
    probe = _Probe()
    engine, model = _engine(probe, "lock-async")

    async def main() -> tuple[int, object]:
        return threading.get_ident(), await engine.acompact(_history(), thread_id=THREAD)

    loop_thread, result = asyncio.run(main())
    _check(probe, model, result.events)  # type: ignore[attr-defined]
    assert loop_thread not in probe.counted_in  # all tokenizing happened in worker threads


def test_acompact_gives_what_compact_gives() -> None:
    one, _ = _engine(_Probe(), "lock-same-1")
    two, _ = _engine(_Probe(), "lock-same-2")
    expected = one.compact(_history(), thread_id=THREAD)
    got = asyncio.run(two.acompact(_history(), thread_id=THREAD))
    assert got.messages == expected.messages
    assert got.events == expected.events


def test_every_public_step_holds_the_lock() -> None:
    probe = _Probe()
    engine, _ = _engine(probe, "lock-steps")
    steps: list[Callable[[], object]] = [
        lambda: engine.offload_tool_inputs(_history(), thread_id=THREAD),
        lambda: engine.clear_tool_results(_history(), thread_id=THREAD),
        lambda: engine.offload_tool_result(
            ToolMessage("data " * 30_000, tool_call_id="big", name="bash"), thread_id=THREAD
        ),
    ]
    for step in steps:
        probe.counted_locked.clear()
        step()
        assert probe.counted_locked and all(probe.counted_locked)


def test_the_lock_is_per_engine_and_reentrant() -> None:
    first, _ = _engine(_Probe(), "lock-a")
    second, _ = _engine(_Probe(), "lock-a")
    seen: list[tuple[bool, bool]] = []

    def other_thread() -> None:
        got_first, got_second = first.lock.acquire(blocking=False), second.lock.acquire(False)
        for lock, got in ((first.lock, got_first), (second.lock, got_second)):
            if got:
                lock.release()
        seen.append((got_first, got_second))

    with first.lock:  # held here: another thread cannot take it, but may take second's
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    assert seen == [(False, True)]
    with first.lock:  # a caller holding it may still call the engine
        out = first.compact(_history(), thread_id=THREAD)
    assert out.messages
