"""ctxfs as a LangChain agent middleware: one line in ``create_agent``.

Example:
    >>> from langchain.agents import create_agent
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from ctxfs import Workspace
    >>> from ctxfs._policy._settings import ContextPolicy
    >>> from ctxfs.integrations.langchain import ContextMiddleware
    >>> from ctxfs.testing import ScriptedChatModel
    >>> middleware = ContextMiddleware(
    ...     Workspace("memory://agent"), ContextPolicy(max_input_tokens=128_000))
    >>> agent = create_agent(ScriptedChatModel(responses=["Hello."]), [],
    ...     middleware=[middleware], checkpointer=InMemorySaver())
    >>> agent.invoke({"messages": [("user", "hi")]},
    ...     {"configurable": {"thread_id": "t1"}})["messages"][-1].content
    'Hello.'

Needs the ``langchain`` extra: ``pip install 'ctxfs[langchain]'``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, cast, get_args, overload

from langgraph.types import Command

from ctxfs._compaction._engine import ContextEngine
from ctxfs._events import CompactionResult
from ctxfs._messages import same_objects
from ctxfs._policy._settings import ContextPolicy
from ctxfs._tokens import TokenCounter, as_token_counter
from ctxfs._workspace._workspace import Workspace
from ctxfs.integrations._cache import PromptCache, cache_controls
from ctxfs.integrations._hooks import (
    ContextHooks,
    ContextMeasured,
    EventHandler,
    RequestShape,
    current_thread_id,
    is_context_overflow,
    plan_of,
    state_update,
)
from ctxfs.integrations._inner import InnerAdditions, InnerGrowth, tool_name, watching
from ctxfs.integrations._on_request import (
    acompact_on_request,
    compact_on_request,
    compact_tool,
    history_branch,
    history_tools,
    is_compact_tool,
    tool_conflict_message,
)
from ctxfs.integrations._request_edits import (
    added_tokens,
    repaired_state,
    state_messages,
    with_edits,
    with_repairs,
)
from ctxfs.tools import DEFAULT_MAX_OUTPUT_TOKENS, MIN_OUTPUT_TOKENS

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.agents.middleware.types import (
        ExtendedModelResponse,
        ModelCallResult,
        ModelRequest,
        ModelResponse,
        ToolCallRequest,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ctxfs.integrations.langchain needs LangChain 1.x: pip install 'ctxfs[langchain]'"
    ) from exc

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES

__all__ = ["ContextMeasured", "ContextMiddleware", "ToolConflict"]

_ToolOutput = ToolMessage | Command[Any]
_log = logging.getLogger("ctxfs.integrations")

ToolConflict = Literal["error", "replace", "keep"]
"""What :class:`ContextMiddleware` does when one of its tools has the name of another tool of
the agent: ``"error"`` refuses the model call, naming the tools; ``"replace"`` offers ctxfs's
tool instead of the other; ``"keep"`` keeps the other and leaves ctxfs's of that name out."""


