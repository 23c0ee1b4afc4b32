"""One sub-agent's loop, written once as a generator of effects, with a sync and an async driver.

The steps (:func:`steps`) decide: compact the history, check the limits, ask the model, run
the tools it asked for, stop. What they need done is yielded as an effect (:class:`Compact`,
:class:`Ask`, :class:`RunTools`); :func:`drive` does it with blocking calls, :func:`adrive`
awaits it (the engine's work in worker threads, the model and the tools awaited, the tools of
one answer concurrently).
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolCall, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.types import Command

from ctxfs._errors import WorkspaceError
from ctxfs._events import CompactionResult
from ctxfs._messages import target_path_of
from ctxfs._sections import one_line
from ctxfs._workspace._workspace import Workspace
from ctxfs.integrations._hooks import ContextHooks, RequestShape
from ctxfs.subagents._result import TaskProgress, TaskStatus

__all__ = ["Ask", "Compact", "Run", "RunTools", "adrive", "drive", "steps"]

# Tools whose successful calls make their file_path an artifact (the workspace tools').
_WRITE_TOOLS = frozenset({"write_file", "edit_file"})


@dataclass(frozen=True, slots=True)
class Compact:
    """Effect: compact ``messages`` for the next model call (answer: a CompactionResult)."""

    messages: tuple[BaseMessage, ...]


@dataclass(frozen=True, slots=True)
class Ask:
    """Effect: send the system message and ``messages`` to the model (answer: an AIMessage)."""

    messages: tuple[BaseMessage, ...]


@dataclass(frozen=True, slots=True)
class RunTools:
    """Effect: run these tool calls (answer: their ToolMessages, in order, offloaded)."""

    calls: tuple[ToolCall, ...]


Effect = Compact | Ask | RunTools


@dataclass(slots=True, kw_only=True)
class Run:
    """One running sub-task: what it is given, and where it has got to (the steps update it).

    Attributes:
        subagent: Its name.
        thread_id: Its thread.
        parent_thread_id: The thread that handed it the task.
        tool_call_id: The parent's call.
        prompt: The task it was handed.
        hooks: Its own engine (policy, workspace, counter), with the event callback.
        model: Its chat model, bound to ``tools``.
        chat_model: The same model unbound (its profile may give the window).
        system: Its system message.
        tools: Its tools, by name.
        max_turns: Most model calls.
        max_tokens: Most tokens over all model calls, or ``None``.
        messages: Its history (starting with the task); the steps extend and compact it.
    """

    subagent: str
    thread_id: str
    parent_thread_id: str
    tool_call_id: str
    prompt: str
    hooks: ContextHooks
    model: Runnable[LanguageModelInput, BaseMessage]
    system: SystemMessage
    tools: Mapping[str, BaseTool]
    max_turns: int
    max_tokens: int | None
    messages: list[BaseMessage]
    turns: int = 0
    tokens: int = 0
    artifacts: dict[str, None] = field(default_factory=dict)
    refused_artifacts: dict[str, str] = field(default_factory=dict)
    task_tool: BaseTool | None = None
    chat_model: BaseChatModel | None = None
    status: TaskStatus = "failed"
    reason: str = ""

    @property
    def workspace(self) -> Workspace:
        """The shared workspace."""
        return self.hooks.engine.workspace

    @property
    def shape(self) -> RequestShape:
        """What the model is sent besides the messages."""
        return RequestShape(
            system=self.system, tools=tuple(self.tools.values()), model=self.chat_model
        )

    def answer(self) -> str:
        """The last thing the sub-agent said (its final answer once it completed)."""
        for message in reversed(self.messages):
            if isinstance(message, AIMessage):
                return str(message.text)
        return ""

    def progress(self, kind: Literal["started", "model", "tool", "finished"], **extra: Any) -> None:
        """Reports a step like any context event: log, ``on_event``, the graph's stream."""
        event = TaskProgress(
            subagent=self.subagent,
            thread_id=self.thread_id,
            parent_thread_id=self.parent_thread_id,
            tool_call_id=self.tool_call_id,
            kind=kind,
            turn=self.turns,
            tokens=self.tokens,
            **extra,
        )
        self.hooks.report(event, self.thread_id)

    def stop(self, status: TaskStatus, reason: str = "") -> None:
        """Ends the run with ``status``."""
        self.status, self.reason = status, reason

    def count(self, message: BaseMessage) -> int:
        """Tokens of one message, by the engine's counter."""
        engine = self.hooks.engine
        with engine.lock:
            return engine.token_counter.count_message(message)

    def request_tokens(self, compacted: CompactionResult | None) -> int:
        """Tokens of the next request: as compaction counted it, or counted now."""
        if compacted is not None:
            return compacted.request_tokens
        engine = self.hooks.engine
        fixed = engine.count_request(system=self.system, tools=tuple(self.tools.values()))
        with engine.lock:
            return fixed + engine.token_counter.count_messages(self.messages)

    def took(self, call: ToolCall, result: ToolMessage) -> None:
        """Notes what a finished tool call wrote (its artifacts).

        A write tool's ``file_path`` counts once the tool accepted it; a nested sub-agent's
        artifacts count only from the ``task`` tool ctxfs gave this sub-agent (recognised by
        identity, not by name). Every path is normalised and confined like any path an agent
        gives: one that climbs out, is a URL or is otherwise refused never becomes an
        artifact, and is reported in :attr:`refused_artifacts` with the reason.
        """
        if result.status != "error" and not str(result.text).startswith("Error:"):
            target = target_path_of(call["args"]) if call["name"] in _WRITE_TOOLS else None
            if target is not None:
                self.artifact(target)
        nested = result.artifact
        if (
            self.task_tool is not None
            and self.tools.get(call["name"]) is self.task_tool
            and isinstance(nested, Mapping)
            and isinstance(nested.get("artifacts"), list | tuple)
        ):
            for path in nested["artifacts"]:  # what a sub-agent of this one wrote
                self.artifact(path)

    def artifact(self, path: object) -> None:
        """Adds ``path`` to the artifacts, normalised, or to the refused ones with why."""
        try:
            if not isinstance(path, str):
                raise ValueError(f"not a path but {type(path).__name__}")
            resolved = self.workspace.resolve(path)
        except (ValueError, WorkspaceError) as exc:
            shown = one_line(repr(path) if isinstance(path, str) else type(path).__name__)
            self.refused_artifacts.setdefault(shown[:200], one_line(str(exc))[:300])
            return
        self.artifacts.setdefault(resolved, None)


