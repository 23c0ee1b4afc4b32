"""The async twins keep the event loop free, and calls into one engine never overlap.

The lock itself is the engine's (tests/sdk/test_engine_lock.py); these tests check that the
hooks go through it.
"""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Any

from _agents import report_text
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from ctxfs import (
    ContextEngine,
    ContextEvent,
    ContextPolicy,
    Summarized,
    ToolResultOffloaded,
    Workspace,
)
from ctxfs._pointers._pointer import RESULT_TAG
from ctxfs.integrations._hooks import ContextHooks


def _words(threads: set[int]) -> Any:
    """A token counter (one token per word) that records the threads it runs in."""

    def count(text: str) -> int:
        threads.add(threading.get_ident())
        return len(text.split())

    return count


def test_async_offload_and_compaction_run_off_the_event_loop(policy: ContextPolicy) -> None:
    threads: set[int] = set()
    engine = ContextEngine(Workspace("memory://core-offloop"), policy, _words(threads))
    summarizing = ContextPolicy(
        max_input_tokens=16_000, summarization={"trigger": {"messages": 4}, "keep": {"messages": 1}}
    )
    compacting = ContextEngine(Workspace("memory://core-offloop-c"), summarizing, _words(threads))
    events: list[ContextEvent] = []
    hooks = ContextHooks(engine)
    compactor = ContextHooks(compacting, lambda e, _: events.append(e))
    big = ToolMessage(content=report_text(), tool_call_id="c1", id="m1")
    history = [HumanMessage(f"turn {i} " * 50, id=f"h{i}") for i in range(6)]

    async def main() -> tuple[int, Any, Any]:
        async def tool(_: object) -> ToolMessage:
            return big

        offloaded = await hooks.awrap_tool_call(None, tool)  # type: ignore[arg-type]
        update = await compactor.acompact(history, thread_id="c")
        return threading.get_ident(), offloaded, update

    loop_thread, offloaded, update = asyncio.run(main())
    assert isinstance(offloaded, ToolMessage) and offloaded.text.startswith(RESULT_TAG)
    assert update is not None and any(isinstance(e, Summarized) for e in events)
    assert threads and loop_thread not in threads  # all tokenizing happened in worker threads


class _RecordingLock:
    """The engine lock, announcing every attempt to take it before it blocks."""

    def __init__(self, attempted: threading.Event) -> None:
        self._lock = threading.RLock()
        self._attempts = 0
        self._attempted = attempted

    def __enter__(self) -> None:
        self._attempts += 1
        if self._attempts >= 2:
            self._attempted.set()
        self._lock.acquire()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._lock.release()


def test_two_offloads_never_run_at_once_on_one_engine(policy: ContextPolicy) -> None:
    # The first offload holds the engine until the second has arrived: at the lock (waiting,
    # as it must) or, if nothing serialized them, inside the token counter with it.
    second_arrived = threading.Event()
    active = 0
    most = 0
    guard = threading.Lock()

    def count(text: str) -> int:
        nonlocal active, most
        with guard:
            active += 1
            most = max(most, active)
            if active >= 2:
                second_arrived.set()
        try:
            if len(text) > 10_000:
                assert second_arrived.wait(timeout=30)
            return len(text.split())
        finally:
            with guard:
                active -= 1

    engine = ContextEngine(Workspace("memory://core-lock"), policy, count)
    offloaded: list[ContextEvent] = []
    engine._lock = _RecordingLock(second_arrived)  # type: ignore[assignment]
    # two sets of hooks around one engine, as the langgraph building blocks make them
    hooks = [ContextHooks(engine, lambda e, _: offloaded.append(e)) for _ in range(2)]
    messages = [
        ToolMessage(content=report_text() + f"\n{n}", tool_call_id=f"c{n}", id=f"m{n}")
        for n in range(2)
    ]

    async def run(tools: ContextHooks, message: ToolMessage) -> Any:
        async def tool(_: object) -> ToolMessage:
            return message

        return await tools.awrap_tool_call(None, tool)  # type: ignore[arg-type]

    async def main() -> list[Any]:
        return list(await asyncio.gather(*map(run, hooks, messages)))

    results = asyncio.run(main())
    assert all(r.text.startswith(RESULT_TAG) for r in results)
    assert len([e for e in offloaded if isinstance(e, ToolResultOffloaded)]) == 2
    assert most == 1


def test_hooks_take_the_engine_lock(policy: ContextPolicy) -> None:
    held: list[bool] = []

    def count(text: str) -> int:
        held.append(_held_elsewhere(engine.lock))
        return len(text.split())

    engine = ContextEngine(Workspace("memory://core-share"), policy, count)
    history = [HumanMessage(f"turn {i} " * 50, id=f"h{i}") for i in range(3)]
    big = ToolMessage(content=report_text(), tool_call_id="c1", id="m1")
    ContextHooks(engine).offload(big, thread_id="t")
    ContextHooks(engine).compact(history, thread_id="t")
    asyncio.run(ContextHooks(engine).aoffload(big, thread_id="t2"))
    asyncio.run(ContextHooks(engine).acompact(history, thread_id="t"))
    assert held and all(held)


def _held_elsewhere(lock: threading.RLock) -> bool:
    """Whether a thread other than the caller's could not take ``lock`` right now."""
    got: list[bool] = []

    def attempt() -> None:
        got.append(lock.acquire(blocking=False))
        if got[0]:
            lock.release()

    probe = threading.Thread(target=attempt)
    probe.start()
    probe.join()
    return not got[0]


def test_compaction_model_is_awaited_between_engine_steps() -> None:
    from ctxfs.testing import ScriptedChatModel

    model = ScriptedChatModel(responses=["SUMMARY: the user said hello six times."])
    policy = ContextPolicy(
        max_input_tokens=16_000,
        summarization={"trigger": {"messages": 4}, "keep": {"messages": 1}, "model": model},
    )
    hooks = ContextHooks(ContextEngine(Workspace("memory://core-model"), policy))
    history = [HumanMessage("hello", id=f"h{i}") for i in range(5)] + [AIMessage("hi", id="a")]
    update = asyncio.run(hooks.acompact(history, thread_id="m"))
    assert update is not None
    # the summary, then the task statement's pin and the pointers to the other user
    # messages (a trigger of 4 messages has no room for them by count: they come all the same)
    summary, task, pointers = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
    assert "the user said hello six times" in summary.text
    assert task.text == "hello"
    assert pointers.text.count('"hello"') == 4
    assert len(model.requests) == 1
