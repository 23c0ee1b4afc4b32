"""The graph hooks: the logic every integration shares, written once; adapters plug it in.

Three things happen around an agent loop:

- a tool's output is offloaded before it becomes graph state (:meth:`ContextHooks.offload`);
- before each model call the history is compacted and the change is turned into a graph state
  update (:meth:`ContextHooks.compact` / :meth:`ContextHooks.acompact`, built on the pure
  :func:`state_update`);
- what the engine did is logged (logger ``ctxfs.integrations``) and passed to an optional
  ``on_event`` callback.

Sync and async twins share one implementation. The engine's work (workspace reads and writes,
tokenizing) is synchronous, so the async twins run it in
a worker thread (:func:`asyncio.to_thread`, inside :meth:`ContextEngine.acompact
<ctxfs.ContextEngine.acompact>` for compaction) and the event loop keeps serving other
runs; only the summary model is awaited on the loop. All work on one engine is serialized by
the engine's own :attr:`~ctxfs.ContextEngine.lock`, whichever hooks (the langgraph
building blocks each make their own around one engine) or threads call it.

Nothing here raises into the graph: an unexpected engine failure is logged and the content
stays as it was, so nothing is lost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage, ToolMessage
from langgraph.config import get_stream_writer
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ctxfs._compaction._engine import ContextEngine
from ctxfs._compaction._request import Tool
from ctxfs._events import (
    ArchiveFailed,
    ArchiveRepaired,
    CompactionResult,
    ContextEvent,
    ContextMeasured,
    ContextOverBudget,
    OffloadFailed,
    describe_event,
)
from ctxfs._messages import same_objects

__all__ = [
    "DEFAULT_THREAD_ID",
    "ContextHooks",
    "ContextMeasured",
    "EventHandler",
    "RequestShape",
    "current_thread_id",
    "is_context_overflow",
    "plan_of",
    "report_event",
    "state_update",
    "thread_id_from_config",
]

DEFAULT_THREAD_ID = "default"
"""The thread id used when a run's config has none (a graph without a checkpointer)."""

EventHandler = Callable[[ContextEvent, str], object]
"""Called with each event and the thread id it happened in."""

_log = logging.getLogger("ctxfs.integrations")
_T = TypeVar("_T")
_ToolOutput = ToolMessage | Command[Any]


# -- thread ids -----------------------------------------------------------------------------


