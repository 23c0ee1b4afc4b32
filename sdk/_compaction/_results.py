"""Step 1, result offload: a tool result over the threshold is saved and replaced by a pointer.

A pointer never costs more than what it replaces; a failed write leaves the result inline
with an :class:`~ctxfs._events.OffloadFailed` event. Large media blocks of the result
(see :mod:`ctxfs._compaction._media`) are moved to binary files first; the text that is
left, references included, is then offloaded like any result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs._compaction._means import EngineState, Means
from ctxfs._compaction._media import media_blocks, move_media, moves_at_return
from ctxfs._compaction._request import Offered
from ctxfs._events import (
    ContextEvent,
    OffloadFailed,
    OffloadResult,
    ToolResultOffloaded,
    ToolResultOutcome,
)
from ctxfs._layout import result_path
from ctxfs._messages import (
    message_text,
    saved_text,
    why_not_saved,
)
from ctxfs._pointers._pointer import (
    Pointer,
    content_shape,
    count_lines,
    point_result,
    render_result,
    result_pointer,
)
from ctxfs._pointers._recovery import recovery_tool
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import ContextPolicy, Threshold
from ctxfs._tokens import count_exceeding
from ctxfs._workspace._saving import Unsaved, save_text

__all__ = ["ResultMethods", "offload_result", "offload_unseen"]


def offload_result(
    means: Means,
    message: ToolMessage,
    thread_id: str,
    budget: Budget[ContextPolicy],
    tool: object | None,
) -> ToolResultOutcome:
    """Step 1, when a tool returns: ``message``, or a pointer to its saved content.

    See :meth:`ContextEngine.offload_tool_result <ctxfs.ContextEngine.offload_tool_result>`.
    """
    settings = budget.policy.tool_results
    if not settings.enabled or message.name in settings.exempt_tools:
        return ToolResultOutcome(message=message)
    if recovery_tool(tool) is not None:
        return ToolResultOutcome(message=message)  # ctxfs's own: it pages instead
    if result_pointer(message) is not None:
        return ToolResultOutcome(message=message)
    threshold = budget.result_threshold
    # Large text beside media: the text can only be saved once the media blocks are out of
    # the content, so all of them move (as when the result is cleared); otherwise only the
    # blocks large in themselves do.
    text_over = count_exceeding(means.counter, _text_beside_media(message), threshold) is not None
    moved = move_media(
        means.workspace,
        means.counter,
        message,
        thread_id=thread_id,
        moves=lambda block: (
            text_over or moves_at_return(block, threshold, settings.max_media_bytes)
        ),
    )
    message = moved.applied_to(message)
    outcome = _offload_text(means, message, thread_id, budget)
    return replace(outcome, media=moved.events) if moved.events else outcome


def offload_unseen(
    means: Means,
    messages: Sequence[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    extra: int,
    offered: Offered,
) -> OffloadResult:
    """A request over its limit: the results the model has not seen yet offloaded.

    The results after the last AI message are never cleared (the model has not read them),
    and each was under the threshold when its tool returned; together they may still be
    over the limit (many parallel calls). Then they are offloaded as at their return, a
    pointer with a preview, the largest first, until the request is within
    :attr:`~ctxfs._policy._budget.Budget.request_limit`. ctxfs's recovery tools among the
    ``offered`` page instead and stay.
    """
    out = list(messages)
    before = means.counter.count_messages(out)
    last_ai = max((i for i, m in enumerate(out) if isinstance(m, AIMessage)), default=-1)
    unseen = [i for i in range(last_ai + 1, len(out)) if isinstance(out[i], ToolMessage)]
    sizes = {i: means.counter.count_message(out[i]) for i in unseen}
    settings = budget.policy.tool_results.model_copy(update={"threshold": Threshold(tokens=1)})
    low = Budget.of(budget.policy.model_copy(update={"tool_results": settings}), budget.window)
    events: list[ContextEvent] = []
    tokens = before
    for i in sorted(unseen, key=lambda k: (-sizes[k], k)):
        if tokens + extra <= budget.request_limit:
            break
        message = out[i]
        assert isinstance(message, ToolMessage)
        outcome = offload_result(means, message, thread_id, low, offered.get(message.name or ""))
        events += [*outcome.media, *([outcome.event] if outcome.event is not None else [])]
        if outcome.message is not message:
            out[i] = outcome.message
            tokens += means.counter.count_message(outcome.message) - sizes[i]
    after = means.counter.count_messages(out) if events else before
    return OffloadResult(
        messages=out, events=tuple(events), tokens_before=before, tokens_after=after
    )


def _text_beside_media(message: ToolMessage) -> str:
    """The text a result is saved as, leaving out its base64 media blocks (billed as media,
    never as the text of their payload): what the threshold is compared with."""
    payloads = {block.index for block in media_blocks(message.content)}
    content = message.content
    if payloads and isinstance(content, list):
        content = [block for k, block in enumerate(content) if k not in payloads]
    return saved_text(content) or message_text(message)


def _offload_text(
    means: Means, message: ToolMessage, thread_id: str, budget: Budget[ContextPolicy]
) -> ToolResultOutcome:
    settings = budget.policy.tool_results
    threshold = budget.result_threshold
    tokens = count_exceeding(means.counter, _text_beside_media(message), threshold)
    text = saved_text(message.content)
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
        return pointer, rendered, means.counter.count_text(rendered)

    # A pointer never costs more than what it replaces. It is sized before anything is
    # written (the preview is cheap to build), and again if a name collision made its
    # path longer; a file already written then stays, unreferenced but harmless.
    first = result_path(thread_id, call_id, text)
    pointer, rendered, pointer_tokens = pointer_to(first)
    if pointer_tokens >= tokens:
        return ToolResultOutcome(message=message)
    try:
        path = save_text(means.workspace, first, text)
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


class ResultMethods(EngineState):
    """The engine's methods for step 1 (a mixin of :class:`~ctxfs.ContextEngine`)."""

    def offload_tool_result(
        self, message: ToolMessage, *, thread_id: str, tool: object | None = None
    ) -> ToolMessage:
        """Returns ``message``, or a pointer to its saved content if it is too large.

        A result is offloaded when its text is over the policy's threshold, its tool is not
        exempt (ctxfs's own recovery tools page instead; they are told by identity, so pass
        the ``tool`` that ran, and a tool of another making is offloaded whatever its name;
        ``exempt_tools`` names more), it is not already a pointer ctxfs made, and the
        pointer would cost fewer tokens than the result itself (just over a small threshold,
        a result can be no larger than the pointer's preview of it). The returned message
        keeps the id, ``tool_call_id``, ``name``, ``status`` and ``artifact``. On a failed
        write the input is returned unchanged.

        Args:
            message: The tool's result.
            thread_id: The conversation it belongs to; names the folder it is saved in.
            tool: The tool that returned it (a LangChain tool or a
                :class:`~ctxfs.ToolFunction`), if known.
        """
        return self.offload_tool_result_detailed(message, thread_id=thread_id, tool=tool).message

    def offload_tool_result_detailed(
        self, message: ToolMessage, *, thread_id: str, tool: object | None = None
    ) -> ToolResultOutcome:
        """Like :meth:`offload_tool_result`, and also says what happened.

        Returns:
            The message to keep and a :class:`~ctxfs._events.ToolResultOffloaded` or
            :class:`~ctxfs._events.OffloadFailed` event (``None`` when nothing was tried, or
            when the pointer would not have been smaller than the result).
        """
        with self._lock:
            return offload_result(self._means, message, thread_id, self._resolve(None), tool)
