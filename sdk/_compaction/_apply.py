"""Step 3, applying a clearing: the planned old results saved (or pointed at) and replaced.

The plan is made by :func:`ctxfs._compaction._clearing.plan_clearing`; here each result is
saved and verified before its message is replaced (its media blocks first, each to a binary
file, see :mod:`ctxfs._compaction._media`), an offload pointer is cleared to its file,
and a recovery tool's view of saved content to a pointer that repeats the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from langchain_core.messages import BaseMessage, ToolMessage

from ctxfs._compaction._clearing import ResultToClear, plan_clearing, pointer_for
from ctxfs._compaction._means import EngineState, Means
from ctxfs._compaction._media import media_blocks, move_media
from ctxfs._compaction._request import Offered, Tool
from ctxfs._errors import WorkspaceError
from ctxfs._events import (
    ContextEvent,
    OffloadFailed,
    OffloadResult,
    ToolResultCleared,
)
from ctxfs._layout import result_path
from ctxfs._messages import saved_text
from ctxfs._pointers._pointer import (
    Pointer,
    content_shape,
    count_lines,
    point_result,
)
from ctxfs._pointers._recovery import BUDGET_KEY, default_tools, offered_tools
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import ContextPolicy
from ctxfs._workspace._saving import Unsaved, exists, read_saved, save_text

__all__ = [
    "ClearingMethods",
    "apply_clearing",
    "clear_one",
    "clear_results",
    "read_offloaded",
    "repeats",
]


def clear_results(
    means: Means,
    messages: Sequence[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    extra: int,
    offered: Offered,
    *,
    go: bool = False,
) -> OffloadResult:
    """Step 3: old results cleared, from the clearing trigger on, when the batch is worth it
    (or now, with ``go``); see :func:`~ctxfs._compaction._clearing.plan_clearing`."""
    counter = means.counter
    before = counter.count_messages(messages)
    out = list(messages)
    below = before + extra < budget.clearing_trigger
    if not budget.policy.clearing.enabled or (below and not go):
        return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
    plan = plan_clearing(
        out, budget=budget, counter=counter, thread_id=thread_id, tokens=before + extra, go=go
    )
    if not plan.go:
        return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
    return apply_clearing(means, out, thread_id, plan.results, offered)


def apply_clearing(
    means: Means,
    messages: Sequence[BaseMessage],
    thread_id: str,
    results: Sequence[ResultToClear],
    offered: Offered,
) -> OffloadResult:
    """Saves and clears the planned results (each saved and verified before it goes)."""
    counter = means.counter
    before = counter.count_messages(messages)
    out = list(messages)
    events: list[ContextEvent] = []
    for item in results:
        message = out[item.index]
        assert isinstance(message, ToolMessage)
        if item.kind == "saved" and media_blocks(message.content):
            moved = move_media(
                means.workspace, means.counter, message, thread_id=thread_id, moves=_every
            )
            events.extend(moved.events)
            text = saved_text(moved.content)
            if text is None:  # a block stayed (broken base64, a failed write): so does all
                continue
            message = moved.applied_to(message)
            out[item.index] = message
            item = replace(item, text=text)
        try:
            pointer, rendered = clear_one(means, message, item, thread_id, offered)
        except Unsaved as failure:
            events.append(
                OffloadFailed(
                    tool_call_id=message.tool_call_id, reason=failure.reason, path=failure.path
                )
            )
            continue
        cleared = point_result(message, pointer, rendered)
        tokens_after = counter.count_message(cleared)
        if tokens_after >= counter.count_message(message):
            # The plan's estimate stood in for what it could not read (an offloaded file's
            # first line, a path taken): a pointer no smaller would spend the cache for nothing.
            continue
        out[item.index] = cleared
        events.append(
            ToolResultCleared(
                tool_call_id=message.tool_call_id,
                tool_name=message.name,
                path=pointer.path,
                kind="reread" if pointer.kind == "reread" else _cleared_kind(item),
                tokens=item.tokens,
                tokens_after=tokens_after,
            )
        )
    after = counter.count_messages(out)
    return OffloadResult(
        messages=out, events=tuple(events), tokens_before=before, tokens_after=after
    )


def _every(_block: object) -> bool:
    """Clearing moves every media block with a payload (see :mod:`ctxfs._compaction._media`)."""
    return True


def clear_one(
    means: Means, message: ToolMessage, item: ResultToClear, thread_id: str, offered: Offered
) -> tuple[Pointer, str]:
    """Returns the pointer for one result and its text, after the I/O it needs."""
    call_id = message.tool_call_id
    # A re-read stands for repeating its call, so it is one only if the repeat gives back
    # exactly what the model saw (the same tool page size, a single saved file that is
    # never rewritten); otherwise it is saved like any other result.
    repeat = repeats(means, item, offered) if item.kind == "reread" else None
    if repeat is not None:
        item = replace(item, repeat=repeat)
        tokens = means.counter.count_text(item.text)
        shape = content_shape(message.content)
        return pointer_for(item, item.path, item.text, tokens, tool_call_id=call_id, shape=shape)
    if item.kind == "offloaded":
        assert item.offloaded is not None
        full = read_offloaded(means, item.offloaded)
        tokens = means.counter.count_text(full)
        return pointer_for(
            item, item.path, full, tokens, tool_call_id=call_id, shape=item.offloaded.shape
        )
    first = result_path(thread_id, call_id, item.text)
    path = save_text(means.workspace, first, item.text)
    tokens = means.counter.count_text(item.text)
    shape = content_shape(message.content)
    saved = replace(item, kind="saved")
    return pointer_for(saved, path, item.text, tokens, tool_call_id=call_id, shape=shape)


def repeats(means: Means, item: ResultToClear, offered: Offered) -> Mapping[str, Any] | None:
    """The call that shows a re-read's text again, exactly as the model saw it, if any.

    The view is repeated as the pointer resolution will repeat it: with ctxfs's
    recovery tool of that name on this workspace, at the output budget of the one the
    model is offered (``offered``; else the tools' default), which the call then
    records.
    """
    call = item.repeat or {}
    name, args = call.get("name"), call.get("args")
    if not isinstance(name, str) or not isinstance(args, Mapping):
        return None
    try:
        if not exists(means.workspace, item.path):
            return None
        if means.workspace.info(item.path).type != "file":
            return None  # a folder's view changes as files are saved in it
    except _IO_ERRORS:
        return None
    tool = offered.get(name)
    budget = tool.budget() if tool is not None else None
    if tool is not None and budget == tool.default_budget:
        budget = None
    tools = means.tools.get(budget)
    if tools is None:
        if len(means.tools) >= 8:
            means.tools.clear()
        tools = means.tools[budget] = default_tools(means.workspace, budget)
    function = tools.get(name)
    if function is None or function.run(**dict(args)) != item.text:
        return None
    return {**call, BUDGET_KEY: budget} if budget is not None else call


def read_offloaded(means: Means, pointer: Pointer) -> str:
    """The full text an offload pointer names, checked against the size it gave."""
    data = read_saved(means.workspace, pointer.path)
    try:
        full = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unsaved(f"{pointer.path} is not UTF-8 text: {exc}", pointer.path) from exc
    if (pointer.lines, pointer.chars) != (count_lines(full), len(full)):
        raise Unsaved(
            f"{pointer.path} does not hold the result its pointer describes", pointer.path
        )
    return full


def _cleared_kind(item: ResultToClear) -> Literal["saved", "offloaded"]:
    return "offloaded" if item.kind == "offloaded" else "saved"


_IO_ERRORS = (WorkspaceError, OSError)


class ClearingMethods(EngineState):
    """The engine's method for step 3 (a mixin of :class:`~ctxfs.ContextEngine`)."""

    def clear_tool_results(
        self, messages: Sequence[BaseMessage], *, thread_id: str, tools: Sequence[Tool] = ()
    ) -> OffloadResult:
        """Replaces old tool results by short pointers to their saved full text.

        Nothing happens below :attr:`ContextPolicy.clearing_trigger_tokens`. At or above it, every
        tool result outside the kept window that is large enough and not exempt is cleared, in one
        batch, if the batch is worth its cache write (at least ``clear_at_least`` tokens, and
        ``frees_per_rewrite`` tokens per token of the history after its first change) or keeps a
        summary away; otherwise nothing changes yet. A result is saved (create-only, read back)
        before its message is replaced; an offload pointer is cleared to a pointer to the same file,
        and a recovery tool's view of saved content to a pointer to what it showed, without a new
        file. Cleared results are never touched again, so running this twice changes nothing. See
        :mod:`ctxfs._compaction._clearing` for the details and the prompt-cache behaviour. Messages
        are never mutated; replaced ones keep their id, ``tool_call_id``, ``name``, ``status`` and
        ``artifact``.

        Args:
            messages: The conversation history.
            thread_id: The conversation; names the folder results are saved in.
            tools: The tools the model is offered: a view is repeated at the output budget
                of ctxfs's recovery tool among them (else at the tools' default budget).

        Returns:
            The new list, one :class:`~ctxfs._events.ToolResultCleared` per result cleared (or
            :class:`~ctxfs._events.OffloadFailed` per result kept inline after a failure), and
            the token counts before and after.
        """
        with self._lock:
            budget, offered = self._resolve(None), offered_tools(tools)
            return clear_results(self._means, messages, thread_id, budget, 0, offered)