def steps(run: Run) -> Generator[Effect, Any, None]:
    """The sub-agent's loop; ends with ``run.status`` set (the drivers catch what raises)."""
    run.progress("started")
    while True:
        if run.turns >= run.max_turns:
            run.stop(
                "partial",
                f"it reached its limit of {run.max_turns} model call(s) (max_turns) while it "
                "was still working",
            )
            return
        compacted: CompactionResult | None = yield Compact(tuple(run.messages))
        if compacted is not None:
            run.messages = list(compacted.messages)
            run.hooks.measure(compacted, run.thread_id, run.shape)  # a ContextMeasured event
        request = run.request_tokens(compacted)
        if run.max_tokens is not None and run.tokens + request > run.max_tokens:
            run.stop(
                "partial",
                f"its next model call ({request:,} tokens) would have taken it past its token "
                f"budget of {run.max_tokens:,} (max_tokens; {run.tokens:,} spent)",
            )
            return
        answer: AIMessage = yield Ask(tuple(run.messages))
        run.turns += 1
        run.tokens += request + run.count(answer)
        run.messages.append(answer)
        run.progress("model", tools=tuple(call["name"] for call in answer.tool_calls))
        if not answer.tool_calls:
            run.stop("completed")
            return
        results: list[ToolMessage] = yield RunTools(tuple(answer.tool_calls))
        for call, result in zip(answer.tool_calls, results, strict=True):
            run.messages.append(result)
            run.took(call, result)
            run.progress("tool", detail=call["name"])


