"""The context engine: applies a :class:`~ctxfs._policy._settings.ContextPolicy` to messages.

The engine owns the escalation and runs every step in one place, :meth:`ContextEngine.compact`
(one pass before each model call), plus result offload when a tool returns:

1. result offload (:meth:`~ContextEngine.offload_tool_result`), when a tool returns;
2. input offload of old large tool arguments, from its trigger;
3. clearing of old tool results to pointers, planned by :mod:`ctxfs._compaction._clearing`;
4. summarization, by :mod:`ctxfs._summary._step`, only if a summarization trigger still fires.

The lower modules decide from the values they are handed (policy, counter, archive) and
never call back into the engine. Every write goes through :mod:`ctxfs._workspace._saving`:
create-only and read back before a message is replaced, so a failed or corrupted write leaves
the content inline and reports an :class:`~ctxfs._events.OffloadFailed` event: nothing is
ever lost. What a pointer means is structured metadata on the message
(:mod:`ctxfs._pointers._pointer`).

One engine may be called from several threads (a sync ``ToolNode`` runs parallel tool calls in
a thread pool, async callers run engine work in worker threads, concurrent runs of one graph
share an engine), and its token counter's caches are not thread-safe, so every engine call
holds the engine's :attr:`ContextEngine.lock`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import ValidationError

from ctxfs._archive._transcripts import TranscriptArchive
from ctxfs._compaction._clearing import ResultToClear, plan_clearing, pointer_for
from ctxfs._compaction._openai import OpenAICompaction, OpenAIMessages
from ctxfs._compaction._prefix import shared_prefix
from ctxfs._compaction._request import RequestParts, Tool
from ctxfs._errors import WorkspaceError
from ctxfs._events import (
    ArchiveFailed,
    ArchiveRepaired,
    CompactionResult,
    ContextEvent,
    ContextOverBudget,
    OffloadFailed,
    OffloadResult,
    PrefixChanged,
    Summarized,
    ToolInputOffloaded,
    ToolResultCleared,
    ToolResultOffloaded,
    ToolResultOutcome,
)
from ctxfs._layout import input_path, result_path
from ctxfs._messages import (
    message_text,
    offloadable_text,
    saved_text,
    target_path_of,
    why_not_saved,
)
from ctxfs._pointers._pointer import (
    Pointer,
    content_shape,
    count_lines,
    input_pointers,
    point_input,
    point_result,
    render_input,
    render_result,
    result_pointer,
)
from ctxfs._policy._settings import (
    ContextPolicy,
    KeepRecent,
    KeepToolResults,
    SummaryTrigger,
    Threshold,
)
from ctxfs._summary._body import ModelAnswer, acall_model, call_model
from ctxfs._summary._step import summarize_steps
from ctxfs._tokens import TokenCounter, as_token_counter, count_exceeding
from ctxfs._workspace._saving import Unsaved, exists, read_saved, save_text
from ctxfs._workspace._workspace import Workspace
from ctxfs.tools import ToolFunction, tool_functions

__all__ = ["ContextEngine"]

_Steps = Generator[str, ModelAnswer, CompactionResult]


class ContextEngine:
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
        self._arg_counts: dict[str, int] = {}
        # per thread, the messages the last compaction returned (what the provider cached)
        self._sent: dict[str, list[BaseMessage]] = {}
        self._tools: dict[str, ToolFunction] | None = None
        self._openai = OpenAIMessages()

    @property
    def workspace(self) -> Workspace:
        """The workspace offloaded content goes to."""
        return self._workspace

    @property
    def policy(self) -> ContextPolicy:
        """The policy in force."""
        return self._policy

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

        Returns:
            The new history, events, tokens before and after, the target and whether it was
            reached (and if not, why).

        Raises:
            ValueError: The policy has no window and the model gives none.
        """
        steps = self._steps(messages, thread_id, self._request(system, tools, model), force, plan)
        step = self._advance(steps, None)
        while isinstance(step, str):
            step = self._advance(steps, self._summarize(step))
        return step

    def compact_now(
        self,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
    ) -> CompactionResult:
        """One compaction now, whatever the triggers say: what ``compact_conversation`` runs.

        The same escalation as :meth:`compact` (old inputs offloaded and results cleared at
        their own triggers), then a summary of everything outside the policy's protected
        recent window, archived first as always. Unlike ``compact(force=True)`` it keeps the
        recent window the policy sets.

        Raises:
            NothingToCompact: Fewer than :data:`WORTH_COMPACTING` tokens lie outside the
                recent window (or the archive could not be written): nothing was changed.
            ValueError: The policy has no window and the model gives none.
        """
        request = self._request(system, tools, model)
        steps = self._steps(messages, thread_id, request, False, plan, now=True)
        step = self._advance(steps, None)
        while isinstance(step, str):
            step = self._advance(steps, self._summarize(step))
        return _summarized_or_refused(step)

    async def acompact_now(
        self,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
    ) -> CompactionResult:
        """Async twin of :meth:`compact_now`."""
        request = await asyncio.to_thread(self._request, system, tools, model)
        steps = self._steps(messages, thread_id, request, False, plan, now=True)
        step = await asyncio.to_thread(self._advance, steps, None)
        while isinstance(step, str):
            answer = await self._asummarize(step)
            step = await asyncio.to_thread(self._advance, steps, answer)
        return _summarized_or_refused(step)

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
    ) -> CompactionResult:
        """Async twin of :meth:`compact`: the same result, without blocking the event loop.

        The engine's own work (workspace reads and writes, tokenizing: a 1 MB history costs
        about 230 ms) runs in worker threads (:func:`asyncio.to_thread`) under :attr:`lock`;
        the summary model is awaited (``ainvoke``) on the loop, with the lock released.
        """
        request = await asyncio.to_thread(self._request, system, tools, model)
        steps = self._steps(messages, thread_id, request, force, plan)
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
        with self._lock:
            if self._policy.max_input_tokens is not None:
                return self._policy
            profile = getattr(model, "profile", None) if model is not None else None
            window = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
            if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
                named = f" {type(model).__name__}" if model is not None else ""
                raise ValueError(
                    "ctxfs does not know the model's window: the policy has no "
                    f"max_input_tokens and the model{named} has no profile giving one; write "
                    "ContextPolicy(max_input_tokens=...) with the model's input window"
                )
            try:
                self._policy = self._policy.with_window(window)
            except ValidationError as exc:
                reasons = "; ".join(
                    str(error["msg"]).removeprefix("Value error, ") for error in exc.errors()
                )
                raise ValueError(
                    f"the policy does not fit the window of the model's profile ({window:,} "
                    f"tokens): {reasons}"
                ) from None
            return self._policy

    def count_request(
        self, *, system: BaseMessage | str | None = None, tools: Sequence[Tool] = ()
    ) -> int:
        """Tokens of a system message and tool schemas sent apart from the messages."""
        with self._lock:
            return self._parts.system_tokens(system) + self._parts.tool_tokens(tools)

    def _request(
        self, system: BaseMessage | str | None, tools: Sequence[Tool], model: BaseChatModel | None
    ) -> _Fixed:
        with self._lock:
            self.window_from(model)
            return _Fixed(self._parts.system_tokens(system), self._parts.tool_tokens(tools))

    def _steps(
        self,
        messages: Sequence[BaseMessage],
        thread_id: str,
        fixed: _Fixed,
        force: bool,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
        *,
        now: bool = False,
    ) -> _Steps:
        """The escalation, in order; yields a prompt whenever the summary model must answer."""
        policy = self.window_from(None)
        if force:
            policy = _forced(policy)
        elif now:
            policy = _requested(policy)
        extra = fixed.system + fixed.tools
        original = list(messages)
        # One compaction at the high-water mark; below it only explicit step triggers act.
        counted = self._counter.count_messages(original)
        compacting = counted + extra >= policy.high_water_tokens
        lossless = self._batch if compacting else self._lossless
        inputs, cleared = lossless(original, thread_id, policy, extra, counted)
        current, events = cleared.messages, [*inputs.events, *cleared.events]
        before, tokens = inputs.tokens_before, cleared.tokens_after
        # Summarize only when the lossless steps could not reach the low-water mark, and left
        # less than half the gap between the marks before the next compaction.
        short = compacting and tokens + extra > policy.summary_water_tokens
        if not (short and policy.summarization.enabled) and not policy.summary_fires(
            tokens + extra, len(current)
        ):
            quiet = (
                "summarization is off"
                if not policy.summarization.enabled
                else "no summarization trigger fired"
            )
            return self._result(
                thread_id, policy, original, current, events, before, tokens, fixed, quiet
            )
        archive = TranscriptArchive(self._workspace, thread_id, clock=self._clock)
        outcome = yield from summarize_steps(
            current,
            policy=policy,
            counter=self._counter,
            archive=archive,
            thread_id=thread_id,
            tokens=tokens,
            fixed=extra,
            plan=plan,
            notes=self._notes(policy),
            at_least=WORTH_COMPACTING if now else 0,
        )
        repaired = [ArchiveRepaired(reason=reason) for reason in outcome.repairs]
        if outcome.failed is not None:
            # Nothing is dropped: the input comes back as it was, with only the failure.
            event = ArchiveFailed(reason=f"{outcome.failed}; nothing was dropped")
            why = f"the transcript could not be archived ({outcome.failed}), so nothing was dropped"
            return self._result(
                thread_id,
                policy,
                original,
                original,
                [*repaired, event],
                before,
                before,
                fixed,
                why,
            )
        if outcome.event is None:
            events += repaired
            why_not = outcome.why_not
            return self._result(
                thread_id, policy, original, current, events, before, tokens, fixed, why_not
            )
        # The lossless steps once more on the summarized history, in the same batch, so that
        # compacting the result again changes nothing.
        again, final = lossless(outcome.messages, thread_id, policy, extra)
        events += [*repaired, outcome.event, *again.events, *final.events]
        after = final.tokens_after
        return self._result(
            thread_id,
            policy,
            original,
            final.messages,
            events,
            before,
            after,
            fixed,
            outcome.why_not,
        )

    def _notes(self, policy: ContextPolicy) -> tuple[str, str] | None:
        """The agent's notes file, ``(path, text)``, when the policy pins one and it is there."""
        path = policy.pinning.notes_path
        if path is None:
            return None
        try:
            return path, self._workspace.read_text(path)
        except (WorkspaceError, UnicodeDecodeError, ValueError):
            return None  # no notes yet, or not text: nothing to put back

    def _result(
        self,
        thread_id: str,
        policy: ContextPolicy,
        original: Sequence[BaseMessage],
        messages: list[BaseMessage],
        events: Sequence[ContextEvent],
        before: int,
        after: int,
        fixed: _Fixed,
        why_not: str | None,
    ) -> CompactionResult:
        target = policy.summary_target_tokens
        extra = fixed.system + fixed.tools
        reached = after + extra <= target
        shared = shared_prefix(original, messages)
        if shared < len(original):
            # What the provider holds is the part of the previous request this one still
            # starts with; messages appended since were never cached.
            previous = self._sent.get(thread_id)
            held = shared_prefix(previous, original) if previous is not None else len(original)
            given_up = self._counter.count_messages(original[shared:held]) if held > shared else 0
            events = [*events, PrefixChanged(first_changed=shared, tokens_given_up=given_up)]
        self._sent.pop(thread_id, None)
        if len(self._sent) >= _SENT_THREADS:
            del self._sent[next(iter(self._sent))]
        self._sent[thread_id] = messages
        request, limit = after + extra, policy.request_limit_tokens
        if request > limit:
            reason = why_not or _why_not_compacted(policy)
            if extra > limit:  # nothing compaction does can help: say so first
                reason = (
                    f"the system prompt and tool schemas alone are {extra:,} tokens (system "
                    f"{fixed.system:,}, tools {fixed.tools:,}), over the limit {limit:,}"
                )
            over = ContextOverBudget(
                tokens=request,
                limit=limit,
                system=fixed.system,
                tools=fixed.tools,
                messages=after,
                reason=reason,
            )
            events = [*events, over]
        return CompactionResult(
            messages=messages,
            events=tuple(events),
            tokens_before=before,
            tokens_after=after,
            fixed_tokens=extra,
            target=target,
            reached_target=reached,
            reason=None if reached else why_not,
        )

    # -- OpenAI-style dicts ----------------------------------------------------------------

    def compact_openai(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        force: bool = False,
    ) -> OpenAICompaction:
        """:meth:`compact` for a history kept as OpenAI-style dicts: dicts in, dicts out.

        Keep the returned dicts as the history and send them as they are: they hold no key a
        provider would refuse. A summary or pointer ctxfs returned is recognised when it comes
        back (its metadata is kept by the engine, and a summary is also found in the thread's
        archive by a new process), so the next compaction continues the transcript chain
        instead of summarizing the summary. Dicts the compaction leaves alone are returned as
        the same objects, byte for byte what the provider cached.

        Args:
            messages: The history, ``{"role": ..., "content": ...}`` dicts (``tool_calls``
                and ``tool_call_id`` as OpenAI writes them).
            thread_id: The conversation; names the folders written.
            system: A system message sent apart from ``messages``, if any.
            tools: The tools the model is sent (schema dicts as sent, functions, tools).
            model: The chat model, for its window when the policy has none.
            force: As for :meth:`compact`.

        Raises:
            TypeError: An item is not a message dict.
            ValueError: A dict that is not a chat message, or no window is known.
        """
        converted, origin = self._openai.inbound(
            messages, thread_id=thread_id, last_summary=lambda: self._last_summary(thread_id)
        )
        result = self.compact(
            converted, thread_id=thread_id, system=system, tools=tools, model=model, force=force
        )
        dicts = self._openai.outbound(result.messages, origin, thread_id=thread_id)
        return OpenAICompaction(messages=dicts, result=result)

    async def acompact_openai(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        force: bool = False,
    ) -> OpenAICompaction:
        """Async twin of :meth:`compact_openai`."""
        converted, origin = await asyncio.to_thread(
            self._openai.inbound,
            messages,
            thread_id=thread_id,
            last_summary=lambda: self._last_summary(thread_id),
        )
        result = await self.acompact(
            converted, thread_id=thread_id, system=system, tools=tools, model=model, force=force
        )
        dicts = self._openai.outbound(result.messages, origin, thread_id=thread_id)
        return OpenAICompaction(messages=dicts, result=result)

    def offload_openai_result(
        self, message: Mapping[str, Any], *, thread_id: str, name: str | None = None
    ) -> dict[str, Any]:
        """:meth:`offload_tool_result` for an OpenAI-style ``{"role": "tool"}`` dict.

        Args:
            message: The tool result: ``role`` ``"tool"``, ``tool_call_id`` and ``content``.
            thread_id: The conversation it belongs to.
            name: The tool's name (OpenAI's dict does not carry it; else the dict's own
                ``name``, as some clients write it): exempt tools are never offloaded, and
                the saved file is named after it.

        Returns:
            The dict to append to the history: ``message`` itself when it stays inline,
            else a pointer the next :meth:`compact_openai` recognises.

        Raises:
            TypeError: ``message`` is not a tool result dict.
        """
        if not isinstance(message, Mapping) or message.get("role") != "tool":
            raise TypeError('offload_openai_result takes a {"role": "tool", ...} message dict')
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise TypeError("a tool result dict needs its tool_call_id (a non-empty string)")
        if name is None and isinstance(message.get("name"), str):
            name = message["name"]
        result = ToolMessage(message.get("content") or "", tool_call_id=call_id, name=name)
        offloaded = self.offload_tool_result(result, thread_id=thread_id)
        if offloaded is result:
            return message if isinstance(message, dict) else dict(message)
        return self._openai.remember(offloaded, thread_id=thread_id)

    def _last_summary(self, thread_id: str) -> BaseMessage | None:
        """The summary the thread's latest archived segment ended with, if it can be read."""
        with self._lock:
            archive = TranscriptArchive(self._workspace, thread_id, clock=self._clock)
            try:
                segments = archive.recent()
            except WorkspaceError:
                return None  # the summary is then read as text: archived again, not lost
            return archive.summary_of(segments[-1]) if segments else None

    # -- step 1: tool results -------------------------------------------------------------

    def offload_tool_result(self, message: ToolMessage, *, thread_id: str) -> ToolMessage:
        """Returns ``message``, or a pointer to its saved content if it is too large.

        A result is offloaded when its text is over the policy's threshold, its tool is not
        exempt (recovery tools page instead), it is not already a pointer ctxfs made, and the
        pointer would cost fewer tokens than the result itself (just over a small threshold,
        a result can be no larger than the pointer's preview of it). The returned message
        keeps the id, ``tool_call_id``, ``name``, ``status`` and ``artifact``. On a failed
        write the input is returned unchanged.

        Args:
            message: The tool's result.
            thread_id: The conversation it belongs to; names the folder it is saved in.
        """
        return self.offload_tool_result_detailed(message, thread_id=thread_id).message

    def offload_tool_result_detailed(
        self, message: ToolMessage, *, thread_id: str
    ) -> ToolResultOutcome:
        """Like :meth:`offload_tool_result`, and also says what happened.

        Returns:
            The message to keep and a :class:`~ctxfs._events.ToolResultOffloaded` or
            :class:`~ctxfs._events.OffloadFailed` event (``None`` when nothing was tried, or
            when the pointer would not have been smaller than the result).
        """
        with self._lock:
            return self._offload_result(message, thread_id)

    def _offload_result(self, message: ToolMessage, thread_id: str) -> ToolResultOutcome:
        policy = self.window_from(None)
        settings = policy.tool_results
        if not settings.enabled or message.name in settings.exempt_tools:
            return ToolResultOutcome(message=message)
        if result_pointer(message) is not None:
            return ToolResultOutcome(message=message)
        text = saved_text(message.content)
        threshold = policy.result_threshold_tokens
        tokens = count_exceeding(self._counter, text or message_text(message), threshold)
        if tokens is None:
            return ToolResultOutcome(message=message)
        call_id = message.tool_call_id
        if text is None:  # over the threshold, yet it cannot be saved as it is: say why
            why = why_not_saved(message.content)
            reason = f"the result ({tokens:,} tokens) stays inline: {why}"
            return ToolResultOutcome(
                message=message, event=OffloadFailed(tool_call_id=call_id, reason=reason)
            )

        def pointer_to(path: str) -> tuple[Pointer, str, int]:
            pointer = Pointer(
                kind="result",
                path=path,
                lines=count_lines(text),
                chars=len(text),
                tokens=tokens,
                tool_call_id=call_id,
                shape=content_shape(message.content),
            )
            rendered = render_result(
                pointer,
                text,
                preview_lines=settings.preview_lines,
                preview_line_chars=settings.preview_line_chars,
            )
            return pointer, rendered, self._counter.count_text(rendered)

        # A pointer never costs more than what it replaces. It is sized before anything is
        # written (the preview is cheap to build), and again if a name collision made its
        # path longer; a file already written then stays, unreferenced but harmless.
        first = result_path(thread_id, call_id, text)
        pointer, rendered, pointer_tokens = pointer_to(first)
        if pointer_tokens >= tokens:
            return ToolResultOutcome(message=message)
        try:
            path = save_text(self._workspace, first, text)
        except Unsaved as failure:
            event = OffloadFailed(tool_call_id=call_id, reason=failure.reason, path=failure.path)
            return ToolResultOutcome(message=message, event=event)
        if path != first:
            pointer, rendered, pointer_tokens = pointer_to(path)
            if pointer_tokens >= tokens:
                return ToolResultOutcome(message=message)
        offloaded = ToolResultOffloaded(
            tool_call_id=call_id,
            tool_name=message.name,
            path=path,
            lines=pointer.lines,
            chars=pointer.chars,
            tokens=tokens,
            tokens_after=pointer_tokens,
        )
        return ToolResultOutcome(message=point_result(message, pointer, rendered), event=offloaded)

    # -- step 2: tool inputs --------------------------------------------------------------

    def offload_tool_inputs(
        self, messages: Sequence[BaseMessage], *, thread_id: str
    ) -> OffloadResult:
        """Saves large arguments of old tool calls to files once the history is too long.

        Nothing happens below :attr:`ContextPolicy.input_trigger_tokens`. At or above it,
        every configured string argument (by default ``write_file.content``,
        ``edit_file.old_string/new_string``) of at least ``min_chars`` characters, in AI
        messages older than the ``keep_messages`` most recent, is saved byte-exact and
        replaced by a pointer naming the saved copy and the file the tool wrote, unless that
        pointer would cost as many tokens as the argument or more. Pointers already in place
        are left alone, so running this twice changes nothing. Messages are never mutated;
        replaced ones keep their id.

        Args:
            messages: The conversation history.
            thread_id: The conversation it belongs to; names the folder inputs are saved in.

        Returns:
            The new list, one event per argument moved (or kept inline after a failure), and
            the token counts before and after.
        """
        with self._lock:
            return self._offload_inputs(messages, thread_id, self.window_from(None), 0)

    def _batch(
        self,
        messages: list[BaseMessage],
        thread_id: str,
        policy: ContextPolicy,
        extra: int,
        counted: int | None = None,
    ) -> tuple[OffloadResult, OffloadResult]:
        """A compaction's lossless steps: old inputs and old results, oldest first, down to
        the low-water mark, applied at once so the prefix changes once.

        Every candidate is priced first (what its pointer frees); the batch then takes every
        candidate before the first message at which the running total reaches the low-water
        mark, or all of them when it never does. ``counted`` is the messages' tokens if the
        caller has just counted them.
        """
        before = self._counter.count_messages(messages) if counted is None else counted
        unchanged = OffloadResult(messages=messages, tokens_before=before, tokens_after=before)
        need = before + extra - policy.low_water_tokens
        if need <= 0:
            return unchanged, unchanged
        frees: dict[int, int] = {}
        if policy.tool_inputs.enabled:
            for i, freed in self._input_frees(messages, thread_id, policy):
                frees[i] = frees.get(i, 0) + freed
        results: tuple[ResultToClear, ...] = ()
        if policy.clearing.enabled:
            plan = plan_clearing(
                messages,
                policy=policy,
                counter=self._counter,
                thread_id=thread_id,
                tokens=before + extra,
                go=True,
            )
            results = plan.results
            for item in results:
                frees[item.index] = frees.get(item.index, 0) + item.tokens - item.estimate
        if not frees:
            return unchanged, unchanged
        upto, total = len(messages), 0
        for i in sorted(frees):
            total += frees[i]
            if total >= need:
                upto = i + 1
                break
        inputs = self._offload_inputs(messages, thread_id, policy, extra, go=True, upto=upto)
        chosen = tuple(item for item in results if item.index < upto)
        cleared = self._apply_clearing(inputs.messages, thread_id, chosen)
        return inputs, cleared

    def _lossless(
        self,
        messages: list[BaseMessage],
        thread_id: str,
        policy: ContextPolicy,
        extra: int,
        counted: int | None = None,
    ) -> tuple[OffloadResult, OffloadResult]:
        """Below the high-water mark: the steps whose explicit trigger is reached, as one
        batch, so the prefix changes once.

        With clearing on, the batch goes when what it frees together is worth the cache
        break (see :func:`ctxfs._compaction._clearing.batch_goes`): inputs never move on
        their own, a call after the results. ``counted`` is the messages' tokens if the caller
        has just counted them.
        """
        if not policy.clearing.enabled:
            inputs = self._offload_inputs(messages, thread_id, policy, extra)
            return inputs, self._clear_results(inputs.messages, thread_id, policy, extra)
        before = self._counter.count_messages(messages) if counted is None else counted
        unchanged = OffloadResult(messages=messages, tokens_before=before, tokens_after=before)
        if before + extra < policy.clearing_trigger_tokens:
            return unchanged, unchanged
        frees = 0
        if policy.tool_inputs.enabled and before + extra >= policy.input_trigger_tokens:
            frees = sum(freed for _, freed in self._input_frees(messages, thread_id, policy))
        plan = plan_clearing(
            messages,
            policy=policy,
            counter=self._counter,
            thread_id=thread_id,
            tokens=before + extra,
            also_frees=frees,
        )
        if not plan.go:
            return unchanged, unchanged
        inputs = self._offload_inputs(messages, thread_id, policy, extra, go=True)
        cleared = self._clear_results(inputs.messages, thread_id, policy, extra, go=True)
        return inputs, cleared

    def _input_frees(
        self, messages: Sequence[BaseMessage], thread_id: str, policy: ContextPolicy
    ) -> Iterator[tuple[int, int]]:
        """What offloading each old input would free: (message index, tokens), oldest first."""
        for i in range(max(0, len(messages) - policy.tool_inputs.keep_messages)):
            message = messages[i]
            if isinstance(message, AIMessage) and message.tool_calls:
                held = input_pointers(message)
                for index, call, arg, value in _input_candidates(message, policy):
                    if (index, arg) not in held:
                        _, _, freed = self._input_pointer(call, index, arg, value, thread_id)
                        if freed > 0:
                            yield i, freed

    def _input_pointer(
        self, call: Mapping[str, Any], index: int, arg: str, value: str, thread_id: str
    ) -> tuple[Pointer, str, int]:
        """The pointer that would replace an argument, its text, and the tokens it frees."""
        call_id = call["id"] or ""
        tokens = self._arg_tokens(value)
        pointer = Pointer(
            kind="input",
            path=input_path(thread_id, call_id, arg, value),
            lines=count_lines(value),
            chars=len(value),
            tokens=tokens,
            tool_call_id=call_id,
            arg=arg,
            call_index=index,
            target=target_path_of(call["args"]),
        )
        rendered = render_input(pointer, tool_name=call["name"])
        return pointer, rendered, tokens - self._counter.count_text(rendered)

    def _arg_tokens(self, value: str) -> int:
        # An old argument is looked at on every call until its batch goes: count it once.
        tokens = self._arg_counts.get(value)
        if tokens is None:
            if len(self._arg_counts) >= 4_096:
                self._arg_counts.clear()
            tokens = self._arg_counts[value] = self._counter.count_text(value)
        return tokens

    def _offload_inputs(
        self,
        messages: Sequence[BaseMessage],
        thread_id: str,
        policy: ContextPolicy,
        extra: int,
        *,
        go: bool = False,
        upto: int | None = None,
    ) -> OffloadResult:
        before = self._counter.count_messages(messages)
        settings = policy.tool_inputs
        out = list(messages)
        if not settings.enabled or (not go and before + extra < policy.input_trigger_tokens):
            return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
        events: list[ContextEvent] = []
        end = max(0, len(out) - settings.keep_messages)
        for i in range(end if upto is None else min(end, upto)):
            message = out[i]
            if isinstance(message, AIMessage) and message.tool_calls:
                out[i] = self._offload_call_args(message, thread_id, policy, events)
        after = self._counter.count_messages(out)
        return OffloadResult(
            messages=out, events=tuple(events), tokens_before=before, tokens_after=after
        )

    def _offload_call_args(
        self,
        message: AIMessage,
        thread_id: str,
        policy: ContextPolicy,
        events: list[ContextEvent],
    ) -> AIMessage:
        held = input_pointers(message)
        for index, call, arg, value in _input_candidates(message, policy):
            if (index, arg) in held:
                continue  # pointers stay
            call_id = call["id"] or ""
            tokens = self._arg_tokens(value)
            target = target_path_of(call["args"])
            pointer, rendered, freed = self._input_pointer(call, index, arg, value, thread_id)
            # As for results: a pointer never costs more than the argument it replaces.
            if freed <= 0:
                continue
            try:
                path = save_text(self._workspace, pointer.path, value)
            except Unsaved as failure:
                events.append(
                    OffloadFailed(
                        tool_call_id=call_id, reason=failure.reason, path=failure.path, arg=arg
                    )
                )
                continue
            if path != pointer.path:
                pointer = replace(pointer, path=path)
                rendered = render_input(pointer, tool_name=call["name"])
                if self._counter.count_text(rendered) >= tokens:
                    continue
            message = point_input(message, pointer, rendered)
            held = input_pointers(message)
            events.append(
                ToolInputOffloaded(
                    tool_call_id=call_id,
                    tool_name=call["name"],
                    arg=arg,
                    path=path,
                    target_path=target,
                    chars=len(value),
                    tokens=tokens,
                )
            )
        return message

    # -- step 3: clearing old tool results ------------------------------------------------

    def clear_tool_results(
        self, messages: Sequence[BaseMessage], *, thread_id: str
    ) -> OffloadResult:
        """Replaces old tool results by short pointers to their saved full text.

        Nothing happens below :attr:`ContextPolicy.clearing_trigger_tokens`. At or above it,
        every tool result outside the kept window that is large enough and not exempt is
        cleared, in one batch, if the batch frees at least ``clear_at_least`` tokens or keeps
        a summary away; otherwise nothing changes yet. A result is saved (create-only, read
        back) before its message is replaced; an offload pointer is cleared to a pointer to
        the same file, and a recovery tool's view of saved content to a pointer to what it
        showed, without a new file. Cleared results are never touched again, so running this
        twice changes nothing. See :mod:`ctxfs._compaction._clearing` for the details and the
        prompt-cache behaviour. Messages are never mutated; replaced ones keep their id,
        ``tool_call_id``, ``name``, ``status`` and ``artifact``.

        Args:
            messages: The conversation history.
            thread_id: The conversation; names the folder results are saved in.

        Returns:
            The new list, one :class:`~ctxfs._events.ToolResultCleared` per result cleared (or
            :class:`~ctxfs._events.OffloadFailed` per result kept inline after a failure), and
            the token counts before and after.
        """
        with self._lock:
            return self._clear_results(messages, thread_id, self.window_from(None), 0)

    def _clear_results(
        self,
        messages: Sequence[BaseMessage],
        thread_id: str,
        policy: ContextPolicy,
        extra: int,
        *,
        go: bool = False,
    ) -> OffloadResult:
        counter = self._counter
        before = counter.count_messages(messages)
        out = list(messages)
        below = before + extra < policy.clearing_trigger_tokens
        if not policy.clearing.enabled or (below and not go):
            return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
        plan = plan_clearing(
            out, policy=policy, counter=counter, thread_id=thread_id, tokens=before + extra, go=go
        )
        if not plan.go:
            return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
        return self._apply_clearing(out, thread_id, plan.results)

    def _apply_clearing(
        self, messages: Sequence[BaseMessage], thread_id: str, results: Sequence[ResultToClear]
    ) -> OffloadResult:
        """Saves and clears the planned results (each saved and verified before it goes)."""
        counter = self._counter
        before = counter.count_messages(messages)
        out = list(messages)
        events: list[ContextEvent] = []
        for item in results:
            message = out[item.index]
            assert isinstance(message, ToolMessage)
            try:
                pointer, rendered = self._clear_one(message, item, thread_id)
            except Unsaved as failure:
                events.append(
                    OffloadFailed(
                        tool_call_id=message.tool_call_id, reason=failure.reason, path=failure.path
                    )
                )
                continue
            cleared = point_result(message, pointer, rendered)
            out[item.index] = cleared
            events.append(
                ToolResultCleared(
                    tool_call_id=message.tool_call_id,
                    tool_name=message.name,
                    path=pointer.path,
                    kind="reread" if pointer.kind == "reread" else _cleared_kind(item),
                    tokens=item.tokens,
                    tokens_after=counter.count_message(cleared),
                )
            )
        after = counter.count_messages(out)
        return OffloadResult(
            messages=out, events=tuple(events), tokens_before=before, tokens_after=after
        )

    def _clear_one(
        self, message: ToolMessage, item: ResultToClear, thread_id: str
    ) -> tuple[Pointer, str]:
        """Returns the pointer for one result and its text, after the I/O it needs."""
        call_id = message.tool_call_id
        # A re-read stands for repeating its call, so it is one only if the repeat gives back
        # exactly what the model saw (the same tool page size, a single saved file that is
        # never rewritten); otherwise it is saved like any other result.
        if item.kind == "reread" and self._repeats(item):
            tokens = self._counter.count_text(item.text)
            shape = content_shape(message.content)
            return pointer_for(
                item, item.path, item.text, tokens, tool_call_id=call_id, shape=shape
            )
        if item.kind == "offloaded":
            assert item.offloaded is not None
            full = self._read_offloaded(item.offloaded)
            tokens = self._counter.count_text(full)
            return pointer_for(
                item, item.path, full, tokens, tool_call_id=call_id, shape=item.offloaded.shape
            )
        first = result_path(thread_id, call_id, item.text)
        path = save_text(self._workspace, first, item.text)
        tokens = self._counter.count_text(item.text)
        shape = content_shape(message.content)
        saved = replace(item, kind="saved")
        return pointer_for(saved, path, item.text, tokens, tool_call_id=call_id, shape=shape)

    def _repeats(self, item: ResultToClear) -> bool:
        """Whether repeating a re-read's call now shows exactly the text the model saw."""
        call = item.repeat or {}
        name, args = call.get("name"), call.get("args")
        if not isinstance(name, str) or not isinstance(args, Mapping):
            return False
        try:
            if not exists(self._workspace, item.path):
                return False
            if self._workspace.info(item.path).type != "file":
                return False  # a folder's view changes as files are saved in it
        except _IO_ERRORS:
            return False
        if self._tools is None:  # the recovery tools, as resolution runs them
            self._tools = {f.name: f for f in tool_functions(self._workspace)}
        function = self._tools.get(name)
        return function is not None and function(**dict(args)) == item.text

    def _read_offloaded(self, pointer: Pointer) -> str:
        """The full text an offload pointer names, checked against the size it gave."""
        data = read_saved(self._workspace, pointer.path)
        try:
            full = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Unsaved(f"{pointer.path} is not UTF-8 text: {exc}", pointer.path) from exc
        if (pointer.lines, pointer.chars) != (count_lines(full), len(full)):
            raise Unsaved(
                f"{pointer.path} does not hold the result its pointer describes", pointer.path
            )
        return full