def _persisted(
    request: ModelRequest[Any],
    before: Sequence[BaseMessage],
    result: CompactionResult | None,
    response: ModelCallResult[Any],
) -> ModelCallResult[Any]:
    """The model's answer, with what compaction changed written to the graph state.

    The change rides in the model node's own update, after the answer, so that the node
    writes one update (``stream_mode="updates"`` gives ``{"model": {"messages": [...]}}`` on
    every turn, compacting or not). The ``add_messages`` reducer applies it (see
    :func:`~ctxfs.integrations.langgraph.state_update`): replaced messages are swapped in
    place, archived ones removed by id, and the summary put in the place of the first of
    them; only a list that cannot be reached so is rebuilt, followed by the answer (so it is
    not lost by the rebuild). An inner middleware's command is kept, and applied after.
    ``before`` is what was compacted: the state's messages, also when a middleware outside
    this one edited them for this request only (its edit must not become the state). Nothing
    is written when they are not the state's (a state message without an id or sharing one,
    so that the edit could not be told apart). On a turn where ``create_agent`` answers
    botched tool calls with error results (and so writes the whole state again), the change
    is a rebuild too, with those results after their calls.
    """
    state = request.state.get("messages") if isinstance(request.state, dict) else None
    if state is None or not same_objects(before, state):
        return response
    if result is None:
        return response
    update = state_update(before, result.messages)
    if update is None:
        return response
    if isinstance(response, ExtendedModelResponse):
        answer: ModelResponse[Any] = response.model_response
    else:
        answer = response if isinstance(response, ModelResponse) else ModelResponse([response])
    changes: list[BaseMessage] = list(update["messages"])
    botched = any(isinstance(m, AIMessage) and m.invalid_tool_calls for m in state)
    repaired = repaired_state(state) if botched else None
    if repaired is not None:
        # the node writes the repaired state after a remove-all: rebuild after it, with its
        # error results in place
        kept = with_repairs(result.messages, repaired, state)
        changes = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]
    rebuilt = isinstance(changes[0], RemoveMessage) and changes[0].id == REMOVE_ALL_MESSAGES
    messages = [*changes, *answer.result] if rebuilt else [*answer.result, *changes]
    written = dataclasses.replace(answer, result=messages)
    if isinstance(response, ExtendedModelResponse):
        return dataclasses.replace(response, model_response=written)
    return written


class ContextMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Keeps a ``create_agent`` agent inside its window; everything shed goes to a workspace.

    What it does:

    - **Tools.** Offers the workspace tools (``ls``, ``read_file``, ``write_file``,
      ``edit_file``, ``glob``, ``grep``), the history tools (``history_search``,
      ``history_read``: the thread's archive, ranked) and ``compact_conversation`` (a
      compaction now, at the model's request) with each model request and runs them, so the
      agent can read back what was offloaded. What one call returns is at most the policy's
      ``tool_output`` (a share of the window); the tools page beyond it. When another tool of
      the agent has the same name (Deep Agents brings its own ``ls``, ``read_file``...),
      ``on_tool_conflict`` decides; by default the model call is refused with an error that
      names the tools.
    - **Tool results** (``wrap_tool_call``): a result over the policy's threshold is written
      to ``/tool_results/<thread>/`` and replaced by a pointer with a preview *before* it is
      returned to the graph, so the oversized text never enters the state or the checkpoint.
      Tools returning a ``Command`` keep its ``goto``/``graph``/``resume``; the tool messages
      in its ``update`` are offloaded.
    - **Compaction** (``wrap_model_call``): before every model call the whole request is
      counted (system message, messages, tool schemas: ``create_agent`` keeps the first and
      the last out of the state) and compacted (old large tool inputs offloaded and old tool
      results cleared to pointers, from their triggers; then, only if still over the
      summarization trigger, the oldest part archived to ``/transcripts/`` and summarized).
      A request still over the limit is reported (:class:`~ctxfs.ContextOverBudget`); a
      provider's context-length error gets one retry after compacting as hard as the policy
      allows.

    Persistence and prompt caching: compaction is *written to the graph state*, with the
    model's answer, not applied to each request on the fly. Messages that were replaced
    (same id) are swapped in place through the ``add_messages`` reducer, and messages that
    were archived are removed by id (the summary takes the place of the first of them), so a
    message another middleware or node adds meanwhile is never wiped. So the
    checkpoint shrinks with the context, the work is done once rather than per call, and the
    messages before the newest ones change only when a trigger fires: between compactions the
    model is sent the same prefix as last time, so provider prompt caches stay valid. What is
    compacted, archived and written is the state's own messages: a middleware placed outside
    this one that edits a request's messages for that request only (LangChain's
    ``ContextEditingMiddleware``) has its edit laid over the compacted messages that are sent,
    and never archived or written to the state.

    Threads: files are kept per conversation, named from the run's
    ``config["configurable"]["thread_id"]``; a run without one is named after its
    ``config["run_id"]`` (``run-<run_id>``), and only a run with neither uses ``default``, so
    give concurrent runs without a checkpointer a ``run_id`` each. A sub-graph's messages go
    to ``<thread_id>/<node>:<task>``, one thread per invocation (see
    :func:`~ctxfs.integrations.langgraph.thread_id_from_config`).

    Errors never reach the graph: a failed write keeps the content inline, an unexpected
    engine failure leaves the history as it was, and both are logged on the ``ctxfs`` logger
    (``ctxfs.integrations``) and passed to ``on_event``.

    Sync and async agents are both supported (``invoke``/``ainvoke``, ``stream``/``astream``);
    the async hooks share the sync hooks' implementation and run the engine's blocking work
    (workspace I/O, tokenizing) in a worker thread, so the event loop is never held up. Calls
    into one engine never overlap: parallel tool calls and concurrent runs take turns.

    It takes its parts like the LangGraph blocks (:mod:`ctxfs.integrations.langgraph`): an
    engine, ``ContextMiddleware(engine)``, or the workspace and policy to build one from.

    Args:
        workspace: Where offloaded content, transcripts and the agent's files live; or a
            :class:`~ctxfs.ContextEngine` (then give no policy or token counter).
        policy: When to offload, summarize, and how much to keep.
        token_counter: A :class:`~ctxfs._tokens.TokenCounter` or ``str -> int`` callable;
            exact cl100k_base counts by default.
        tools: ``True`` for the workspace tools, ``False`` for none, or the tools to add.
        on_tool_conflict: When one of ``tools`` has the name of another tool of the agent:
            ``"error"`` (refuse the model call, naming the tools), ``"replace"`` (offer this
            one instead) or ``"keep"`` (keep the other, leave this one out).
        on_event: Called with every :class:`~ctxfs._events.ContextEvent` (offloads,
            summaries, failures, and a :class:`ContextMeasured` before each model call) and
            the thread id. Exceptions it raises are logged and ignored.
        prompt_cache: Provider cache controls on each request (never in the state):
            ``"anthropic"`` puts ``cache_control`` breakpoints on the request's last message
            and on the last message a compaction wrote; ``"openai"`` sends the thread id as
            ``prompt_cache_key`` (a ``prompt_cache_key`` of the agent's own is kept). See
            :mod:`ctxfs.integrations._cache`. ``None`` (default): the request as it is.
    """

    @overload
    def __init__(
        self,
        workspace: Workspace,
        policy: ContextPolicy,
        *,
        token_counter: TokenCounter | Callable[[str], int] | None = None,
        tools: bool | Sequence[BaseTool] = True,
        on_tool_conflict: ToolConflict = "error",
        on_event: EventHandler | None = None,
        prompt_cache: PromptCache | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self,
        workspace: ContextEngine,
        policy: None = None,
        *,
        tools: bool | Sequence[BaseTool] = True,
        on_tool_conflict: ToolConflict = "error",
        on_event: EventHandler | None = None,
        prompt_cache: PromptCache | None = None,
    ) -> None: ...

    def __init__(
        self,
        workspace: Workspace | ContextEngine,
        policy: ContextPolicy | None = None,
        *,
        token_counter: TokenCounter | Callable[[str], int] | None = None,
        tools: bool | Sequence[BaseTool] = True,
        on_tool_conflict: ToolConflict = "error",
        on_event: EventHandler | None = None,
        prompt_cache: PromptCache | None = None,
    ) -> None:
        super().__init__()
        if prompt_cache is not None and prompt_cache not in get_args(PromptCache):
            raise ValueError(
                f"prompt_cache must be 'anthropic', 'openai' or None, not {prompt_cache!r}"
            )
        self._prompt_cache: PromptCache | None = prompt_cache
        if on_tool_conflict not in get_args(ToolConflict):
            raise ValueError(
                f"on_tool_conflict must be 'error', 'replace' or 'keep', not {on_tool_conflict!r}"
            )
        if isinstance(workspace, ContextEngine):
            if policy is not None or token_counter is not None:
                raise TypeError(
                    "give either an engine, ContextMiddleware(engine), or a workspace and a "
                    "policy, ContextMiddleware(workspace, policy, token_counter=...), not both"
                )
            engine = workspace
        elif policy is None:
            raise TypeError(
                "ContextMiddleware needs a policy with the workspace, e.g. "
                "ContextMiddleware(workspace, ContextPolicy(max_input_tokens=128_000))"
            )
        else:
            # The counter also caches by message id, so counts survive the checkpoint reload
            # at each invoke (see ctxfs._tokens).
            engine = ContextEngine(workspace, policy, as_token_counter(token_counter))
        self._hooks = ContextHooks(engine, on_event)
        self._output_cache: dict[int, tuple[object, tuple[BaseTool, ...]]] = {}
        self._inner = InnerAdditions(self._hooks)
        if tools is True:
            from ctxfs.tools import workspace_tools

            # Sized to the window, asked at each call: a window read from the model's
            # profile is known only from the first model call on.
            own = workspace_tools(engine.workspace, max_output_tokens=self._tool_budget)
            own += history_tools(engine, self._tool_budget)
            own.append(compact_tool())
        else:
            own = list(tools) if tools else []
        self._own = {tool.name: tool for tool in own}
        self._on_tool_conflict = on_tool_conflict
        # Offered with each request and run by wrap_tool_call rather than registered with the
        # agent: registered, a tool of the same name from another source would silently
        # replace one of them; offered, the other tools of the request are in view.
        self.tools = []

    def _tool_budget(self) -> int:
        policy = self.engine.policy
        if policy.max_input_tokens is None:
            return DEFAULT_MAX_OUTPUT_TOKENS  # no model call yet: no window to size it to
        return max(MIN_OUTPUT_TOKENS, policy.tool_output_tokens)

    @property
    def own_tools(self) -> tuple[BaseTool, ...]:
        """The tools this middleware offers the model (the workspace tools by default)."""
        return tuple(self._own.values())

    @property
    def engine(self) -> ContextEngine:
        """The engine applying the policy (its workspace, policy and token counter)."""
        return self._hooks.engine

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelCallResult[Any]:
        """Budgets the request the model receives, and retries once if the provider refuses it.

        The whole request is counted (system message, messages, tool schemas) and compacted
        if it reaches a trigger; what compaction changed is written to the graph state with
        the model's answer. A request still over the limit is sent with a
        :class:`~ctxfs.ContextOverBudget` event and a warning. If the provider answers that
        the context is too long, the history is compacted as hard as the policy allows and
        the call is made once more. What middleware listed after this one adds to the
        request is measured at the model and counted into the thread's next requests; a
        call it makes too large is stopped before the model runs and made again after a
        compaction that counts it (:mod:`ctxfs.integrations._inner`).
        """
        request = self._with_own_tools(request)
        own = self._own_messages(request)
        thread = current_thread_id()
        shape = self._shape_of(request, own, thread)
        result = self._hooks.compact_request(own, thread, shape)
        try:  # the outer try: a call made again after a stop may be refused as too long too
            try:
                sent = self._sent(request, own, result, thread, shape)
                with watching(self._inner.probe(sent, result, thread)) as probe:
                    response = handler(sent)
                self._inner.learn(probe.checked(), thread)
            except InnerGrowth as grown:
                shape = self._inner.grown(shape, grown, thread)
                assert result is not None  # a call is stopped only after a compaction
                result = self._hooks.compact_request(result.messages, thread, shape)
                sent = self._sent(request, own, result, thread, shape)
                probe = self._inner.probe(sent, result, thread, stop_over=False)
                with watching(probe):
                    response = handler(sent)
                self._inner.learn(probe, thread, shape, result)
        except Exception as exc:
            if not is_context_overflow(exc):
                raise
            # from what was compacted, so a segment archived by the first compaction is not
            # archived again under another range
            sent_messages = result.messages if result is not None else own
            result = self._hooks.compact_request(sent_messages, thread, shape, force=True)
            response = handler(self._retry(request, own, result, thread, shape, exc))
        return _persisted(request, own, result, response)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """The async twin of :meth:`wrap_model_call` (engine work in worker threads)."""
        request = self._with_own_tools(request)
        own = self._own_messages(request)
        thread = current_thread_id()
        shape = self._shape_of(request, own, thread)
        result = await self._hooks.acompact_request(own, thread, shape)
        try:  # the outer try: a call made again after a stop may be refused as too long too
            try:
                sent = self._sent(request, own, result, thread, shape)
                with watching(self._inner.probe(sent, result, thread)) as probe:
                    response = await handler(sent)
                self._inner.learn(probe.checked(), thread)
            except InnerGrowth as grown:
                shape = self._inner.grown(shape, grown, thread)
                assert result is not None  # a call is stopped only after a compaction
                result = await self._hooks.acompact_request(result.messages, thread, shape)
                sent = self._sent(request, own, result, thread, shape)
                probe = self._inner.probe(sent, result, thread, stop_over=False)
                with watching(probe):
                    response = await handler(sent)
                self._inner.learn(probe, thread, shape, result)
        except Exception as exc:
            if not is_context_overflow(exc):
                raise
            sent_messages = result.messages if result is not None else own
            result = await self._hooks.acompact_request(sent_messages, thread, shape, force=True)
            response = await handler(self._retry(request, own, result, thread, shape, exc))
        return _persisted(request, own, result, response)

    # The request logic, written once for both twins.

    @staticmethod
    def _own_messages(request: ModelRequest[Any]) -> Sequence[BaseMessage]:
        """What is compacted: the state's messages, not a copy an outer middleware edited
        for this request (the archive and the state must hold what the thread said)."""
        held = request.state.get("messages") if isinstance(request.state, dict) else None
        if held is None or same_objects(request.messages, held):
            return request.messages  # the common case: the request is the state
        state = state_messages(request.messages, request.state)
        return request.messages if state is None else state

    def _with_own_tools(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request with this middleware's tools added, name clashes settled."""
        if not self._own:
            return request
        others = {tool_name(t): t for t in request.tools}
        clash = sorted(n for n, t in self._own.items() if n in others and others[n] is not t)
        if clash and self._on_tool_conflict == "error":
            raise ValueError(tool_conflict_message(clash))
        if self._on_tool_conflict == "keep":
            kept = list(request.tools)
            added = [t for n, t in self._own.items() if n not in others]
        else:
            kept = [t for t in request.tools if tool_name(t) not in self._own]
            added = list(self._own.values())
        return request.override(tools=[*kept, *added])

    def _own_call(self, request: ToolCallRequest) -> ToolCallRequest:
        """The call, given the tool to run when it is one of this middleware's (and no tool
        of that name is registered with the agent)."""
        if not self._own:
            return request
        tool = self._own.get(request.tool_call["name"])
        if tool is None or request.tool is not None:
            return request
        return request.override(tool=tool)

    def _is_compact_call(self, request: ToolCallRequest) -> bool:
        """Whether the call is this middleware's ``compact_conversation`` (not another's)."""
        if not self._own or request is None:
            return False
        own = self._own.get(request.tool_call["name"])
        return (
            own is not None
            and is_compact_tool(own)
            and (request.tool is None or request.tool is own)
        )

    def _replacement(self, request: ToolCallRequest) -> BaseTool | None:
        """This middleware's tool, when it runs instead of another's of the same name."""
        if self._on_tool_conflict != "replace" or not self._own:
            return None
        tool = self._own.get(request.tool_call["name"])
        if tool is None or request.tool is None or request.tool is tool:
            return None
        return tool

    def _shape_of(
        self, request: ModelRequest[Any], own: Sequence[BaseMessage], thread: str
    ) -> RequestShape:
        tools = (*request.tools, *self._output_tools(request.response_format))
        # what a middleware inside this one added to the thread's last request (_inner.py)
        added = self._inner.tokens(thread)
        if own is not request.messages:  # an outer middleware's edit: what it adds is sent too
            engine = self._hooks.engine
            with engine.lock:
                added += added_tokens(request.messages, own, engine.token_counter.count_message)
        return RequestShape(
            system=request.system_message,
            tools=tools,
            model=request.model,
            plan=plan_of(request.state),
            added_tokens=added,
        )

    def _output_tools(self, response_format: object) -> tuple[BaseTool, ...]:
        """The tools ``create_agent`` binds for structured output (``ToolStrategy``, or an
        ``AutoStrategy`` that may become one), made once per response format."""
        from langchain.agents.structured_output import (
            AutoStrategy,
            OutputToolBinding,
            ToolStrategy,
        )

        if isinstance(response_format, AutoStrategy):
            response_format = ToolStrategy(schema=response_format.schema)
        if not isinstance(response_format, ToolStrategy):
            return ()
        key = id(response_format.schema)
        cached = self._output_cache.get(key)
        if cached is None or cached[0] is not response_format.schema:
            made = tuple(
                OutputToolBinding.from_schema_spec(spec).tool
                for spec in response_format.schema_specs
            )
            cached = self._output_cache[key] = (response_format.schema, made)
        return cached[1]

    def _sent(
        self,
        request: ModelRequest[Any],
        own: Sequence[BaseMessage],
        result: CompactionResult | None,
        thread: str,
        shape: RequestShape,
    ) -> ModelRequest[Any]:
        if result is not None:  # else compaction failed (logged): the request goes as it is
            self._hooks.measure(result, thread, shape)
            messages: Sequence[BaseMessage] = result.messages
            if own is not request.messages:  # an outer middleware's edit, laid over the result
                messages = with_edits(request.messages, own, result.messages)
            if not same_objects(messages, request.messages):
                request = request.override(messages=cast(list[AnyMessage], list(messages)))
        if self._prompt_cache is None:
            return request
        marked, settings = cache_controls(request.messages, thread, self._prompt_cache)
        return request.override(
            messages=cast(list[AnyMessage], marked),
            model_settings={**settings, **request.model_settings},
        )

    def _retry(
        self,
        request: ModelRequest[Any],
        own: Sequence[BaseMessage],
        forced: CompactionResult | None,
        thread: str,
        shape: RequestShape,
        exc: Exception,
    ) -> ModelRequest[Any]:
        if forced is None:
            raise exc
        _log.warning(
            "ctxfs [%s]: the provider refused the request as too long (%s); compacted as hard "
            "as the policy allows (%s tokens) and calling once more",
            thread,
            type(exc).__name__,
            f"{forced.request_tokens:,}",
        )
        return self._sent(request, own, forced, thread, shape)

    # The tool-call hooks are the ones of ToolResultOffloader: both delegate to the core.

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _ToolOutput]
    ) -> _ToolOutput:
        """Runs the tool, then offloads its result if it is too large."""
        with history_branch(getattr(request, "state", None)):
            return self._run_tool_call(request, handler)

    def _run_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _ToolOutput]
    ) -> _ToolOutput:
        if self._is_compact_call(request):
            return compact_on_request(self._hooks, request, current_thread_id())
        tool = self._replacement(request)
        if tool is not None:
            # Run here: the agent's tool node would give it the arguments it injects into
            # the other tool of that name (Deep Agents' runtime), which this one does not take.
            return self._hooks.wrap_tool_call(
                request.override(tool=tool),
                lambda r: cast(ToolMessage, tool.invoke({**r.tool_call, "type": "tool_call"})),
            )
        return self._hooks.wrap_tool_call(self._own_call(request), handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_ToolOutput]],
    ) -> _ToolOutput:
        """The async twin of :meth:`wrap_tool_call` (the offload runs in a worker thread)."""
        with history_branch(getattr(request, "state", None)):
            return await self._arun_tool_call(request, handler)

    async def _arun_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_ToolOutput]],
    ) -> _ToolOutput:
        if self._is_compact_call(request):
            return await acompact_on_request(self._hooks, request, current_thread_id())
        tool = self._replacement(request)
        if tool is not None:

            async def run(call: ToolCallRequest) -> _ToolOutput:
                return cast(
                    ToolMessage, await tool.ainvoke({**call.tool_call, "type": "tool_call"})
                )

            return await self._hooks.awrap_tool_call(request.override(tool=tool), run)
        return await self._hooks.awrap_tool_call(self._own_call(request), handler)