# -- doing the effects ----------------------------------------------------------------------


def drive(run: Run) -> None:
    """Runs the steps with blocking calls (tools one after another)."""
    loop = steps(run)
    value: object = None
    while True:
        try:
            effect = loop.send(value)
        except StopIteration:
            return
        if isinstance(effect, Compact):
            value = run.hooks.compact_request(effect.messages, run.thread_id, run.shape)
        elif isinstance(effect, Ask):
            value = _answer(run.model.invoke([run.system, *effect.messages]))
        else:
            value = [
                run.hooks.offload(_call_tool(run, call), run.thread_id, tools=run.tools)
                for call in effect.calls
            ]


async def adrive(run: Run) -> None:
    """Runs the steps asynchronously (the tools of one answer concurrently)."""
    loop = steps(run)
    value: object = None
    while True:
        try:
            effect = loop.send(value)
        except StopIteration:
            return
        if isinstance(effect, Compact):
            value = await run.hooks.acompact_request(effect.messages, run.thread_id, run.shape)
        elif isinstance(effect, Ask):
            value = _answer(await run.model.ainvoke([run.system, *effect.messages]))
        else:
            done = await asyncio.gather(*(_acall_tool(run, call) for call in effect.calls))
            value = [
                await run.hooks.aoffload(message, run.thread_id, tools=run.tools)
                for message in done
            ]


def _answer(reply: BaseMessage) -> AIMessage:
    if not isinstance(reply, AIMessage):
        raise TypeError(f"the model answered with a {type(reply).__name__}, not an AIMessage")
    return reply


def _call_tool(run: Run, call: ToolCall) -> ToolMessage:
    tool = run.tools.get(call["name"])
    if tool is None:
        return _unknown_tool(run, call)
    try:
        output = tool.invoke({**call, "type": "tool_call"})
    except Exception as exc:
        return _tool_error(call, exc)
    return _as_message(output, call)


async def _acall_tool(run: Run, call: ToolCall) -> ToolMessage:
    tool = run.tools.get(call["name"])
    if tool is None:
        return _unknown_tool(run, call)
    try:
        output = await tool.ainvoke({**call, "type": "tool_call"})
    except Exception as exc:
        return _tool_error(call, exc)
    return _as_message(output, call)


def _message_id(call: ToolCall) -> str:
    return f"tool-{call['id']}"


def _error(call: ToolCall, text: str) -> ToolMessage:
    return ToolMessage(
        content=f"Error: {text}",
        tool_call_id=str(call["id"]),
        name=call["name"],
        status="error",
        id=_message_id(call),
    )


def _unknown_tool(run: Run, call: ToolCall) -> ToolMessage:
    names = ", ".join(sorted(run.tools)) or "none"
    return _error(call, f"there is no tool named {call['name']!r}; your tools: {names}")


def _tool_error(call: ToolCall, exc: Exception) -> ToolMessage:
    return _error(call, f"{call['name']} raised {type(exc).__name__}: {exc}")


def _as_message(output: object, call: ToolCall) -> ToolMessage:
    """The tool's output as its ToolMessage (a Command's own message, if it carries one)."""
    if isinstance(output, Command) and isinstance(output.update, Mapping):
        messages: Sequence[object] = output.update.get("messages") or ()
        output = next((m for m in messages if isinstance(m, ToolMessage)), str(output.update))
    if isinstance(output, ToolMessage):
        return output if output.id else output.model_copy(update={"id": _message_id(call)})
    return ToolMessage(
        content=str(output), tool_call_id=str(call["id"]), name=call["name"], id=_message_id(call)
    )
