"""Replay a recorded agent run through the context engine, as the agent would have lived it.

:func:`replay` feeds the messages of a trace (:func:`ctxfs.read_trace`) to a
:class:`~ctxfs.ContextEngine` the way an agent loop would: each tool result goes through
result offload when it arrives, and the history is compacted before each assistant turn,
which is where a model call happens. It records the context at every model call, with ctxfs
and without it, how long compaction took, and what the engine moved where.
:func:`ctxfs.check_recovery` then verifies that nothing was lost.

The engine is whatever you built: its policy (clearing on, a summary model...) and token
counter are the ones replayed, so benchmarks and ``ctxfs replay`` run the same loop.

Example:
    >>> from ctxfs import ContextEngine, ContextPolicy, Workspace, parse_trace, replay
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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs._compaction._engine import ContextEngine
from ctxfs._compaction._request import Tool, shared_prefix
from ctxfs._events import ContextEvent
from ctxfs._messages import message_text

__all__ = [
    "IN_VIEW_CHARS",
    "ModelCall",
    "ReplayResult",
    "in_view",
    "plan_in_view",
    "replay",
    "todos_of",
]

IN_VIEW_CHARS = 300
"""A user message is in view when its first this-many characters are in the request as they
were written (stripped of surrounding blank space)."""


def _snippet(message: BaseMessage) -> str:
    return message_text(message).strip()[:IN_VIEW_CHARS]


def in_view(snippets: Sequence[str], context: Sequence[BaseMessage]) -> list[bool]:
    """For each snippet, whether it appears verbatim in the text of ``context``'s messages."""
    text = "\n".join(message_text(m) for m in context)
    return [snippet in text for snippet in snippets]


def todos_of(message: AIMessage) -> list[dict[str, Any]] | None:
    """The todo list an assistant message writes (a ``write_todos``/``TodoWrite`` call's
    ``todos`` argument), or ``None`` when it writes none."""
    found = None
    for call in message.tool_calls:
        todos = call["args"].get("todos") if isinstance(call["args"], dict) else None
        if isinstance(todos, list) and all(isinstance(t, dict) for t in todos):
            found = [dict(t) for t in todos]
    return found


def plan_in_view(todos: Sequence[Mapping[str, Any]], context: Sequence[BaseMessage]) -> bool:
    """Whether every todo's text is in the request: in a message, or in a tool call's
    arguments (the call that wrote the list, while it is still in view)."""
    parts = [message_text(m) for m in context]
    for m in context:
        if isinstance(m, AIMessage):
            parts += [json.dumps(c["args"], ensure_ascii=False) for c in m.tool_calls]
            parts += [
                str(v)
                for c in m.tool_calls
                for t in c["args"].get("todos") or []
                if isinstance(t, dict)
                for v in t.values()
            ]
    text = "\n".join(parts)
    return all(str(t.get("content", t.get("task", "")))[:IN_VIEW_CHARS] in text for t in todos)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """The context at one model call of a replay.

    Attributes:
        index: 1, 2, ... in the run.
        message_index: Position of the assistant message this call produced, in the trace's
            messages (0-based; its id is ``m<line - 1>``).
        tokens: Tokens sent with ctxfs: the request after compaction (the history and the
            tool schemas given to :func:`replay`).
        baseline_tokens: Tokens the same call would have sent without any context management.
        events: What the engine did since the previous call: offloads of the tool results
            that arrived, then whatever compaction did before this call.
        reason: Why compaction could not reach its target, or ``None``.
        cached_tokens: Of ``tokens``, those a provider's prefix cache would reuse from the
            previous call: the tool schemas and the leading messages it sent unchanged
            (see :mod:`ctxfs._compaction._request`).
        prefix_broken: Whether the previous call's messages are no longer a prefix of this
            call's: compaction changed something the cache held.
        task_in_view: Whether the task statement (the run's first user message) is in the
            request verbatim (see :data:`IN_VIEW_CHARS`); ``True`` before there is one.
        user_messages: How many user messages the run had before this call.
        user_messages_in_view: Of those, how many are in the request verbatim.
        plan_in_view: Whether every item of the latest todo list the run wrote is in the
            request; ``None`` before it wrote one.
        seconds: Wall time of the compaction before this call (the before-model hook an
            agent would wait for). Not compared: two replays of one trace are equal.
    """

    index: int
    message_index: int
    tokens: int
    baseline_tokens: int
    events: tuple[ContextEvent, ...] = ()
    reason: str | None = None
    cached_tokens: int = 0
    prefix_broken: bool = False
    task_in_view: bool = True
    user_messages: int = 0
    user_messages_in_view: int = 0
    plan_in_view: bool | None = None
    seconds: float = field(default=0.0, compare=False)

    @property
    def uncached_tokens(self) -> int:
        """Of ``tokens``, those a provider would read anew (and, for some, write to cache)."""
        return self.tokens - self.cached_tokens


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
    def cached_tokens(self) -> int:
        """Input tokens over the run that a prefix cache would reuse."""
        return sum(c.cached_tokens for c in self.calls)

    @property
    def uncached_tokens(self) -> int:
        """Input tokens over the run that a prefix cache would not reuse."""
        return sum(c.uncached_tokens for c in self.calls)

    @property
    def cache_hit_rate(self) -> float:
        """The share of input tokens a prefix cache would reuse (0 with no calls)."""
        total = self.total_input_tokens
        return self.cached_tokens / total if total else 0.0

    @property
    def prefix_breaks(self) -> int:
        """Model calls at which compaction changed what the prefix cache held."""
        return sum(c.prefix_broken for c in self.calls)

    @property
    def task_retention(self) -> float:
        """The share of model calls with the task statement in view (1.0 with no calls)."""
        return sum(c.task_in_view for c in self.calls) / len(self.calls) if self.calls else 1.0

    @property
    def user_retention(self) -> float:
        """The share of (call, earlier user message) pairs with the message in view."""
        pairs = sum(c.user_messages for c in self.calls)
        return sum(c.user_messages_in_view for c in self.calls) / pairs if pairs else 1.0

    @property
    def plan_retention(self) -> float:
        """The share of calls, once the run has a todo list, with all of it in view."""
        known = [c.plan_in_view for c in self.calls if c.plan_in_view is not None]
        return sum(known) / len(known) if known else 1.0

    @property
    def calls_over_budget(self) -> int:
        """Model calls whose context, with ctxfs, was larger than the window."""
        return sum(c.tokens > self.max_input_tokens for c in self.calls)