def thread_id_from_config(
    config: Mapping[str, Any] | None, *, default: str = DEFAULT_THREAD_ID
) -> str:
    """The conversation a run belongs to: its ``thread_id``, plus the sub-graph it runs in.

    ``config["configurable"]["thread_id"]`` names the thread. A run without one (a graph
    without a checkpointer) is named after its ``config["run_id"]``, as ``run-<run_id>``, and
    only a run with neither uses ``default``. The transcript archive allows one writer per
    thread, so concurrent runs without a thread id must not share a name: give each a
    ``run_id`` (``graph.invoke(state, {"run_id": uuid.uuid4()})``) or, better, a
    ``thread_id``. Runs named ``default`` continue one another's files, which is right only
    while they run one at a time.

    A node of a sub-graph runs in a checkpoint namespace such as
    ``researcher:<task>|model:<task>``; its conversation is ``<thread_id>/researcher:<task>``:
    the namespace without its last segment (the node itself, whose task changes at every
    step). The task of each enclosing node stays: it names one invocation, and is the same at
    every step of it (and again when a checkpointed run resumes it). So every agent
    invocation gets its own thread: a sub-agent's messages never mix with its parent's, nor
    with those of the same sub-agent invoked in parallel (three calls of one tool that runs
    a ``create_agent`` sub-agent are three threads), and every step of one invocation lands
    in the same place.

    Example:
        >>> thread_id_from_config({"configurable": {"thread_id": "t1",
        ...     "checkpoint_ns": "researcher:1f2|model:9ab"}})
        't1/researcher:1f2'
        >>> thread_id_from_config({"run_id": "5d1c"})
        'run-5d1c'
        >>> thread_id_from_config(None)
        'default'
    """
    configurable = (config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    run = (config or {}).get("run_id")
    if thread not in (None, ""):
        base = str(thread)
    elif run not in (None, ""):
        base = f"run-{run}"
    else:
        base = default
    namespace = configurable.get("checkpoint_ns") or ""
    parents = str(namespace).split("|")[:-1]
    return "/".join([base, *(segment for segment in parents if segment)])


def current_thread_id(default: str = DEFAULT_THREAD_ID) -> str:
    """The thread id of the graph run this is called from (see :func:`thread_id_from_config`).

    Inside a node, langgraph keeps the run's ``run_id`` in the run's runtime rather than in
    the node's config; it is read from there. Outside a graph run, ``default``.
    """
    from langgraph.config import get_config
    from langgraph.runtime import get_runtime

    try:
        config = get_config()
    except RuntimeError:  # not inside a runnable context
        return default
    if config.get("run_id") is None:
        runtime = get_runtime()
        info = getattr(runtime, "execution_info", None)
        if info is not None and info.run_id:
            config = {**config, "run_id": info.run_id}
    return thread_id_from_config(config, default=default)


# -- state updates --------------------------------------------------------------------------


def state_update(
    before: Sequence[BaseMessage], after: Sequence[BaseMessage]
) -> dict[str, list[AnyMessage]] | None:
    """The ``messages`` update that turns a graph state holding ``before`` into ``after``.

    For the ``add_messages`` reducer, and touching only the messages ``before`` holds, so
    that a message another node adds in the same graph step (a parallel branch, an inner
    middleware's command) is kept whatever order the updates are applied in:

    - nothing changed (same objects): ``None``, no write at all;
    - a message replaced (same id): the new one, which the reducer swaps in place;
    - a message dropped (archived): ``RemoveMessage`` with its id;
    - a new message (a summary) where messages were dropped: it takes the id of the first of
      them, so the reducer puts it in that place (a new id would put it at the end).

    Only when ``after`` cannot be reached that way (a message of ``before`` without an id, a
    new message where nothing was dropped, kept messages out of order) is the state reset
    with ``RemoveMessage(REMOVE_ALL_MESSAGES)`` and rebuilt from ``after``.

    Args:
        before: The messages in the state.
        after: What they should become.
    """
    if same_objects(before, after):
        return None
    changes = _in_place(before, after)
    if changes is None:
        rebuilt: list[BaseMessage] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *after]
        return {"messages": cast(list[AnyMessage], rebuilt)}
    return {"messages": cast(list[AnyMessage], changes)} if changes else None


def _in_place(
    before: Sequence[BaseMessage], after: Sequence[BaseMessage]
) -> list[BaseMessage] | None:
    """The replacements and removals of :func:`state_update`, or ``None`` if it takes a
    rebuild."""
    position: dict[str, int] = {}
    for index, message in enumerate(before):
        if message.id is None or message.id in position:
            return None
        position[message.id] = index
    kept = [position.get(message.id) if message.id is not None else None for message in after]
    places = [p for p in kept if p is not None]
    if places != sorted(set(places)):
        return None
    replaced: list[BaseMessage] = []
    taken: set[int] = set()
    previous = -1
    for index, message in enumerate(after):
        place = kept[index]
        if place is not None:
            if message is not before[place]:
                replaced.append(message)
            previous = place
            continue
        following = next((p for p in kept[index + 1 :] if p is not None), len(before))
        free = [p for p in range(previous + 1, following) if p not in taken]
        if not free:
            return None  # nothing dropped here for it to replace
        taken.add(free[0])
        replaced.append(message.model_copy(update={"id": before[free[0]].id}))
        previous = free[0]
    placed = set(places) | taken
    removed = [
        RemoveMessage(id=str(message.id))
        for index, message in enumerate(before)
        if index not in placed
    ]
    return [*replaced, *removed]


