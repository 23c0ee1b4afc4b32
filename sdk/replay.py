"""Replay a recorded agent run through the context engine, as the agent would have lived it.

A *trace* is a JSONL file, one message per line, in conversation order::

    {"role": "system" | "user" | "assistant" | "tool", "content": "...",
     "tool_calls": [{"id": "...", "name": "...", "args": {...}}],   # assistant only
     "tool_call_id": "...", "name": "..."}                          # tool only

:func:`read_trace` turns one into langchain messages, checking every line (a malformed line
raises :class:`~ctxfs.errors.TraceError` naming it). :func:`replay` then feeds the messages
to a :class:`~ctxfs.engine.ContextEngine` the way an agent loop would: each tool result goes
through result offload when it arrives, and the history is compacted before each assistant
turn, which is where a model call happens. It records the context at every model call,
with ctxfs and without it, how long compaction took, and what the engine moved where.
:func:`check_recovery` then verifies the promise: everything that left the context reads back
byte-exact from the workspace (:func:`restore_messages` gives what it reads back).

The engine is whatever you built: its policy (clearing on, a summary model...) and token
counter are the ones replayed, so benchmarks and ``ctxfs replay`` run the same loop.

Example:
    >>> from ctxfs import ContextEngine, ContextPolicy, Workspace
    >>> from ctxfs.replay import parse_trace, replay
    >>> history = parse_trace([
    ...     '{"role": "user", "content": "list the files"}',
    ...     '{"role": "assistant", "content": "", "tool_calls": '
    ...     '[{"id": "c1", "name": "ls", "args": {}}]}',
    ...     '{"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "a.txt"}',
    ...     '{"role": "assistant", "content": "One file: a.txt."}',
    ... ])
    >>> engine = ContextEngine(Workspace("memory://doc"), ContextPolicy(max_input_tokens=8_000))
    >>> [call.tokens for call in replay(history, engine, thread_id="doc").calls]
    [7, 19]
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxfs.archive import TranscriptArchive
from ctxfs.engine import ContextEngine
from ctxfs.errors import TraceError
from ctxfs.events import ContextEvent
from ctxfs.offload import pointer_path
from ctxfs.summary import is_summary
from ctxfs.workspace import Workspace

__all__ = [
    "ROLES",
    "ModelCall",
    "Recovery",
    "ReplayResult",
    "TraceError",
    "check_recovery",
    "parse_trace",
    "read_trace",
    "replay",
    "restore_messages",
]

ROLES = ("system", "user", "assistant", "tool")
"""The roles a trace line may have."""


# -- reading a trace ------------------------------------------------------------------------


def read_trace(path: str | os.PathLike[str]) -> list[BaseMessage]:
    """Reads a trace file into langchain messages (see :func:`parse_trace`).

    Raises:
        TraceError: The file cannot be read, is not UTF-8, or a line is malformed; the
            message names the file and the line.
    """
    source = os.fspath(path)
    try:
        data = Path(source).read_bytes()
    except FileNotFoundError:
        raise TraceError("no such file", source=source) from None
    except IsADirectoryError:
        raise TraceError("is a folder, not a trace file", source=source) from None
    except OSError as exc:
        raise TraceError(f"cannot read it ({exc.strerror or exc})", source=source) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceError(
            f"not valid UTF-8 (byte {exc.start}); traces are UTF-8 JSON lines",
            source=source,
            line=line,
        ) from None
    # Lines end at "\n" only: a JSON string may hold other line separators (U+2028...).
    return parse_trace(text.split("\n"), source=source)


def parse_trace(lines: Iterable[str], *, source: str = "<trace>") -> list[BaseMessage]:
    """Turns trace lines into langchain messages, checking each one.

    Blank lines are skipped. Message ids are ``m<n>``, ``n`` the 0-based line index, so a
    replay names the same files every time. Checked: each line is a JSON object with a known
    role and string content; tool calls have an id, a name and an object of arguments; ids
    are unique; every tool result answers an earlier tool call, once. A trace may end with
    calls that have no result (a final ``submit``, or a run cut off).

    Args:
        lines: The lines, without or with their ``\\n``.
        source: The name used in error messages (the file path).

    Raises:
        TraceError: A line is malformed, or there are no messages; names the line.
    """
    parser = _TraceParser(source)
    for index, line in enumerate(lines):
        if line.strip():
            parser.add(index, line)
    if not parser.messages:
        raise TraceError("the trace holds no messages (one JSON object per line)", source=source)
    return parser.messages


class _TraceParser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.messages: list[BaseMessage] = []
        self.calls: dict[str, int] = {}  # tool call id -> line of its assistant message
        self.answered: dict[str, int] = {}  # tool call id -> line of its result

    def fail(self, line: int, message: str) -> TraceError:
        return TraceError(message, source=self.source, line=line)

    def add(self, index: int, raw: str) -> None:
        line = index + 1
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise self.fail(line, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(record, dict):
            raise self.fail(
                line, f"expected a JSON object (one message per line), got {_kind(record)}"
            )
        role = record.get("role")
        if role not in ROLES:
            raise self.fail(line, f"unknown role {role!r}; expected one of: {', '.join(ROLES)}")
        content = record.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise self.fail(line, f"content must be a string, got {_kind(content)}")
        if role != "assistant" and record.get("tool_calls"):
            raise self.fail(line, f"only assistant messages have tool_calls, not {role}")
        mid = f"m{index}"
        if role == "system":
            self.messages.append(SystemMessage(content, id=mid))
        elif role == "user":
            self.messages.append(HumanMessage(content, id=mid))
        elif role == "assistant":
            calls = self._tool_calls(line, record.get("tool_calls"))
            self.messages.append(AIMessage(content, tool_calls=calls, id=mid))
        else:
            self.messages.append(self._tool_result(line, record, content, mid))

    def _tool_calls(self, line: int, raw: object) -> list[dict[str, Any]]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise self.fail(line, f"tool_calls must be a list, got {_kind(raw)}")
        calls = []
        for n, call in enumerate(raw):
            where = f"tool_calls[{n}]"
            if not isinstance(call, dict):
                raise self.fail(line, f"{where} must be an object, got {_kind(call)}")
            call_id, name, args = call.get("id"), call.get("name"), call.get("args")
            if not isinstance(call_id, str) or not call_id:
                raise self.fail(line, f"{where} needs an id (a non-empty string)")
            if not isinstance(name, str) or not name:
                raise self.fail(line, f"{where} needs a name (a non-empty string)")
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise self.fail(line, f"{where}.args must be a JSON object, got {_kind(args)}")
            if call_id in self.calls:
                raise self.fail(
                    line, f"tool call id {call_id!r} was already used on line {self.calls[call_id]}"
                )
            self.calls[call_id] = line
            calls.append({"name": name, "args": args, "id": call_id})
        return calls

    def _tool_result(
        self, line: int, record: Mapping[str, Any], content: str, mid: str
    ) -> ToolMessage:
        call_id, name = record.get("tool_call_id"), record.get("name")
        if not isinstance(call_id, str) or not call_id:
            raise self.fail(line, "a tool result needs tool_call_id (the id of its tool call)")
        if call_id not in self.calls:
            raise self.fail(
                line,
                f"tool result for call {call_id!r} has no earlier assistant tool call with that id",
            )
        if call_id in self.answered:
            raise self.fail(
                line, f"call {call_id!r} was already answered on line {self.answered[call_id]}"
            )
        if name is not None and not isinstance(name, str):
            raise self.fail(line, f"name must be a string, got {_kind(name)}")
        self.answered[call_id] = line
        return ToolMessage(content, tool_call_id=call_id, name=name, id=mid)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")


# -- replaying ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """The context at one model call of a replay.

    Attributes:
        index: 1, 2, ... in the run.
        message_index: Position of the assistant message this call produced, in the trace's
            messages (0-based; its id is ``m<line - 1>``).
        tokens: Tokens sent with ctxfs: the history after compaction.
        baseline_tokens: Tokens the same call would have sent without any context management.
        events: What the engine did since the previous call: offloads of the tool results
            that arrived, then whatever compaction did before this call.
        reason: Why compaction could not reach its target, or ``None``.
        seconds: Wall time of the compaction before this call (the before-model hook an
            agent would wait for). Not compared: two replays of one trace are equal.
    """

    index: int
    message_index: int
    tokens: int
    baseline_tokens: int
    events: tuple[ContextEvent, ...] = ()
    reason: str | None = None
    seconds: float = field(default=0.0, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayResult:
    """What :func:`replay` returns.

    Attributes:
        thread_id: The conversation id the workspace files are filed under.
        max_input_tokens: The window of the policy replayed.
        history: The trace's messages, as given.
        context: The history as ctxfs holds it at the end of the run.
        calls: One record per model call, in order.
        trailing_events: Offloads of tool results that arrived after the last model call.
    """

    thread_id: str
    max_input_tokens: int
    history: tuple[BaseMessage, ...]
    context: tuple[BaseMessage, ...]
    calls: tuple[ModelCall, ...]
    trailing_events: tuple[ContextEvent, ...] = ()

    @property
    def events(self) -> tuple[ContextEvent, ...]:
        """Every event of the run, in order."""
        return (*(e for call in self.calls for e in call.events), *self.trailing_events)

    @property
    def peak_tokens(self) -> int:
        """The largest context sent at any model call, with ctxfs."""
        return max((c.tokens for c in self.calls), default=0)

    @property
    def baseline_peak_tokens(self) -> int:
        """The largest context any model call would have sent without ctxfs."""
        return max((c.baseline_tokens for c in self.calls), default=0)

    @property
    def total_input_tokens(self) -> int:
        """Input tokens over the whole run, with ctxfs (what a provider would bill)."""
        return sum(c.tokens for c in self.calls)

    @property
    def baseline_total_input_tokens(self) -> int:
        """Input tokens over the whole run without any context management."""
        return sum(c.baseline_tokens for c in self.calls)

    @property
    def calls_over_budget(self) -> int:
        """Model calls whose context, with ctxfs, was larger than the window."""
        return sum(c.tokens > self.max_input_tokens for c in self.calls)


def replay(
    history: Sequence[BaseMessage],
    engine: ContextEngine,
    *,
    thread_id: str,
    on_message: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Replays a recorded history through ``engine``, as the agent would have lived it.

    Every assistant message is a model call: the history so far is compacted first (timed),
    and the context sent is measured with the engine's token counter, together with what the
    unmanaged history would have cost. Every tool result goes through result offload as it
    arrives. Other messages are appended as they are.

    Args:
        history: The run, e.g. from :func:`read_trace`.
        engine: The engine to replay through: its workspace, its policy (clearing, a summary
            model, ...) and its token counter are the ones measured.
        thread_id: The conversation id; names the workspace folders written.
        on_message: Called with (messages done, total) after each message, for a progress
            display.
    """
    counter = engine.token_counter
    context: list[BaseMessage] = []
    # The unmanaged history only grows at the end: its total is kept as a running sum, so
    # the counter's memory of the last history counted stays the engine's.
    baseline = 0
    calls: list[ModelCall] = []
    pending: list[ContextEvent] = []
    for position, message in enumerate(history):
        if isinstance(message, AIMessage):  # a model call is about to happen
            started = time.perf_counter()
            result = engine.compact(context, thread_id=thread_id)
            seconds = time.perf_counter() - started
            context = result.messages
            calls.append(
                ModelCall(
                    index=len(calls) + 1,
                    message_index=position,
                    tokens=result.tokens_after,
                    baseline_tokens=baseline,
                    events=(*pending, *result.events),
                    reason=result.reason,
                    seconds=seconds,
                )
            )
            pending = []
        if isinstance(message, ToolMessage):
            outcome = engine.offload_tool_result_detailed(message, thread_id=thread_id)
            context = [*context, outcome.message]
            if outcome.event is not None:
                pending.append(outcome.event)
        else:
            context = [*context, message]
        baseline += counter.count_message(message)
        if on_message is not None:
            on_message(position + 1, len(history))
    return ReplayResult(
        thread_id=thread_id,
        max_input_tokens=engine.policy.max_input_tokens,
        history=tuple(history),
        context=tuple(context),
        calls=tuple(calls),
        trailing_events=tuple(pending),
    )


