"""Fan-out: how many sub-agents run at once (``max_parallel``), how many one thread may start
(``max_tasks``), and what a parent sees of a long answer once it is offloaded."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import StructuredTool

from ctxfs import ContextEngine, ContextEvent, ContextPolicy, TaskLimitError, Workspace
from ctxfs.subagents import SubAgent, SubAgents, TaskProgress, task_records
from ctxfs.testing import ScriptedChatModel, tool_call

POLICY = ContextPolicy(max_input_tokens=16_000)


def _hold(messages: Sequence[BaseMessage]) -> AIMessage:
    """Calls ``hold`` with its task's name (the script then answers ``done``)."""
    return tool_call("hold", {"name": str(messages[1].content)})


class _Holders:
    """Tasks inside ``hold`` stay there until released; records who entered, in what order,
    and whether more than ``limit`` were ever inside at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.inside: set[str] = set()
        self.entered: list[str] = []
        self.waiting: list[str] = []  # tasks reported waiting for a place, in order
        self.too_many = False
        self.gates: dict[str, threading.Event] = {}

    def on_event(self, event: ContextEvent, thread_id: str) -> None:
        if isinstance(event, TaskProgress) and event.kind == "waiting":
            with self.changed:
                self.waiting.append(thread_id.rsplit("-", 1)[-1])
                self.changed.notify_all()

    def enter(self, name: str) -> threading.Event:
        with self.changed:
            self.inside.add(name)
            self.entered.append(name)
            if len(self.inside) > self.limit:
                self.too_many = True
                for gate in self.gates.values():  # let everyone finish: the test fails below
                    gate.set()
            self.changed.notify_all()
            return self.gates.setdefault(name, threading.Event())

    def leave(self, name: str) -> None:
        with self.changed:
            self.inside.discard(name)

    def wait_for(self, ready: Any) -> None:
        with self.changed:
            self.changed.wait_for(lambda: self.too_many or ready())
        assert not self.too_many, f"more than {self.limit} ran at once: {self.entered}"

    def release(self, name: str) -> None:
        with self.changed:
            self.gates[name].set()


def _hold_tool(holders: _Holders) -> StructuredTool:
    def hold(name: str) -> str:
        """Holds the sub-agent until the test releases it."""
        holders.enter(name).wait()
        holders.leave(name)
        return "held"

    async def ahold(name: str) -> str:
        gate = holders.enter(name)
        await asyncio.to_thread(gate.wait)
        holders.leave(name)
        return "held"

    return StructuredTool.from_function(func=hold, coroutine=ahold, name="hold")


@pytest.mark.parametrize("run_async", [False, True], ids=["threads", "event loop"])
def test_at_most_max_parallel_sub_agents_run_at_once_and_the_rest_wait_their_turn(
    run_async: bool,
) -> None:
    limit, names = 2, [f"t{n}" for n in range(5)]
    holders = _Holders(limit)
    agents = SubAgents(
        Workspace(f"memory://sub-fanout-{run_async}"),
        model=ScriptedChatModel(responses=[_hold, "done"]),
        policy=POLICY,
        tools=[_hold_tool(holders)],
        max_parallel=limit,
        on_event=holders.on_event,
    )
    assert agents.max_parallel == limit
    results: dict[str, str] = {}

    def run_all() -> None:
        if run_async:

            async def gather() -> None:
                done = await asyncio.gather(
                    *(
                        agents.arun("general-purpose", n, parent_thread_id="p", tool_call_id=n)
                        for n in names
                    )
                )
                results.update((r.tool_call_id, r.status) for r in done)

            asyncio.run(gather())
        else:
            threads = [
                threading.Thread(
                    target=lambda n=n: results.__setitem__(
                        n,
                        agents.run(
                            "general-purpose", n, parent_thread_id="p", tool_call_id=n
                        ).status,
                    )
                )
                for n in names
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

    runner = threading.Thread(target=run_all)
    runner.start()
    # Two inside, three waiting for a place: nothing else can move until one is released.
    holders.wait_for(lambda: len(holders.inside) == limit and len(holders.waiting) == 3)
    first = list(holders.entered)
    for n, name in enumerate(first + holders.waiting[:], start=1):
        holders.release(name)
        holders.wait_for(lambda n=n: len(holders.entered) == min(len(names), limit + n))
    runner.join()
    assert not holders.too_many
    assert results == dict.fromkeys(names, "completed")
    assert holders.entered == first + holders.waiting  # first come, first served
    assert sorted(holders.entered) == names


def test_a_nested_sub_agent_gets_a_place_of_its_own_level() -> None:
    """With one place per level, a sub-agent waiting for its own sub-agent cannot block it."""
    writer = SubAgent(
        name="writer",
        description="Writes.",
        model=ScriptedChatModel(
            script_id="w",
            responses=[tool_call("write_file", {"file_path": "/a.md", "content": "a\n"}), "Ok."],
        ),
    )
    lead = SubAgent(
        name="lead",
        description="Delegates.",
        subagents=True,
        model=ScriptedChatModel(
            script_id="l",
            responses=[
                tool_call("task", {"description": "Write a.", "subagent_type": "writer"}),
                "Delegated.",
            ],
        ),
    )
    agents = SubAgents(
        Workspace("memory://sub-fanout-nested"),
        model=ScriptedChatModel(responses=["x"]),
        policy=POLICY,
        subagents=[lead, writer],
        max_depth=2,
        max_parallel=1,
    )
    result = agents.run("lead", "Go.", parent_thread_id="p", tool_call_id="c")
    assert result.status == "completed" and result.artifacts == ("/a.md",)


def _tool_call(call_id: str) -> dict[str, Any]:
    return {
        "name": "task",
        "args": {"description": f"Task {call_id}.", "subagent_type": "general-purpose"},
        "id": call_id,
        "type": "tool_call",
    }


@pytest.mark.parametrize("run_async", [False, True], ids=["invoke", "ainvoke"])
def test_past_max_tasks_the_task_tool_answers_an_error_and_nothing_runs(run_async: bool) -> None:
    workspace = Workspace(f"memory://sub-fanout-cap-{run_async}")
    model = ScriptedChatModel(responses=[lambda messages: f"did {messages[1].content}"])
    agents = SubAgents(workspace, model=model, policy=POLICY, max_tasks=2)
    tool = agents.task_tool(parent_thread_id="main")

    def call(call_id: str) -> Any:
        request = _tool_call(call_id)
        return asyncio.run(tool.ainvoke(request)) if run_async else tool.invoke(request)

    assert [call(c).status for c in ("c1", "c2")] == ["success", "success"]
    calls = len(model.requests)
    refused = call("c3")
    assert isinstance(refused, ToolMessage) and refused.status == "error"
    assert refused.content == (
        "Error: sub-agent 'general-purpose' could not start: thread 'main' has started 2 "
        "sub-task(s), the most this registry allows (max_tasks=2). No more sub-agents for this "
        "thread: do the rest yourself, with the reports and files you have."
    )
    assert len(model.requests) == calls  # the model was not called
    assert sorted(r.thread_id for r in task_records(workspace)) == ["main/task-c1", "main/task-c2"]
    # A task that already ran is not refused (its recorded result comes back), nor is another
    # thread's task; plain Python raises.
    assert call("c1").status == "success" and len(model.requests) == calls
    other = agents.task_tool(parent_thread_id="other")
    assert other.invoke(_tool_call("c3")).status == "success"
    with pytest.raises(TaskLimitError, match="max_tasks=2") as caught:
        agents.run("general-purpose", "More.", parent_thread_id="main", tool_call_id="c4")
    assert caught.value.parent_thread_id == "main" and caught.value.max_tasks == 2


def test_a_task_that_could_not_start_does_not_count() -> None:
    agents = SubAgents(
        Workspace("memory://sub-fanout-start"),
        model=ScriptedChatModel(responses=["ok"]),
        policy=ContextPolicy(),  # no window: no task can start
        max_tasks=1,
    )
    for call_id in ("c1", "c2"):
        with pytest.raises(ValueError, match="window"):
            agents.run("general-purpose", "Go.", parent_thread_id="p", tool_call_id=call_id)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("max_parallel", 0),
        ("max_parallel", -1),
        ("max_parallel", True),
        ("max_parallel", 2.5),
        ("max_tasks", 0),
        ("max_tasks", "10"),
        ("max_depth", 0),
    ],
)
def test_bad_limits_are_refused_with_what_to_write(setting: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"{setting} must be at least 1 .*write a whole number"):
        SubAgents(
            Workspace("memory://sub-fanout-bad"),
            model=ScriptedChatModel(responses=[]),
            policy=POLICY,
            **{setting: value},  # type: ignore[arg-type]
        )


def test_an_offloaded_answer_still_shows_its_transcript_and_files_in_the_preview() -> None:
    workspace = Workspace("memory://sub-fanout-preview")
    long_answer = "\n".join(f"finding {n}: order {1000 + n} settled" for n in range(400))
    agents = SubAgents(
        workspace,
        model=ScriptedChatModel(
            responses=[
                tool_call("write_file", {"file_path": "/notes/found.md", "content": "x\n"}),
                long_answer,
            ]
        ),
        policy=POLICY,
    )
    answer = agents.task_tool(parent_thread_id="main").invoke(_tool_call("c1"))
    message = answer.update["messages"][0]
    result = agents.run("general-purpose", "Task c1.", parent_thread_id="main", tool_call_id="c1")
    parent = ContextEngine(workspace, POLICY)  # the parent's engine offloads the long answer
    kept = parent.offload_tool_result(message, thread_id="main")
    preview = str(kept.content)
    assert preview != message.content and "Lines 1-" in preview
    assert f"transcript: {result.transcript}" in preview
    assert "files written: /notes/found.md" in preview
    assert "finding 0: order 1000 settled" in preview  # the answer starts right after