# -- the hooks ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    """Where a tool output came from: its thread, and the tool or tools that returned it."""

    thread: str
    tool: object | None
    tools: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class RequestShape:
    """What a model call sends besides the messages, as far as an integration knows it.

    Attributes:
        system: The system message, when it is not among the messages.
        tools: The tools the model is bound to.
        model: The chat model (its profile gives the window when the policy has none).
        plan: The live todo list (the graph state's ``todos``, as LangChain's
            ``TodoListMiddleware`` and Deep Agents' ``write_todos`` keep it): a summary puts
            it back after itself (:attr:`~ctxfs.ContextPolicy.pinning`).
        added_tokens: What other middleware adds to this request only (an outer one's
            edits; what one inside ctxfs's added to the thread's last request).
    """

    system: BaseMessage | str | None = None
    tools: Sequence[Tool] = ()
    model: BaseChatModel | None = None
    plan: Sequence[Mapping[str, Any]] | str | None = None
    added_tokens: int = 0


class ContextHooks:
    """The engine, bound to an event callback; what every adapter delegates to.

    Args:
        engine: The context engine.
        on_event: Optional callback for every event, with the thread id.
    """

    def __init__(self, engine: ContextEngine, on_event: EventHandler | None = None) -> None:
        self.engine = engine
        self._on_event = on_event

    # tool calls

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _ToolOutput]
    ) -> _ToolOutput:
        """Runs the tool, then offloads its result if it is too large.

        ``request.tool`` is the tool that runs: when it is one of ctxfs's recovery tools
        (told by identity), its result is not offloaded.
        """
        return self.offload(handler(request), tool=getattr(request, "tool", None))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_ToolOutput]],
    ) -> _ToolOutput:
        """The async twin of :meth:`wrap_tool_call`: the offload runs in a worker thread."""
        return await self.aoffload(await handler(request), tool=getattr(request, "tool", None))

    # tool outputs

    def offload(
        self,
        output: _T,
        thread_id: str | None = None,
        *,
        tool: object | None = None,
        tools: Mapping[str, object] | None = None,
    ) -> _T:
        """Offloads every large tool result inside a tool node's output.

        ``output`` may be a ``ToolMessage``, a ``Command`` (its ``update["messages"]`` are
        offloaded; ``goto``, ``graph`` and ``resume`` are kept), a dict update with
        ``messages``, or a list of these (what a ``ToolNode`` returns). Anything else is
        returned as is.

        Args:
            output: What the tool or tool node returned.
            thread_id: The conversation; by default the current run's.
            tool: The tool that returned it, if known (one tool call).
            tools: The tools of the node that returned it, by name: results of ctxfs's
                recovery tools (told by identity) are not offloaded.
        """
        thread = thread_id if thread_id is not None else current_thread_id()
        by_name = tools or {}
        return cast(_T, self._offload_any(output, _Run(thread, tool, by_name)))

    async def aoffload(
        self,
        output: _T,
        thread_id: str | None = None,
        *,
        tool: object | None = None,
        tools: Mapping[str, object] | None = None,
    ) -> _T:
        """The async twin of :meth:`offload`: the same work, in a worker thread."""
        thread = thread_id if thread_id is not None else current_thread_id()
        return await asyncio.to_thread(self.offload, output, thread, tool=tool, tools=tools)

    def _offload_any(self, output: object, run: _Run) -> object:
        if isinstance(output, ToolMessage):
            return self._offload_message(output, run)
        if isinstance(output, Command):
            update = self._offload_update(output.update, run)
            return output if update is output.update else dataclasses.replace(output, update=update)
        if isinstance(output, dict):
            return self._offload_update(output, run)
        if isinstance(output, list):
            items = [self._offload_any(item, run) for item in output]
            return output if same_objects(items, output) else items
        return output

    def _offload_update(self, update: object, run: _Run) -> object:
        if isinstance(update, dict) and "messages" in update:
            messages = self._offload_any(update["messages"], run)
            return update if messages is update["messages"] else {**update, "messages": messages}
        if isinstance(update, list | tuple) and all(
            isinstance(pair, tuple) and len(pair) == 2 for pair in update
        ):
            pairs = [
                (key, self._offload_any(value, run) if key == "messages" else value)
                for key, value in update
            ]
            unchanged = all(a[1] is b[1] for a, b in zip(pairs, update, strict=True))
            return update if unchanged else type(update)(pairs)
        return update

    def _offload_message(self, message: ToolMessage, run: _Run) -> ToolMessage:
        thread = run.thread
        tool = run.tool if run.tool is not None else run.tools.get(message.name or "")
        try:
            outcome = self.engine.offload_tool_result_detailed(message, thread_id=thread, tool=tool)
        except Exception:  # the graph must go on; the result simply stays inline
            _log.exception("ctxfs: offloading the result of %s failed", message.tool_call_id)
            return message
        for event in outcome.events:
            self.report(event, thread)
        return outcome.message

    # compaction

    def compact(
        self,
        messages: Sequence[BaseMessage],
        thread_id: str | None = None,
        *,
        request: RequestShape | None = None,
    ) -> dict[str, list[AnyMessage]] | None:
        """Compacts ``messages`` if a trigger fires and returns the graph state update.

        Args:
            messages: The history in the graph state.
            thread_id: The conversation; by default the current run's.
            request: The rest of the request the model is sent (system message, tools,
                model), as far as the integration knows it.

        Returns:
            ``None`` when nothing changed (the state and the checkpoint are left alone), or a
            ``messages`` update (see :func:`state_update`).
        """
        thread = thread_id if thread_id is not None else current_thread_id()
        shape = request or RequestShape()
        result = self.compact_request(messages, thread, shape)
        if result is None:
            return None
        self.measure(result, thread, shape)
        return state_update(messages, result.messages)

    async def acompact(
        self,
        messages: Sequence[BaseMessage],
        thread_id: str | None = None,
        *,
        request: RequestShape | None = None,
    ) -> dict[str, list[AnyMessage]] | None:
        """The async twin of :meth:`compact`: engine work in worker threads, the model awaited."""
        thread = thread_id if thread_id is not None else current_thread_id()
        shape = request or RequestShape()
        result = await self.acompact_request(messages, thread, shape)
        if result is None:
            return None
        self.measure(result, thread, shape)
        return state_update(messages, result.messages)

    def compact_request(
        self,
        messages: Sequence[BaseMessage],
        thread: str,
        request: RequestShape,
        *,
        force: bool = False,
    ) -> CompactionResult | None:
        """Compacts a request's messages and reports the events; ``None`` on a failure.

        Raises:
            ValueError: The policy cannot be used with this model: no window anywhere, or
                settings that do not fit its profile's window (a misuse, not a failure).
        """
        self.engine.window_from(request.model)
        try:
            result = self.engine.compact(messages, **_compact_args(thread, request, force))
        except Exception:  # the graph must go on with the history it has
            _log.exception("ctxfs: compacting thread %s failed; history left as it was", thread)
            return None
        return self._reported(result, thread)

    async def acompact_request(
        self,
        messages: Sequence[BaseMessage],
        thread: str,
        request: RequestShape,
        *,
        force: bool = False,
    ) -> CompactionResult | None:
        """The async twin of :meth:`compact_request`."""
        self.engine.window_from(request.model)
        try:
            result = await self.engine.acompact(messages, **_compact_args(thread, request, force))
        except Exception:  # the graph must go on with the history it has
            _log.exception("ctxfs: compacting thread %s failed; history left as it was", thread)
            return None
        return self._reported(result, thread)

    def _reported(self, result: CompactionResult, thread: str) -> CompactionResult:
        for event in result.events:
            self.report(event, thread)
        return result

    def measure(self, result: CompactionResult, thread: str, request: RequestShape) -> None:
        """Reports the :class:`ContextMeasured` of a compacted request."""
        policy = self.engine.policy
        fixed = result.fixed_tokens
        system = self.engine.count_request(system=request.system)
        self.report(
            ContextMeasured(
                thread_id=thread,
                messages=len(result.messages),
                tokens_before=result.tokens_before + fixed,
                tokens_after=result.request_tokens,
                system_tokens=system,
                tool_tokens=fixed - system - request.added_tokens,
                message_tokens=result.tokens_after + request.added_tokens,
                max_input_tokens=policy.window,
                limit=policy.request_limit_tokens,
            ),
            thread,
        )

    # events

    def report(self, event: ContextEvent, thread_id: str) -> None:
        """Logs ``event`` and passes it to the callback (whose failures are logged only)."""
        report_event(event, thread_id, self._on_event)


