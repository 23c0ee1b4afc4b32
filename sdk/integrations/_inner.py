"""What a middleware inside ``ContextMiddleware`` adds to the request, seen at the model.

``create_agent`` runs the ``wrap_model_call`` hooks as layers, the first listed outermost.
One listed after ``ContextMiddleware`` (LangChain's ``TodoListMiddleware`` put there, Deep
Agents' memory middleware) changes the request after ctxfs has counted and compacted it: a
longer system prompt, a tool more. The chat model's start callback sees the request as it is
sent, so a callback handler set for the call (through LangChain's configure hook, for this
context only) measures what was added: the messages that are not the ones ctxfs sent, and
the bound tools whose names ctxfs did not count. What it measures is counted into the next
requests of the thread; a request it finds over the limit is stopped before the model is
called (:class:`InnerGrowth`), so that the middleware compacts for it and calls again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.runnables.config import ensure_config, get_callback_manager_for_config
from langchain_core.tools import BaseTool
from langchain_core.tracers.context import register_configure_hook
from langgraph.errors import GraphBubbleUp

from ctxfs._compaction._engine import ContextEngine
from ctxfs._events import CompactionResult, ContextOverBudget
from ctxfs._messages import same_objects
from ctxfs.integrations._hooks import ContextHooks, RequestShape

__all__ = ["InnerAdditions", "InnerGrowth", "InnerProbe", "tool_name", "watching"]

_log = logging.getLogger("ctxfs")
_THREADS = 4_096
"""Threads whose inner middleware's additions are remembered."""

_PROBE: ContextVar[InnerProbe | None] = ContextVar("ctxfs_inner_probe", default=None)
register_configure_hook(_PROBE, inheritable=True)


def _not_a_stop(record: logging.LogRecord) -> bool:
    """Drops LangChain's line for a stop raised by the probe ("Error in InnerProbe...
    callback"): a stop is not a failed callback, and ctxfs logs its own line for it."""
    return not (
        isinstance(record.args, tuple)
        and len(record.args) > 1
        and record.args[0] == "InnerProbe"
        and isinstance(record.args[-1], str)
        and record.args[-1].startswith("InnerGrowth(")
    )


logging.getLogger("langchain_core.callbacks.manager").addFilter(_not_a_stop)


class InnerGrowth(GraphBubbleUp):
    """A middleware inside ``ContextMiddleware`` made the request too large for the window;
    the call was stopped before the model was called.

    A ``GraphBubbleUp``, which LangChain's middleware pass on untouched: a
    ``ModelRetryMiddleware`` or ``ModelFallbackMiddleware`` inside ``ContextMiddleware``
    caught any other error and made the stopped call again, or with another model.

    Attributes:
        added: The tokens it added.
        tokens: The request's tokens as it was about to be sent.
        limit: What the request may hold.
    """

    def __init__(self, added: int, tokens: int, limit: int, run_id: UUID | None = None) -> None:
        super().__init__(
            f"a middleware inside ContextMiddleware added {added:,} tokens to the "
            f"request ({tokens:,}, over its limit of {limit:,}); compacting for them and "
            "calling again"
        )
        self.added, self.tokens, self.limit = added, tokens, limit
        self.run_id = run_id  # the stopped call's run, which the callback handlers saw start


