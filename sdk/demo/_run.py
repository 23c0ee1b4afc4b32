"""Runs the demo: a ``create_agent`` agent with :class:`ContextMiddleware` on a small budget."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool

from ctxfs._events import ContextEvent, ContextMeasured, OffloadFailed, ToolResultOffloaded
from ctxfs._policy._settings import (
    ContextPolicy,
    KeepRecent,
    KeepToolResults,
    Summarization,
    Threshold,
    ToolInputOffload,
    ToolResultClearing,
    ToolResultOffload,
)
from ctxfs._summary._message import is_summary
from ctxfs._workspace._workspace import Workspace
from ctxfs.backends import protocol_of
from ctxfs.demo._data import populate, suite_output
from ctxfs.demo._script import FOLLOW_UP, TASK, script
from ctxfs.demo._view import LiveView, PlainView, Turn, View, describe_event

__all__ = ["DemoOptions", "DemoReport", "demo_policy", "run_demo"]

SYSTEM_PROMPT = (
    "You are a careful software engineer working in a workspace of files. Use the tools to "
    "look, search and edit; keep notes in /notes. Long tool outputs are saved under "
    "/tool_results and earlier parts of the conversation under /transcripts: search them with "
    "grep and read them with read_file when you need a detail you no longer have."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoOptions:
    """How to run the demo.

    Attributes:
        workspace: Workspace URL or folder; a fresh temporary folder when ``None``.
        storage_options: Options of the fsspec filesystem of a workspace URL (for
            ``s3://``: ``endpoint_url``, ``profile``, ``client_kwargs``...).
        model: ``provider:name`` for ``init_chat_model``; the offline script when ``None``.
        live: Draw a live rich table (otherwise plain lines).
        thread_id: The conversation id (names the folders ctxfs writes).
        max_input_tokens: The context budget; small, so every step shows.
        pace: Seconds to pause after each model call, so a person can follow.
    """

    workspace: str | None = None
    storage_options: Mapping[str, Any] | None = None
    model: str | None = None
    live: bool = True
    thread_id: str = "demo"
    max_input_tokens: int = 12_000
    pace: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoReport:
    """What a demo run did.

    Attributes:
        workspace: The workspace the agent worked in.
        thread_id: The conversation id.
        answer: The agent's last answer.
        turns: Every model call with its context size and what ctxfs did.
        events: Every engine event, in order.
        seconds: Wall time of the run.
    """

    workspace: Workspace
    thread_id: str
    answer: str
    turns: tuple[Turn, ...]
    events: tuple[ContextEvent, ...] = field(default=())
    seconds: float = 0.0


def demo_policy(max_input_tokens: int) -> ContextPolicy:
    """The demo's policy: a small window, so every step happens within a few turns."""
    return ContextPolicy(
        max_input_tokens=max_input_tokens,
        tool_results=ToolResultOffload(threshold=Threshold(tokens=1_500)),
        tool_inputs=ToolInputOffload(
            trigger=Threshold(fraction=0.6), keep_messages=6, min_chars=800
        ),
        # the last 4 results whatever their size: older ones are cleared in a compaction,
        # and clearing alone cannot keep this small window, so the summary step shows too;
        # a summary keeps 30 % of the window, so the early grep result is cleared (and read
        # back from /tool_results) before a summary archives it
        clearing=ToolResultClearing(keep=KeepToolResults(results=4)),
        summarization=Summarization(keep=KeepRecent(fraction=0.3)),
    )


def run_demo(options: DemoOptions, *, stream: IO[str] | None = None) -> DemoReport:
    """Runs the demo and prints its progress.

    Args:
        options: Where and with which model.
        stream: Where to print (default ``sys.stdout``).

    Returns:
        What happened, for a caller that wants to check it.
    """
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from ctxfs.integrations.langchain import ContextMiddleware

    out = stream or sys.stdout
    started = time.perf_counter()
    policy = demo_policy(options.max_input_tokens)  # refused before the workspace is filled
    workspace = _open_workspace(options)
    populate(workspace)
    tracker = _Tracker(_make_view(options.live, out), pace=options.pace)
    middleware = ContextMiddleware(workspace, policy, on_event=tracker.on_event)
    agent = create_agent(
        _make_model(options.model),
        [_run_tests_tool(workspace)],
        system_prompt=SYSTEM_PROMPT,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": options.thread_id}, "recursion_limit": 200}
    answer = ""
    try:
        for request in (TASK, FOLLOW_UP):
            tracker.view.message(request, title="user")
            inputs: Any = {"messages": [("user", request)]}
            for chunk in agent.stream(inputs, config):
                answer = tracker.on_update(chunk) or answer
            tracker.view.message(answer, title="agent")
    finally:
        tracker.view.close()
    _print_where(workspace, options.thread_id, out)
    return DemoReport(
        workspace=workspace,
        thread_id=options.thread_id,
        answer=answer,
        turns=tuple(tracker.turns),
        events=tuple(tracker.events),
        seconds=time.perf_counter() - started,
    )


def _open_workspace(options: DemoOptions) -> Workspace:
    if options.workspace is None:
        return Workspace(tempfile.mkdtemp(prefix="ctxfs-demo-"))
    return Workspace(options.workspace, storage_options=options.storage_options)


def _make_model(spec: str | None) -> BaseChatModel:
    if spec is None:
        from ctxfs.testing import ScriptedChatModel

        return ScriptedChatModel(responses=script())
    from langchain.chat_models import init_chat_model

    return init_chat_model(spec)


def _make_view(live: bool, out: IO[str]) -> View:
    if not live:
        return PlainView(out)
    try:
        from rich.console import Console
    except ImportError as exc:
        raise ImportError(
            "the live demo view needs rich: pip install 'ctxfs[demo]' (or pass --no-live)"
        ) from exc
    return LiveView(Console(file=out))


def _run_tests_tool(workspace: Workspace) -> BaseTool:
    def run_tests() -> str:
        return suite_output(workspace)

    return StructuredTool.from_function(
        run_tests,
        name="run_tests",
        description="Runs the project's test suite and returns pytest's full output (long).",
    )


class _Tracker:
    """Turns engine events and graph updates into :class:`Turn` rows for the view."""

    def __init__(self, view: View, *, pace: float = 0.0) -> None:
        self.view = view
        self._pace = pace
        self.turns: list[Turn] = []
        self.events: list[ContextEvent] = []
        self._early: list[str] = []
        self._removed = 0  # tokens ctxfs took out of the context so far

    def on_event(self, event: ContextEvent, thread_id: str) -> None:
        self.events.append(event)
        if isinstance(event, ContextMeasured):
            turn = Turn(
                number=len(self.turns) + 1,
                tokens_before=event.tokens_before,
                tokens=event.tokens_after,
                budget=event.max_input_tokens,
                without=event.tokens_before + self._removed,
            )
            self._removed += event.tokens_before - event.tokens_after
            turn.notes.extend(self._early)
            self._early.clear()
            self.turns.append(turn)
        else:
            if isinstance(event, ToolResultOffloaded):
                self._removed += event.tokens - event.tokens_after
            if (line := describe_event(event)) is not None:
                # Compaction events come before their turn's measurement; offloads after.
                target = self._early if self._compaction_pending(event) else self._current_notes()
                target.append(line)
        self.view.update(self.turns)

    def _compaction_pending(self, event: ContextEvent) -> bool:
        if isinstance(event, OffloadFailed):
            return event.arg is not None  # a tool input: compaction
        return not isinstance(event, ToolResultOffloaded)

    def _current_notes(self) -> list[str]:
        return self.turns[-1].notes if self.turns else self._early

    def on_update(self, chunk: Mapping[str, Any]) -> str | None:
        """Records a graph step; returns the model's answer when it gave one."""
        answer = None
        for node, update in chunk.items():
            if not isinstance(update, Mapping):
                continue
            for message in update.get("messages", []):
                if is_summary(message):
                    self.view.message(message.text, title="summary (replaces archived messages)")
                if node == "model" and isinstance(message, AIMessage) and self.turns:
                    self.turns[-1].action = _action(message)
                    time.sleep(self._pace)
                    if not message.tool_calls:
                        answer = message.text
        self.view.update(self.turns)
        return answer


def _action(message: AIMessage) -> str:
    if not message.tool_calls:
        return f"answers: {_clip(message.text, 90)}"
    calls = []
    for call in message.tool_calls:
        args = ", ".join(f"{k}={_clip(repr(v), 40)}" for k, v in call["args"].items())
        calls.append(f"{call['name']}({args})")
    return "; ".join(calls)


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _print_where(workspace: Workspace, thread_id: str, out: IO[str]) -> None:
    areas = [info.path for info in workspace.ls("/") if info.is_dir]
    lines = [
        "",
        f"The workspace is at {workspace.url}",
        f"Everything ctxfs took out of the context (thread {thread_id!r}) is there:",
        "  /tool_results  full text of long tool results",
        "  /tool_inputs   byte-exact arguments of old write_file/edit_file calls",
        "  /transcripts   archived conversation segments (JSONL + Markdown) and their index",
        f"Folders now: {', '.join(areas)}",
    ]
    folder = workspace.store.local_path("/")
    if folder is not None:
        lines.append(f"Look around:  ls -R {folder}")
    where = workspace.url
    if protocol_of(where) != "memory":  # a memory store lives only in this process
        lines += [
            f"or with the ctxfs CLI:  ctxfs ls {where} /tool_results",
            f"                        ctxfs transcripts {where} --thread {thread_id}",
            f"                        ctxfs grep {where} 'rounding mismatch' /transcripts",
        ]
    print("\n".join(lines), file=out)