def report_event(event: ContextEvent, thread_id: str, on_event: EventHandler | None) -> None:
    """Logs ``event``, writes it to the graph's custom stream (inside a graph run) and passes
    it to ``on_event`` (whose failures are logged only)."""
    text = describe_event(event)
    if _is_failure(event):
        _log.warning("ctxfs [%s]: %s", thread_id, text)
    elif isinstance(event, ContextMeasured):
        _log.debug("ctxfs [%s]: %s", thread_id, text)
    else:
        _log.info("ctxfs [%s]: %s", thread_id, text)
    _stream(event, thread_id, text)
    if on_event is not None:
        try:
            on_event(event, thread_id)
        except Exception:
            _log.exception("ctxfs: the on_event callback raised")


def _stream(event: ContextEvent, thread_id: str, text: str) -> None:
    """Writes ``event`` to LangGraph's custom stream when it happens inside a graph run.

    A UI that streams with ``stream_mode="custom"`` gets ``{"ctxfs": {"event", "thread_id",
    "text", "data"}}`` (``data``: the event's fields, JSON-ready).
    """
    try:
        writer = get_stream_writer()
    except (RuntimeError, KeyError):  # not inside a graph run (or a runnable outside one)
        return
    data = {key: _json_ready(value) for key, value in dataclasses.asdict(event).items()}
    writer(
        {
            "ctxfs": {
                "event": type(event).__name__,
                "thread_id": thread_id,
                "text": text,
                "data": data,
            }
        }
    )


