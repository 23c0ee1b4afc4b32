"""The context engine: applies a :class:`~ctxfs.policy.ContextPolicy` to messages.

Pure decisions (names, pointer texts, message surgery) live in :mod:`ctxfs.offload`; this
module orchestrates them and does the workspace I/O. Every write is create-only and read back
before a message is replaced, so a failed or corrupted write leaves the content inline and
reports an :class:`~ctxfs.events.OffloadFailed` event: nothing is ever lost.

Clearing old tool results (step 3) is decided in :mod:`ctxfs.clearing` and done here.
Summarization (step 4) lives in :mod:`ctxfs.compaction`; :meth:`ContextEngine.compact` and
:meth:`ContextEngine.acompact` are thin shells around it that differ only in how they call the
summary model and where they run the engine's own work.

One engine may be called from several threads (a sync ``ToolNode`` runs parallel tool calls in
a thread pool, async callers run engine work in worker threads, concurrent runs of one graph
share an engine), and its token counter's caches are not thread-safe, so every engine call
holds the engine's :attr:`ContextEngine.lock`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator, Sequence
from datetime import datetime
from functools import partial
from typing import cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs.clearing import ResultToClear, plan_clearing
from ctxfs.compaction import ModelAnswer, compaction_steps
from ctxfs.errors import PathExistsError, WorkspaceError
from ctxfs.events import (
    CompactionResult,
    ContextEvent,
    OffloadFailed,
    OffloadResult,
    ToolInputOffloaded,
    ToolResultCleared,
    ToolResultOffloaded,
    ToolResultOutcome,
)
from ctxfs.offload import (
    candidate_paths,
    cleared_pointer,
    count_lines,
    input_path,
    input_pointer,
    is_pointer,
    offloadable_text,
    replace_tool_arg,
    reread_pointer,
    result_path,
    result_pointer,
    result_pointer_stats,
    target_path_of,
)
from ctxfs.policy import ContextPolicy
from ctxfs.summary import acall_model, call_model
from ctxfs.tokens import TokenCounter, as_token_counter, count_exceeding
from ctxfs.workspace import Workspace

__all__ = ["ContextEngine"]

_WRITE_ERRORS = (WorkspaceError, OSError, UnicodeError)
_Steps = Generator[str, ModelAnswer, CompactionResult]


class _Unsaved(Exception):
    """Internal: the text could not be saved; carries the reason and the path tried."""

    def __init__(self, reason: str, path: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


class ContextEngine:
    """Keeps a conversation inside its window by moving large content into a workspace.

    Example:
        >>> from ctxfs import ContextEngine, ContextPolicy, Workspace
        >>> policy = ContextPolicy(max_input_tokens=200_000)
        >>> engine = ContextEngine(Workspace("memory://demo"), policy)

    Args:
        workspace: Where offloaded content is written (the SDK's own, writable view).
        policy: What to offload and when.
        token_counter: A :class:`~ctxfs.tokens.TokenCounter`, a ``str -> int`` callable, or
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

    def compact(self, messages: Sequence[BaseMessage], *, thread_id: str) -> CompactionResult:
        """Keeps a history inside the window: offload old inputs, clear old results, summarize.

        Call it before each model call. Below every trigger nothing changes. Once the tool
        input trigger is reached, old tool inputs are offloaded; with clearing on, once its
        trigger is reached old tool results are cleared to pointers (see
        :meth:`clear_tool_results`); if a summarization trigger
        still fires, the oldest messages outside the protected recent window are archived to
        ``/transcripts/<thread>/`` (written and verified first) and replaced by one summary
        message right after the system prompt. The system prompt stays first; an AI message
        and its tool results are never separated; a previous summary is folded into the new
        one. If the archive cannot be written, the input is returned unchanged with an
        :class:`~ctxfs.events.ArchiveFailed` event. Compacting the result again changes
        nothing; the input is never mutated.

        Args:
            messages: The conversation history.
            thread_id: The conversation; names the folders written.

        Returns:
            The new history, events, tokens before and after, the target and whether it was
            reached (and if not, why).
        """
        steps = compaction_steps(self, messages, thread_id)
        step = self._advance(steps, None)
        while isinstance(step, str):
            step = self._advance(steps, self._summarize(step))
        return step

    async def acompact(
        self, messages: Sequence[BaseMessage], *, thread_id: str
    ) -> CompactionResult:
        """Async twin of :meth:`compact`: the same result, without blocking the event loop.

        The engine's own work (workspace reads and writes, tokenizing: a 1 MB history costs
        about 230 ms) runs in worker threads (:func:`asyncio.to_thread`) under :attr:`lock`;
        the summary model is awaited (``ainvoke``) on the loop, with the lock released.
        """
        steps = compaction_steps(self, messages, thread_id)
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

    # -- step 1: tool results -------------------------------------------------------------

    def offload_tool_result(self, message: ToolMessage, *, thread_id: str) -> ToolMessage:
        """Returns ``message``, or a pointer to its saved content if it is too large.

        A result is offloaded when its text is over the policy's threshold, its tool is not
        exempt (recovery tools page instead), it is not already a ctxfs pointer, and the
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
            The message to keep and a :class:`~ctxfs.events.ToolResultOffloaded` or
            :class:`~ctxfs.events.OffloadFailed` event (``None`` when nothing was tried, or
            when the pointer would not have been smaller than the result).
        """
        with self._lock:
            return self._offload_result(message, thread_id)

    def _offload_result(self, message: ToolMessage, thread_id: str) -> ToolResultOutcome:
        settings = self._policy.tool_results
        if not settings.enabled or message.name in settings.exempt_tools:
            return ToolResultOutcome(message=message)
        text = offloadable_text(message.content)
        if text is None:
            return ToolResultOutcome(message=message)
        threshold = self._policy.result_threshold_tokens
        tokens = count_exceeding(self._counter, text, threshold)
        if tokens is None or is_pointer(text):
            return ToolResultOutcome(message=message)
        call_id = message.tool_call_id

        pointer_to = partial(
            result_pointer,
            text=text,
            tokens=tokens,
            preview_lines=settings.preview_lines,
            preview_line_chars=settings.preview_line_chars,
        )
        # A pointer never costs more than what it replaces. It is sized before anything is
        # written (the preview is cheap to build), and again if a name collision made its
        # path longer; a file already written then stays, unreferenced but harmless.
        first = result_path(thread_id, call_id, text)
        pointer = pointer_to(first)
        pointer_tokens = self._counter.count_text(pointer)
        if pointer_tokens >= tokens:
            return ToolResultOutcome(message=message)
        try:
            path = self._save(first, text)
        except _Unsaved as failure:
            event = OffloadFailed(tool_call_id=call_id, reason=failure.reason, path=failure.path)
            return ToolResultOutcome(message=message, event=event)
        if path != first:
            pointer = pointer_to(path)
            pointer_tokens = self._counter.count_text(pointer)
            if pointer_tokens >= tokens:
                return ToolResultOutcome(message=message)
        offloaded = ToolResultOffloaded(
            tool_call_id=call_id,
            tool_name=message.name,
            path=path,
            lines=count_lines(text),
            chars=len(text),
            tokens=tokens,
            tokens_after=pointer_tokens,
        )
        return ToolResultOutcome(
            message=message.model_copy(update={"content": pointer}), event=offloaded
        )

    # -- step 2: tool inputs --------------------------------------------------------------

    def offload_tool_inputs(
        self, messages: Sequence[BaseMessage], *, thread_id: str
    ) -> OffloadResult:
        """Saves large arguments of old tool calls to files once the history is too long.

        Nothing happens below the policy's trigger. At or above it, every configured string
        argument (by default ``write_file.content``, ``edit_file.old_string/new_string``) of
        at least ``min_chars`` characters, in AI messages older than the ``keep_messages``
        most recent, is saved byte-exact and replaced by a pointer naming the saved copy and
        the file the tool wrote, unless that pointer would cost as many tokens as the
        argument or more. Pointers already in place are left alone, so running this
        twice changes nothing. Messages are never mutated; replaced ones keep their id.

        Args:
            messages: The conversation history.
            thread_id: The conversation it belongs to; names the folder inputs are saved in.

        Returns:
            The new list, one event per argument moved (or kept inline after a failure), and
            the token counts before and after.
        """
        with self._lock:
            return self._offload_inputs(messages, thread_id)

    def _offload_inputs(self, messages: Sequence[BaseMessage], thread_id: str) -> OffloadResult:
        before = self._counter.count_messages(messages)
        settings = self._policy.tool_inputs
        out = list(messages)
        if not settings.enabled or before < self._policy.input_trigger_tokens:
            return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
        events: list[ContextEvent] = []
        for i in range(max(0, len(out) - settings.keep_messages)):
            message = out[i]
            if isinstance(message, AIMessage) and message.tool_calls:
                out[i] = self._offload_call_args(message, thread_id, events)
        after = self._counter.count_messages(out)
        return OffloadResult(
            messages=out, events=tuple(events), tokens_before=before, tokens_after=after
        )

    def _offload_call_args(
        self, message: AIMessage, thread_id: str, events: list[ContextEvent]
    ) -> AIMessage:
        settings = self._policy.tool_inputs
        for index, call in enumerate(message.tool_calls):
            for arg in settings.args.get(call["name"], ()):
                value = call["args"].get(arg)
                if not isinstance(value, str) or len(value) < settings.min_chars:
                    continue
                if offloadable_text(value) is None or is_pointer(value):
                    continue  # NUL-bearing text could not be read back; pointers stay
                call_id = call["id"] or ""
                tokens = self._counter.count_text(value)
                target = target_path_of(call["args"])

                pointer_to = partial(
                    input_pointer,
                    tool_name=call["name"],
                    arg=arg,
                    chars=len(value),
                    tokens=tokens,
                    target_path=target,
                )
                # As for results: a pointer never costs more than the argument it replaces.
                first = input_path(thread_id, call_id, arg, value)
                if self._counter.count_text(pointer_to(first)) >= tokens:
                    continue
                try:
                    path = self._save(first, value)
                except _Unsaved as failure:
                    events.append(
                        OffloadFailed(
                            tool_call_id=call_id, reason=failure.reason, path=failure.path, arg=arg
                        )
                    )
                    continue
                pointer = pointer_to(path)
                if path != first and self._counter.count_text(pointer) >= tokens:
                    continue
                message = replace_tool_arg(message, index, arg, pointer)
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
        twice changes nothing. See :mod:`ctxfs.clearing` for the details and the prompt-cache
        behaviour. Messages are never mutated; replaced ones keep their id, ``tool_call_id``,
        ``name``, ``status`` and ``artifact``.

        Args:
            messages: The conversation history.
            thread_id: The conversation; names the folder results are saved in.

        Returns:
            The new list, one :class:`~ctxfs.events.ToolResultCleared` per result cleared (or
            :class:`~ctxfs.events.OffloadFailed` per result kept inline after a failure), and
            the token counts before and after.
        """
        with self._lock:
            return self._clear_results(messages, thread_id)

    def _clear_results(self, messages: Sequence[BaseMessage], thread_id: str) -> OffloadResult:
        counter = self._counter
        before = counter.count_messages(messages)
        out = list(messages)
        if not self._policy.clearing.enabled or before < self._policy.clearing_trigger_tokens:
            return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
        plan = plan_clearing(
            out, policy=self._policy, counter=counter, thread_id=thread_id, tokens=before
        )
        if not plan.go:
            return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
        events: list[ContextEvent] = []
        for item in plan.results:
            message = out[item.index]
            assert isinstance(message, ToolMessage)
            try:
                pointer, path = self._clear_one(message, item, thread_id)
            except _Unsaved as failure:
                events.append(
                    OffloadFailed(
                        tool_call_id=message.tool_call_id, reason=failure.reason, path=failure.path
                    )
                )
                continue
            cleared = message.model_copy(update={"content": pointer})
            out[item.index] = cleared
            events.append(
                ToolResultCleared(
                    tool_call_id=message.tool_call_id,
                    tool_name=message.name,
                    path=path,
                    kind=item.kind,
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
    ) -> tuple[str, str]:
        """Returns the pointer for one result and the path it names, after the I/O it needs."""
        if item.kind == "reread":
            try:
                there = self._workspace.exists(item.path)
            except _WRITE_ERRORS as exc:
                raise _Unsaved(f"could not check {item.path}: {exc}", item.path) from exc
            if there:
                tokens = self._counter.count_text(item.text)
                return reread_pointer(
                    item.path, item.text, tokens=tokens, call=item.call
                ), item.path
            # not a view of saved content after all: save it like any other result
        if item.kind == "offloaded":
            full = self._read_offloaded(item)
            tokens = self._counter.count_text(full)
            return cleared_pointer(item.path, full, tokens=tokens, call=item.call), item.path
        first = result_path(thread_id, message.tool_call_id, item.text)
        path = self._save(first, item.text)
        tokens = self._counter.count_text(item.text)
        return cleared_pointer(path, item.text, tokens=tokens, call=item.call), path

    def _read_offloaded(self, item: ResultToClear) -> str:
        """The full text an offload pointer names, checked against the size the pointer gave."""
        data = self._read(item.path)
        try:
            full = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Unsaved(f"{item.path} is not UTF-8 text: {exc}", item.path) from exc
        stats = result_pointer_stats(item.text)
        if stats is None or stats[:2] != (count_lines(full), len(full)):
            raise _Unsaved(f"{item.path} does not hold the result its pointer describes", item.path)
        return full

    # -- workspace I/O --------------------------------------------------------------------

    def _save(self, first_choice: str, text: str) -> str:
        """Writes ``text`` create-only at the first free or identical candidate path.

        Returns:
            The path that now holds exactly ``text`` (written now, or already there).

        Raises:
            _Unsaved: No candidate could be written and verified; the reason says why.
        """
        data = text.encode("utf-8") if text.isascii() else _encode(text, first_choice)
        for path in candidate_paths(first_choice):
            try:
                self._workspace.write_bytes(path, data, create_only=True)
            except PathExistsError:
                if self._read(path) == data:
                    return path  # same content already saved: idempotent
                continue  # taken by different content: never overwrite, try the next name
            except _WRITE_ERRORS as exc:
                raise _Unsaved(f"could not write {path}: {exc}", path) from exc
            if self._read(path) != data:
                raise _Unsaved(f"{path} did not read back identical after writing", path)
            return path
        raise _Unsaved(
            f"every candidate name next to {first_choice} holds different content", first_choice
        )

    def _read(self, path: str) -> bytes:
        try:
            return self._workspace.read_bytes(path)
        except _WRITE_ERRORS as exc:
            raise _Unsaved(f"could not read back {path}: {exc}", path) from exc


def _encode(text: str, path: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Unsaved(
            f"the text is not valid Unicode (lone surrogate at {exc.start})", path
        ) from exc