# -- checking that nothing was lost ---------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovery:
    """How much of what left the context reads back byte-exact from the workspace.

    Attributes:
        removed_messages: Messages no longer in the context as they were (archived, or with a
            result or argument replaced by a pointer).
        removed_bytes: UTF-8 bytes of their text and tool-call arguments.
        recovered_bytes: How many of those bytes read back byte-exact.
        lost: Ids of the messages that did not come back exactly.
    """

    removed_messages: int
    removed_bytes: int
    recovered_bytes: int
    lost: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether everything removed came back byte-exact."""
        return not self.lost and self.recovered_bytes == self.removed_bytes


def check_recovery(result: ReplayResult, workspace: Workspace) -> Recovery:
    """Rebuilds the original run from the workspace and compares it with the trace.

    The rebuilt run is the archived transcript segments followed by the messages still in
    the context (summaries left out), with every pointer resolved by reading the file it
    names. A message counts as removed when the context no longer holds it as it was.

    Args:
        result: A replay.
        workspace: The workspace the replay wrote to.

    Raises:
        WorkspaceError: The archive or an offloaded file could not be read.
    """
    rebuilt = restore_messages(result.context, workspace, thread_id=result.thread_id)
    in_context = {m.id: _text(m) for m in result.context}
    removed = removed_bytes = recovered = 0
    lost: list[str] = []
    for original in result.history:
        text = _text(original)
        if in_context.get(original.id) == text:
            continue  # still in the context as it was: nothing removed
        size = len(text.encode("utf-8", "surrogatepass"))
        removed += 1
        removed_bytes += size
        back = rebuilt.get(original.id)
        if back is not None and _text(back) == text:
            recovered += size
        else:
            lost.append(str(original.id))
    return Recovery(
        removed_messages=removed,
        removed_bytes=removed_bytes,
        recovered_bytes=recovered,
        lost=tuple(lost),
    )


def restore_messages(
    context: Sequence[BaseMessage], workspace: Workspace, *, thread_id: str
) -> dict[str | None, BaseMessage]:
    """Reads a conversation back from the workspace, as it was before ctxfs touched it.

    The messages are the archived transcript segments of ``thread_id`` followed by the
    messages of ``context`` (summaries left out), each with every ctxfs pointer in its result
    or tool-call arguments replaced by the text of the file it names.

    Args:
        context: The history as ctxfs holds it now.
        workspace: Where the engine wrote.
        thread_id: The conversation the transcripts are filed under.

    Returns:
        The restored messages by id (a later message with the same id wins).

    Raises:
        WorkspaceError: The archive or an offloaded file could not be read.
    """
    archived = TranscriptArchive(workspace, thread_id).read_all()
    kept = [m for m in context if not is_summary(m)]
    return {m.id: _resolve(m, workspace) for m in [*archived, *kept]}


def _text(message: BaseMessage) -> str:
    """What must come back byte-exact: the content and the tool-call arguments."""
    content = message.content
    parts = [content if isinstance(content, str) else json.dumps(content, sort_keys=True)]
    if isinstance(message, AIMessage):
        parts += [
            json.dumps(c["args"], ensure_ascii=False, sort_keys=True) for c in message.tool_calls
        ]
    return "\x00".join(parts)


def _resolve(message: BaseMessage, workspace: Workspace) -> BaseMessage:
    """The message with every ctxfs pointer in it replaced by the text it points to."""
    if isinstance(message, ToolMessage) and isinstance(message.content, str):
        path = pointer_path(message.content)
        if path:
            return message.model_copy(update={"content": workspace.read_text(path)})
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = []
        for call in message.tool_calls:
            args = {}
            for key, value in call["args"].items():
                path = pointer_path(value) if isinstance(value, str) else None
                args[key] = workspace.read_text(path) if path else value
            calls.append({**call, "args": args})
        return message.model_copy(update={"tool_calls": calls})
    return message