def _json_ready(value: object) -> object:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_json_ready(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    return str(value)


_OVERFLOW_WORDS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "reduce the length",
)


def is_context_overflow(exc: BaseException) -> bool:
    """Whether a provider error says the request was too long for the model's window.

    LangChain's :class:`~langchain_core.exceptions.ContextOverflowError`, and the wording
    providers use for it (OpenAI ``context_length_exceeded``, Anthropic "prompt is too
    long", ...).
    """
    from langchain_core.exceptions import ContextOverflowError

    if isinstance(exc, ContextOverflowError):
        return True
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in _OVERFLOW_WORDS)


def _compact_args(thread: str, request: RequestShape, force: bool) -> dict[str, Any]:
    """The engine's ``compact`` keywords for a request (the sync and async calls share them)."""
    return {
        "thread_id": thread,
        "system": request.system,
        "tools": request.tools,
        "model": request.model,
        "force": force,
        "plan": request.plan,
        "added_tokens": request.added_tokens,
    }


def plan_of(state: object, key: str = "todos") -> Sequence[Mapping[str, Any]] | str | None:
    """The todo list in a graph state, or ``None`` when it has none (or not of that shape)."""
    todos = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if isinstance(todos, str):
        return todos
    if isinstance(todos, Sequence) and all(isinstance(t, Mapping) for t in todos):
        return list(todos)
    return None


def _is_failure(event: ContextEvent) -> bool:
    return isinstance(event, OffloadFailed | ArchiveFailed | ArchiveRepaired | ContextOverBudget)
