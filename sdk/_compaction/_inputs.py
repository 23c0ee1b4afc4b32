"""Step 2, input offload: large string arguments of old tool calls saved and replaced by pointers.

Any string argument of any tool counts, unless ``tool_inputs.args`` names the tool; a
pointer never costs as many tokens as the argument it replaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import compress
from operator import is_not
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ctxfs._compaction._means import EngineState, InputScan, Means
from ctxfs._events import (
    ContextEvent,
    OffloadFailed,
    OffloadResult,
    ToolInputOffloaded,
)
from ctxfs._layout import input_path
from ctxfs._messages import (
    offloadable_text,
    target_path_of,
)
from ctxfs._pointers._pointer import (
    Pointer,
    count_lines,
    input_pointers,
    point_input,
    render_input,
)
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import ContextPolicy, ToolInputOffload
from ctxfs._workspace._saving import Unsaved, save_text

__all__ = ["InputMethods", "input_frees", "input_pointer", "offload_call_args", "offload_inputs"]

_SCANS = 64
"""Histories whose last input scan is remembered (one per thread)."""


def input_frees(
    means: Means,
    messages: Sequence[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    calls: list[object] | None = None,
) -> Iterator[tuple[int, int]]:
    """What offloading each old input would free: (message index, tokens), oldest first.

    ``calls``: the token counter's record of each message's tool calls (see
    :func:`ctxfs._compaction._escalation.escalate`). With it, a message whose calls were
    looked at before with nothing to move, and whose record object is the same (it did not
    change), is passed over without being looked at: the scan runs on most calls below the
    high-water mark, and its work then grows with what changed, not with the history.
    """
    settings = budget.policy.tool_inputs
    end = max(0, len(messages) - settings.keep_messages)
    scan = means.input_scans.get(messages[0].id) if messages and calls is not None else None
    if scan is not None and calls is not None and scan.settings is settings:
        known = min(len(scan.calls), end)
        # in C: the positions whose record object was replaced since the last scan
        redo = set(compress(range(known), map(is_not, calls[:known], scan.calls[:known])))
        redo.update(i for i in scan.movable if i < known)
        positions: Iterable[int] = [*sorted(redo), *range(known, end)]
    else:
        positions = range(end)
    movable: list[int] = []
    for i in positions:
        message = messages[i]
        if not isinstance(message, AIMessage) or not message.tool_calls:
            continue
        held: Mapping[tuple[int, str], Pointer] | None = None  # read only if there are candidates
        for index, call, arg, value in _input_candidates(message, settings):
            held = input_pointers(message) if held is None else held
            if (index, arg) not in held:
                _, _, freed = input_pointer(means, call, index, arg, value, thread_id)
                if freed > 0:
                    yield i, freed
        if held is not None:
            movable.append(i)  # has candidates: looked at again next time
    if calls is not None and messages:
        scans = means.input_scans
        if len(scans) >= _SCANS:
            del scans[next(iter(scans))]
        scans[messages[0].id] = InputScan(settings, calls[:end], movable)


def input_pointer(
    means: Means, call: Mapping[str, Any], index: int, arg: str, value: str, thread_id: str
) -> tuple[Pointer, str, int]:
    """The pointer that would replace an argument, its text, and the tokens it frees."""
    call_id = call["id"] or ""
    tokens = means.arg_tokens(value)
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
    return pointer, rendered, tokens - means.counter.count_text(rendered)


def offload_inputs(
    means: Means,
    messages: Sequence[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    extra: int,
    *,
    go: bool = False,
    upto: int | None = None,
) -> OffloadResult:
    """Step 2: the old inputs offloaded, from the input trigger on (or now, with ``go``).

    Args:
        means: The workspace and the counter.
        messages: The history (not modified).
        thread_id: Names the folder inputs are saved in.
        budget: The policy's numbers for the window.
        extra: Tokens of the request besides the messages.
        go: Offload whatever the trigger says (a batch of the same compaction).
        upto: Only in the messages before this index.
    """
    before = means.counter.count_messages(messages)
    settings = budget.policy.tool_inputs
    out = list(messages)
    if not settings.enabled or (not go and before + extra < budget.input_trigger):
        return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
    events: list[ContextEvent] = []
    end = max(0, len(out) - settings.keep_messages)
    for i in range(end if upto is None else min(end, upto)):
        message = out[i]
        if isinstance(message, AIMessage) and message.tool_calls:
            out[i] = offload_call_args(means, message, thread_id, settings, events)
    after = means.counter.count_messages(out)
    return OffloadResult(
        messages=out, events=tuple(events), tokens_before=before, tokens_after=after
    )


def offload_call_args(
    means: Means,
    message: AIMessage,
    thread_id: str,
    settings: ToolInputOffload,
    events: list[ContextEvent],
) -> AIMessage:
    """``message`` with its large arguments saved and replaced by pointers."""
    held = input_pointers(message)
    for index, call, arg, value in _input_candidates(message, settings):
        if (index, arg) in held:
            continue  # pointers stay
        call_id = call["id"] or ""
        tokens = means.arg_tokens(value)
        target = target_path_of(call["args"])
        pointer, rendered, freed = input_pointer(means, call, index, arg, value, thread_id)
        # As for results: a pointer never costs more than the argument it replaces.
        if freed <= 0:
            continue
        try:
            path = save_text(means.workspace, pointer.path, value)
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
            if means.counter.count_text(rendered) >= tokens:
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


def _input_candidates(
    message: AIMessage, settings: ToolInputOffload
) -> Iterator[tuple[int, Mapping[str, Any], str, str]]:
    """The arguments of a message's calls that input offload may move: (call index, call,
    argument, value). Any string argument of any tool, unless ``args`` names the tool."""
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


class InputMethods(EngineState):
    """The engine's method for step 2 (a mixin of :class:`~ctxfs.ContextEngine`)."""

    def offload_tool_inputs(
        self, messages: Sequence[BaseMessage], *, thread_id: str
    ) -> OffloadResult:
        """Saves large arguments of old tool calls to files once the history is too long.

        Nothing happens below :attr:`ContextPolicy.input_trigger_tokens`. At or above it,
        every string argument of at least ``min_chars`` characters (any tool's, or those
        ``tool_inputs.args`` names for its tools), in AI messages older than the
        ``keep_messages`` most recent, is saved byte-exact and replaced by a pointer naming
        the saved copy and its size, unless that pointer would cost as many tokens as the
        argument or more. Arguments that are not strings (numbers, lists, objects) stay.
        Pointers already in place are left alone, so running this twice changes nothing.
        Messages are never mutated; replaced ones keep their id.

        Args:
            messages: The conversation history.
            thread_id: The conversation it belongs to; names the folder inputs are saved in.

        Returns:
            The new list, one event per argument moved (or kept inline after a failure), and
            the token counts before and after.
        """
        with self._lock:
            return offload_inputs(self._means, messages, thread_id, self._resolve(None), 0)