class InnerProbe(BaseCallbackHandler):
    """Measures the model calls made under it whose messages hold the last one ctxfs sent
    and whose tools (when ctxfs sent any) include one of those; with ``stop_over``, stops
    each one over ``limit``.

    Every such call is measured and the largest kept: a middleware may call a model of its
    own with the request's last messages (a guard, a classifier) before the agent's call,
    and a middleware that catches errors may make a stopped call again.
    """

    raise_error = True  # the stop reaches the middleware; the other errors are ours only
    # Gathered with the other handlers by the async callback manager, not awaited before
    # them: a stop raised inline left their coroutines never awaited. Run in a worker
    # thread there, in a copy of the caller's context; the sync manager calls it in place.
    run_inline = False

    def __init__(
        self,
        engine: ContextEngine,
        system: BaseMessage | None,
        messages: Sequence[BaseMessage],
        tools: Sequence[Any],
        tokens: int,
        limit: int,
        *,
        counted: int = 0,
        stop_over: bool,
    ) -> None:
        self._engine = engine
        self._sent = [system, *messages] if system is not None else list(messages)
        self._names = {tool_name(tool) for tool in tools} - {None}
        self._tokens = tokens
        self._limit = limit
        self._stop_over = stop_over
        self._counted = counted  # what the budget already held for these additions
        self.added: int | None = None
        """Tokens the inner middleware added (``None``: no matching call seen)."""
        self.stopped: InnerGrowth | None = None
        """The last stop, kept for :meth:`checked` should a middleware catch it."""

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        **kwargs: Any,
    ) -> None:
        """Measures the call; raises :class:`InnerGrowth` to stop it when over."""
        if len(messages) != 1 or not self._is_ours(messages[0]):
            return
        params = kwargs.get("invocation_params")
        bound = params.get("tools") if isinstance(params, Mapping) else None
        bound = bound if isinstance(bound, list) else []
        if self._names and not any(tool_name(t) in self._names for t in bound):
            return  # none of the agent's tools: a middleware's own call (a guard, a selector)
        extra = [t for t in bound if tool_name(t) not in self._names]
        with self._engine.lock:
            added = self._changed(messages[0]) + (
                self._engine.count_request(tools=extra) if extra else 0
            )
        added = max(0, added)
        self.added = added if self.added is None else max(self.added, added)
        if self._stop_over and added > self._counted and self._tokens + added > self._limit:
            run_id = kwargs.get("run_id")
            self.stopped = InnerGrowth(
                added,
                self._tokens + added,
                self._limit,
                run_id if isinstance(run_id, UUID) else None,
            )
            raise self.stopped
        self.stopped = None  # a call that fits came after: the stop was handled

    def checked(self) -> InnerProbe:
        """The probe, after the call; raises the stop again if a middleware caught it and
        answered all the same with no call that fits after it (its answer is not one to the
        request): the call is to be made again after a compaction."""
        if self.stopped is not None:
            raise self.stopped
        return self

    def _is_ours(self, batch: Sequence[BaseMessage]) -> bool:
        """Whether ``batch`` is the agent's request: it holds the last message ctxfs sent,
        or a copy of it (its id), anywhere (a middleware may append messages after it, or
        write into a copy of it)."""
        if not self._sent:
            return True
        last = self._sent[-1]
        # from the end: where the last message is, unless something was appended after it
        if any(message is last for message in reversed(batch)):
            return True
        return last.id is not None and any(message.id == last.id for message in reversed(batch))

    def _changed(self, batch: Sequence[BaseMessage]) -> int:
        """Tokens of the messages in ``batch`` that ctxfs did not send, less those of the
        messages ctxfs sent that are not in it."""
        sent = self._sent
        count = self._engine.token_counter.count_message
        tail = len(sent)
        if len(batch) >= tail and same_objects(batch[len(batch) - tail :], sent):
            return sum(map(count, batch[: len(batch) - tail]))  # the common case: one pass in C
        # a message edited or put in between: compare by identity, both ways
        held, kept = {id(m) for m in sent}, {id(m) for m in batch}
        return sum(count(m) for m in batch if id(m) not in held) - sum(
            count(m) for m in sent if id(m) not in kept
        )