_SENT_THREADS = 256
"""The most threads whose last request an engine remembers (the oldest is forgotten)."""


def _cleared_kind(item: ResultToClear) -> Literal["saved", "offloaded"]:
    return "offloaded" if item.kind == "offloaded" else "saved"


@dataclass(frozen=True, slots=True)
class _Fixed:
    """Tokens of the parts of a request given apart from the messages."""

    system: int = 0
    tools: int = 0


WORTH_COMPACTING = 1_000
"""The fewest tokens :meth:`ContextEngine.compact_now` summarizes: below it a summary would
save about what it costs to write and to send."""


class NothingToCompact(ValueError):
    """A compaction asked for now found nothing worth compacting; nothing was changed."""


def _summarized_or_refused(result: CompactionResult) -> CompactionResult:
    if any(isinstance(event, Summarized) for event in result.events):
        return result
    why = result.reason or "no summary was made"
    raise NothingToCompact(f"nothing worth compacting now: {why}")


def _requested(policy: ContextPolicy) -> ContextPolicy:
    """The policy with its summary trigger fired: a summary now, keeping the recent window."""
    summarization = policy.summarization.model_copy(update={"trigger": SummaryTrigger(tokens=1)})
    return policy.model_copy(update={"summarization": summarization})


def _forced(policy: ContextPolicy) -> ContextPolicy:
    """The policy at its hardest: every step fires, only the latest block is kept."""
    clearing = policy.clearing.model_copy(
        update={
            "trigger": Threshold(tokens=1),
            "keep": KeepToolResults(results=0),
            "clear_at_least": Threshold(tokens=1),
        }
    )
    summarization = policy.summarization.model_copy(
        update={"trigger": SummaryTrigger(tokens=1), "keep": KeepRecent(messages=1)}
    )
    inputs = policy.tool_inputs.model_copy(
        update={"trigger": Threshold(tokens=1), "keep_messages": 0}
    )
    return policy.model_copy(
        update={
            "clearing": clearing,
            "summarization": summarization,
            "tool_inputs": inputs,
            "high_water": Threshold(tokens=1),
            "low_water": Threshold(tokens=1),
        }
    )


def _why_not_compacted(policy: ContextPolicy) -> str:
    if not policy.summarization.enabled:
        return "summarization is off, and the lossless steps could not free enough"
    return "compaction could not free enough"


def _input_candidates(
    message: AIMessage, policy: ContextPolicy
) -> Iterator[tuple[int, Mapping[str, Any], str, str]]:
    """The arguments of a message's calls that input offload may move: (call index, call,
    argument, value). Any string argument of any tool, unless ``args`` names the tool."""
    settings = policy.tool_inputs
    for index, call in enumerate(message.tool_calls):
        names = settings.args.get(call["name"])
        for arg, value in call["args"].items():
            if names is not None and arg not in names:
                continue
            if not isinstance(value, str) or len(value) < settings.min_chars:
                continue
            if offloadable_text(value) is None:
                continue  # NUL-bearing text could not be read back
            yield index, call, arg, value


_IO_ERRORS = (WorkspaceError, OSError)
