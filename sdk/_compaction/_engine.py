"""The context engine: the driver that applies a :class:`~ctxfs.ContextPolicy` to messages.

It resolves the window once into a frozen :class:`~ctxfs._policy._budget.Budget` (never
replacing its policy) and hands that budget, its :class:`~ctxfs._compaction._means.Means`
(workspace, token counter, caches) and the messages to the steps, functions over values that
never call back into it: result offload when a tool returns (``_results``), and before each
model call one compaction (:mod:`~ctxfs._compaction._escalation`: old inputs and old results
as one batch, then a summary only if a trigger still fires). A compaction is a generator
that yields when the summary model must answer; the sync and the async driver answer it,
and nothing else differs between them. The public methods that run one step alone live
beside their step, in the engine's mixins (``_results``, ``_inputs``, ``_apply``, and
``_openai`` for OpenAI-style dicts); this module holds the driving.

One engine may be called from several threads (a sync ``ToolNode`` runs parallel tool calls in
a thread pool, async callers run engine work in worker threads, concurrent runs of one graph
share an engine), and its token counter's caches are not thread-safe, so every engine call
holds the engine's :attr:`ContextEngine.lock`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from ctxfs._compaction._apply import ClearingMethods
from ctxfs._compaction._escalation import (
    WORTH_COMPACTING,
    escalate,
    forced,
    requested,
    summarized_or_refused,
)
from ctxfs._compaction._inputs import InputMethods
from ctxfs._compaction._means import Means
from ctxfs._compaction._openai import OpenAIMessages, OpenAIMethods
from ctxfs._compaction._request import Fixed, RequestParts, Tool, budget_for_window
from ctxfs._compaction._results import ResultMethods
from ctxfs._events import CompactionResult
from ctxfs._messages import malformed_content
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import ContextPolicy
from ctxfs._summary._body import ModelAnswer, acall_model, call_model
from ctxfs._tokens import TokenCounter, as_token_counter
from ctxfs._workspace._workspace import Workspace

__all__ = ["ContextEngine"]

_Steps = Generator[str, ModelAnswer, CompactionResult]


class ContextEngine(ResultMethods, InputMethods, ClearingMethods, OpenAIMethods):
    """Keeps a conversation inside its window by moving large content into a workspace.

    Example:
        >>> from ctxfs import ContextEngine, ContextPolicy, Workspace
        >>> policy = ContextPolicy(max_input_tokens=200_000)
        >>> engine = ContextEngine(Workspace("memory://demo"), policy)

    Args:
        workspace: Where offloaded content is written (the SDK's own, writable view).
        policy: What to offload and when.
        token_counter: A :class:`~ctxfs._tokens.TokenCounter`, a ``str -> int`` callable, or
            ``None`` for exact cl100k_base counts. Reuse one engine per conversation so its
            per-message cache pays off.
        clock: Returns the time recorded in the transcript index (default: now, UTC). It is
            stored nowhere else: messages and segment files never depend on it. Inject a
            fixed clock for byte-identical index files.
    """

    def __init__(
        self,
        workspace: Workspace,
        policy: ContextPolicy,
        token_counter: TokenCounter | Callable[[str], int] | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._workspace = workspace
        self._policy = policy
        self._counter = as_token_counter(token_counter)
        self._clock = clock
        self._lock = threading.RLock()
        self._parts = RequestParts(self._counter)
        self._means = Means(workspace, self._counter, clock)
        self._openai = OpenAIMessages()
        # the policy's numbers for its window, resolved once, when the window is known
        self._budget: Budget[ContextPolicy] | None = None

    @property
    def workspace(self) -> Workspace:
        """The workspace offloaded content goes to."""
        return self._workspace

    @property
    def policy(self) -> ContextPolicy:
        """The policy in force: the one given, with its window once one was read."""
        budget = self._budget
        return budget.policy if budget is not None else self._policy

    @property
    def token_counter(self) -> TokenCounter:
        """The token counter (with its per-message cache)."""
        return self._counter

    @property
    def clock(self) -> Callable[[], datetime] | None:
        """The clock for transcript index times (``None``: now, UTC)."""
        return self._clock

    @property
    def lock(self) -> threading.RLock:
        """The lock serializing all work on this engine, whichever thread asks for it.

        It is held around each tool result offload, each tool input offload, each clearing
        and each stretch of compaction work between two summary-model calls; never while the
        summary model is answering, so other calls proceed meanwhile. Hold it yourself to use
        the :attr:`token_counter` (whose caches are not thread-safe) or the engine's workspace
        folders alongside engine calls from other threads. It is re-entrant: calling the
        engine while holding it is fine. A thread lock, not an ``asyncio.Lock``: the async
        methods take it in worker threads only, so waiting for it never blocks an event loop,
        and it is bound to no loop.
        """
        return self._lock

    # -- all steps ------------------------------------------------------------------------

    def compact(
        self,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        force: bool = False,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
        added_tokens: int = 0,
    ) -> CompactionResult:
        """Keeps a request inside the window: offload old inputs, clear old results, summarize.

        Call it before each model call. Below every trigger nothing changes. Once the tool
        input trigger is reached, old tool inputs are offloaded; with clearing on, once its
        trigger is reached old tool results are cleared to pointers (see
        :meth:`clear_tool_results`); if a summarization trigger
        still fires, the oldest messages outside the protected recent window are archived to
        ``/transcripts/<thread>/`` (written and verified first) and replaced by one summary
        message right after the system prompt. The system prompt stays first; an AI message
        and its tool results are never separated; a previous summary is folded into the new
        one. If the archive cannot be written, the input is returned unchanged with an
        :class:`~ctxfs._events.ArchiveFailed` event. Compacting the result again changes
        nothing; the input is never mutated.

        The budget is the whole request: the messages, plus a system message and tool
        schemas the model is sent apart from them (as ``create_agent`` does). Every trigger
        compares against the request, and when the request still exceeds
        :attr:`~ctxfs.ContextPolicy.request_limit_tokens` afterwards a
        :class:`~ctxfs.ContextOverBudget` event says by how much and why.

        Args:
            messages: The conversation history.
            thread_id: The conversation; names the folders written.
            system: A system message sent apart from ``messages``, if any.
            tools: The tools the model is sent (``BaseTool``, schema dicts, functions).
            model: The chat model; when the policy has no ``max_input_tokens``, the window
                is read from its profile (once: the engine keeps it).
            force: Compact as hard as the policy allows, whatever the triggers say: clear
                every old result and summarize all but the most recent block. For a request
                the provider refused as too long.
            plan: The live plan (a todo list: ``{"content", "status"}`` dicts, as LangChain's
                ``TodoListMiddleware`` keeps it, or text): a summary puts it back after
                itself, from this state, never from its own text
                (:attr:`~ctxfs.ContextPolicy.pinning`).
            added_tokens: Tokens the request holds beyond ``messages``, ``system`` and
                ``tools`` that compaction cannot touch (what other middleware adds to this
                request only): counted in the request like the system message.

        Returns:
            The new history, events, tokens before and after, the target and whether it was
            reached (and if not, why).

        Raises:
            ValueError: The policy has no window and the model gives none; or a message's
                content is neither a string nor a list of strings and block dicts (one made
                with ``model_construct``, which skips LangChain's checks).
        """
        return self._drive(
            self._steps(
                messages, thread_id, self._request(system, tools, model, added_tokens), force, plan
            )
        )

    def compact_now(
        self,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
        added_tokens: int = 0,
    ) -> CompactionResult:
        """One compaction now, whatever the triggers say: what ``compact_conversation`` runs.

        The same escalation as :meth:`compact` (old inputs offloaded and results cleared at
        their own triggers), then a summary of everything outside the policy's protected
        recent window, archived first as always. Unlike ``compact(force=True)`` it keeps the
        recent window the policy sets.

        Raises:
            NothingToCompact: Fewer than :data:`~ctxfs._compaction._escalation.WORTH_COMPACTING`
                tokens lie outside the recent window (or the archive could not be written):
                nothing was changed.
            ValueError: The policy has no window and the model gives none.
        """
        request = self._request(system, tools, model, added_tokens)
        return summarized_or_refused(
            self._drive(self._steps(messages, thread_id, request, False, plan, now=True))
        )

    async def acompact_now(
        self,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
        added_tokens: int = 0,
    ) -> CompactionResult:
        """Async twin of :meth:`compact_now`."""
        request = await asyncio.to_thread(self._request, system, tools, model, added_tokens)
        steps = self._steps(messages, thread_id, request, False, plan, now=True)
        return summarized_or_refused(await self._adrive(steps))

    async def acompact(
        self,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        force: bool = False,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
        added_tokens: int = 0,
    ) -> CompactionResult:
        """Async twin of :meth:`compact`: the same result, without blocking the event loop.

        The engine's own work (workspace reads and writes, tokenizing) runs in worker threads
        (:func:`asyncio.to_thread`) under :attr:`lock`; the summary model is awaited
        (``ainvoke``) on the loop, with the lock released.
        """
        request = await asyncio.to_thread(self._request, system, tools, model, added_tokens)
        return await self._adrive(self._steps(messages, thread_id, request, force, plan))

    def _drive(self, steps: _Steps) -> CompactionResult:
        """Runs the steps to their result, asking the summary model when they need it."""
        step = self._advance(steps, None)
        while isinstance(step, str):
            step = self._advance(steps, self._summarize(step))
        return step

    async def _adrive(self, steps: _Steps) -> CompactionResult:
        """:meth:`_drive` for the event loop: engine work in worker threads, the model awaited."""
        step = await asyncio.to_thread(self._advance, steps, None)
        while isinstance(step, str):
            answer = await self._asummarize(step)
            step = await asyncio.to_thread(self._advance, steps, answer)
        return step

    def _advance(self, steps: _Steps, answer: ModelAnswer | None) -> str | CompactionResult:
        """Runs compaction, under the lock, to its next summary prompt or to its result.

        ``StopIteration`` is caught here, not by the caller: it cannot cross an asyncio future.
        """
        with self._lock:
            try:
                return next(steps) if answer is None else steps.send(answer)
            except StopIteration as done:
                return cast(CompactionResult, done.value)

    def _summarize(self, prompt: str) -> ModelAnswer:
        model = self._policy.summarization.model
        return call_model(model, prompt) if model is not None else (None, None)

    async def _asummarize(self, prompt: str) -> ModelAnswer:
        model = self._policy.summarization.model
        return await acall_model(model, prompt) if model is not None else (None, None)

    def window_from(self, model: BaseChatModel | None) -> ContextPolicy:
        """The policy with its window, read from ``model``'s profile if the policy has none.

        The window read is kept: later calls use it without a model.

        Raises:
            ValueError: Neither the policy nor the model's profile gives the window, or the
                policy's explicit settings do not fit the window the profile gives.
        """
        return self._resolve(model).policy

    def _resolve(self, model: BaseChatModel | None) -> Budget[ContextPolicy]:
        """The policy's numbers for the window, resolved the first time the window is known."""
        with self._lock:
            if self._budget is None:
                self._budget = budget_for_window(self._policy, model)
            return self._budget

    def count_request(
        self, *, system: BaseMessage | str | None = None, tools: Sequence[Tool] = ()
    ) -> int:
        """Tokens of a system message and tool schemas sent apart from the messages."""
        with self._lock:
            return self._parts.system_tokens(system) + self._parts.tool_tokens(tools)

    def _request(
        self,
        system: BaseMessage | str | None,
        tools: Sequence[Tool],
        model: BaseChatModel | None,
        added: int = 0,
    ) -> Fixed:
        with self._lock:
            fixed = self._parts.fixed(system, tools, added)  # a negative ``added`` first
            self._resolve(model)
            return fixed

    def _steps(
        self,
        messages: Sequence[BaseMessage],
        thread_id: str,
        fixed: Fixed,
        force: bool,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
        *,
        now: bool = False,
    ) -> _Steps:
        """One compaction (:func:`~ctxfs._compaction._escalation.escalate`), as hard as
        ``force`` or ``now`` asks; yields a prompt whenever the summary model must answer."""
        budget = self._resolve(None)
        budget = forced(budget) if force else requested(budget) if now else budget
        least = WORTH_COMPACTING if now else 0
        steps = escalate(
            self._means,
            messages,
            thread_id,
            budget,
            fixed,
            plan,
            at_least=least,
            asked=force or now,
        )
        try:
            return (yield from steps)
        except (TypeError, AttributeError) as exc:
            malformed = malformed_content(messages)
            if malformed is None:
                raise
            raise ValueError(malformed) from exc