class InnerAdditions:
    """Per thread, the tokens middleware inside ``ContextMiddleware`` added to its last
    request: counted into the next one's budget, as an outer middleware's edits are."""

    def __init__(self, hooks: ContextHooks) -> None:
        self._hooks = hooks
        self._by_thread: dict[str, int] = {}

    def tokens(self, thread: str) -> int:
        """What the thread's last request gained inside (0 when nothing is known)."""
        return self._by_thread.get(thread, 0)

    def probe(
        self,
        sent: Any,
        result: CompactionResult | None,
        thread: str,
        *,
        stop_over: bool = True,
    ) -> InnerProbe:
        """A probe for the model call of ``sent`` (a ``ModelRequest``), which ctxfs counted
        as ``result`` (``None``: not compacted, so only measured)."""
        engine = self._hooks.engine
        policy = engine.policy
        known = policy.max_input_tokens is not None and result is not None
        return InnerProbe(
            engine,
            sent.system_message,
            sent.messages,
            sent.tools,
            (result.request_tokens - self.tokens(thread)) if result is not None else 0,
            policy.request_limit_tokens if known else 0,
            counted=self.tokens(thread),
            stop_over=stop_over and known,
        )

    def learn(
        self,
        probe: InnerProbe,
        thread: str,
        shape: RequestShape | None = None,
        result: CompactionResult | None = None,
    ) -> None:
        """Keeps what the probe measured for the thread's next requests; after a call made
        again (``shape`` and ``result`` given), reports one still over its limit."""
        if probe.added is None:
            return
        before = self.tokens(thread)
        if not probe.added:
            self._by_thread.pop(thread, None)
            return
        if len(self._by_thread) >= _THREADS and thread not in self._by_thread:
            del self._by_thread[next(iter(self._by_thread))]  # forget the oldest thread
        self._by_thread[thread] = probe.added
        if shape is None or result is None:
            return
        engine = self._hooks.engine
        policy = engine.policy
        tokens = result.request_tokens - before + probe.added
        if probe.added <= before:
            return  # counted in full: the compaction reported the request if it was over
        if policy.max_input_tokens is None or tokens <= policy.request_limit_tokens:
            return
        self._hooks.report(
            ContextOverBudget(
                tokens=tokens,
                limit=policy.request_limit_tokens,
                system=engine.count_request(system=shape.system),
                tools=engine.count_request(tools=shape.tools),
                messages=result.tokens_after,
                reason=f"a middleware inside ContextMiddleware added {probe.added:,} tokens "
                f"to the request, {probe.added - before:,} more than the compaction made "
                "room for",
            ),
            thread,
        )

    def grown(self, shape: RequestShape, grown: InnerGrowth, thread: str) -> RequestShape:
        """The shape counting what the inner middleware added, after it stopped a call."""
        # its text, not the error: a handler that keeps records (a test's, a memory
        # handler) would keep its traceback, and every frame of the stopped call, alive
        _log.warning("ctxfs [%s]: %s", thread, str(grown))
        _end_stopped_run(grown)
        before = self.tokens(thread)
        self._by_thread[thread] = grown.added
        return dataclasses.replace(shape, added_tokens=shape.added_tokens - before + grown.added)


def _end_stopped_run(grown: InnerGrowth) -> None:
    """Ends the stopped call's run, as an error (the stop), for the callback handlers of the
    model node it was made under: they saw it start, and a tracer would show it running
    for ever. Best effort: a handler's failure here is not the agent's."""
    if grown.run_id is None:
        return
    manager = get_callback_manager_for_config(ensure_config())
    handlers = [h for h in manager.handlers if not isinstance(h, InnerProbe)]
    if not handlers:
        return
    run = CallbackManagerForLLMRun(
        run_id=grown.run_id,
        handlers=handlers,
        inheritable_handlers=[],
        parent_run_id=manager.parent_run_id,
        tags=manager.tags,
        metadata=manager.metadata,
    )
    try:
        run.on_llm_error(grown)
    except Exception:  # a handler that raises its errors: the call is made again all the same
        _log.debug("a callback handler failed on the stopped call's end", exc_info=True)


@contextlib.contextmanager
def watching(probe: InnerProbe) -> Iterator[InnerProbe]:
    """Sets ``probe`` on the model calls made in this context, then removes it."""
    token = _PROBE.set(probe)
    try:
        yield probe
    finally:
        _PROBE.reset(token)


def tool_name(tool: object) -> str | None:
    """The name of a tool as bound: a tool object, or a provider's schema dict (OpenAI's
    ``{"function": {"name": ...}}``, Anthropic's ``{"name": ...}``)."""
    if isinstance(tool, BaseTool):
        return tool.name
    if isinstance(tool, dict):
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        return name if isinstance(name, str) else None
    return None