def replay(
    history: Sequence[BaseMessage],
    engine: ContextEngine,
    *,
    thread_id: str,
    tools: Sequence[Tool] = (),
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
        tools: The tools the agent was sent, when known: their schemas count in every
            request, with ctxfs and without it (a trace's system prompt is one of its
            messages and counts as such).
        on_message: Called with (messages done, total) after each message, for a progress
            display.
    """
    counter = engine.token_counter
    context: list[BaseMessage] = []
    # The unmanaged history only grows at the end: its total is kept as a running sum, so
    # the counter's memory of the last history counted stays the engine's.
    fixed = engine.count_request(tools=tools)
    baseline = fixed
    calls: list[ModelCall] = []
    pending: list[ContextEvent] = []
    sent: list[BaseMessage] = []  # what the previous call sent
    users: list[str] = []  # what each user message so far must show to be in view
    plan: list[dict[str, Any]] | None = None  # the latest todo list, the live state
    for position, message in enumerate(history):
        if isinstance(message, AIMessage):  # a model call is about to happen
            started = time.perf_counter()
            result = engine.compact(context, thread_id=thread_id, tools=tools, plan=plan)
            seconds = time.perf_counter() - started
            context = result.messages
            shared = shared_prefix(sent, context)
            cached = fixed + counter.count_messages(context[:shared]) if sent else 0
            broken = bool(sent) and shared < len(sent)
            sent = list(context)
            seen = in_view(users, context)
            calls.append(
                ModelCall(
                    index=len(calls) + 1,
                    message_index=position,
                    tokens=result.request_tokens,
                    baseline_tokens=baseline,
                    events=(*pending, *result.events),
                    reason=result.reason,
                    cached_tokens=cached,
                    prefix_broken=broken,
                    task_in_view=seen[0] if seen else True,
                    user_messages=len(seen),
                    user_messages_in_view=sum(seen),
                    plan_in_view=None if plan is None else plan_in_view(plan, context),
                    seconds=seconds,
                )
            )
            pending = []
        if isinstance(message, AIMessage):
            plan = todos_of(message) or plan
        if isinstance(message, ToolMessage):
            outcome = engine.offload_tool_result_detailed(message, thread_id=thread_id)
            context = [*context, outcome.message]
            pending.extend(outcome.events)
        else:
            context = [*context, message]
            if isinstance(message, HumanMessage) and _snippet(message):
                users.append(_snippet(message))
        baseline += counter.count_message(message)
        if on_message is not None:
            on_message(position + 1, len(history))
    return ReplayResult(
        thread_id=thread_id,
        max_input_tokens=engine.window_from(None).window,
        history=tuple(history),
        context=tuple(context),
        calls=tuple(calls),
        trailing_events=tuple(pending),
    )
