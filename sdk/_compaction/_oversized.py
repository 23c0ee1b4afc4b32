"""The last lossless resort: large texts of messages moved out of a request still over its limit.

After every other step (old and recent inputs and results to files, the results the model
has not read yet offloaded, a summary where one helps), a request may still be over its
limit because of a text no step makes smaller: a user's pasted log, a long answer of the
model kept in the recent window (or with summarization off), the raw arguments of a call the
model botched (``AIMessage.invalid_tool_calls``). :func:`offload_oversized` moves such texts
to files beside the thread's transcript, each saved and read back before its message
changes, and puts in its place a pointer with a preview (:mod:`ctxfs._pointers._moved`),
only until the request fits:

1. the model's texts first (AI contents, botched calls' arguments), the largest first;
2. then the user's messages other than the task statement, the largest first;
3. the task statement (the first user message) last of all.

The user's words thus stay in view verbatim as far as the budget allows, and beyond it the
pointer quotes their first lines and names the byte-exact copy: never a paraphrase. The
system prompt is never touched; nor is a message that carries other metadata of ctxfs's (a
summary, a pin, a pointer), or content other than text (images stay, with their message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxfs._compaction._means import Means
from ctxfs._events import ContextEvent, MessageOffloaded, OffloadFailed, OffloadResult
from ctxfs._layout import message_path
from ctxfs._messages import offloadable_text, restore_text, text_layout
from ctxfs._pointers._moved import (
    HOST_KINDS,
    MovedText,
    Part,
    moved_texts,
    point_moved,
    render_moved,
)
from ctxfs._pointers._pointer import METADATA_KEY, count_lines
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import ContextPolicy
from ctxfs._workspace._saving import Unsaved, save_text

__all__ = ["offload_oversized"]


@dataclass(frozen=True, slots=True)
class _Candidate:
    rank: int  # 0: the model's, 1: the user's, 2: the task statement
    tokens: int
    position: int
    part: Part
    index: int
    text: str


def offload_oversized(
    means: Means,
    messages: Sequence[BaseMessage],
    thread_id: str,
    budget: Budget[ContextPolicy],
    extra: int,
) -> OffloadResult:
    """A request over its limit: large message texts moved to files until it fits.

    Args:
        means: The workspace and the counter.
        messages: The history (not modified).
        thread_id: Names the folder the texts are saved in.
        budget: The policy's numbers for the window.
        extra: Tokens of the request besides the messages.
    """
    out = list(messages)
    before = means.counter.count_messages(out)
    if before + extra <= budget.request_limit:
        return OffloadResult(messages=out, tokens_before=before, tokens_after=before)
    settings = budget.policy.tool_results
    events: list[ContextEvent] = []
    tokens = before
    for found in sorted(_candidates(means, out), key=lambda c: (c.rank, -c.tokens, c.position)):
        if tokens + extra <= budget.request_limit:
            break
        message = out[found.position]
        what = _what(message, found)
        part_name = "content" if found.part == "content" else f"call{found.index + 1}"
        first = message_path(thread_id, message.id, part_name, found.text)
        call_id = _call_id(message, found)
        moved = MovedText(
            part=found.part,
            index=found.index,
            path=first,
            lines=count_lines(found.text),
            chars=len(found.text),
            tokens=found.tokens,
            call_id=call_id or "",
            shape=text_layout(message.content) if found.part == "content" else (),
        )

        def render(moved: MovedText, text: str = found.text, what: str = what) -> str:
            return render_moved(
                moved,
                text,
                what=what,
                preview_lines=settings.preview_lines,
                preview_line_chars=settings.preview_line_chars,
            )

        rendered = render(moved)
        if means.counter.count_text(rendered) >= found.tokens:
            continue  # a pointer never costs as much as what it replaces
        try:
            path = save_text(means.workspace, first, found.text)
        except Unsaved as failure:
            reason = f"the {what} ({found.tokens:,} tokens) stays: {failure.reason}"
            events.append(OffloadFailed(tool_call_id=call_id or "", reason=reason, path=first))
            continue
        if path != first:
            moved = replace(moved, path=path)
            rendered = render(moved)
        changed = point_moved(message, moved, rendered)
        pointer_tokens = means.counter.count_text(rendered)
        out[found.position] = changed
        tokens += means.counter.count_message(changed) - means.counter.count_message(message)
        events.append(
            MessageOffloaded(
                message_id=message.id,
                role="user" if isinstance(message, HumanMessage) else "assistant",
                part="content" if found.part == "content" else "invalid_tool_call",
                index=found.index,
                tool_call_id=call_id,
                path=path,
                chars=len(found.text),
                tokens=found.tokens,
                tokens_after=pointer_tokens,
            )
        )
    after = means.counter.count_messages(out) if events else before
    return OffloadResult(
        messages=out, events=tuple(events), tokens_before=before, tokens_after=after
    )


def _candidates(means: Means, messages: Sequence[BaseMessage]) -> list[_Candidate]:
    """The texts that may move: (rank, tokens, position, part, index, text)."""
    first_user = next((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), -1)
    found: list[_Candidate] = []
    for position, message in enumerate(messages):
        if not isinstance(message, HumanMessage | AIMessage) or not _hosts(message):
            continue
        held = moved_texts(message)
        rank = 0 if isinstance(message, AIMessage) else 2 if position == first_user else 1
        parts: list[tuple[Part, int, str | None]] = [("content", 0, _content_text(message))]
        if isinstance(message, AIMessage):
            for index, call in enumerate(message.invalid_tool_calls):
                args = call.get("args")
                parts.append(("invalid", index, offloadable_text(args) if args else None))
        for part, index, text in parts:
            if not text or (part, index) in held:
                continue
            tokens = means.arg_tokens(text)
            found.append(_Candidate(rank, tokens, position, part, index, text))
    return found


def _hosts(message: BaseMessage) -> bool:
    """Whether a message may have a text moved: it carries no metadata of ctxfs's, or only
    input pointers and texts moved before (a summary, a pin or a pointer stays)."""
    data = message.additional_kwargs.get(METADATA_KEY)
    return data is None or (isinstance(data, Mapping) and data.get("kind") in HOST_KINDS)


def _content_text(message: BaseMessage) -> str | None:
    """The text a content moves as: pure text only, and only when it comes back exactly."""
    content = message.content
    text = offloadable_text(content)
    if text is None or restore_text(text, text_layout(content)) != content:
        return None
    return text


def _call_id(message: BaseMessage, found: _Candidate) -> str | None:
    if found.part != "invalid" or not isinstance(message, AIMessage):
        return None
    call_id = message.invalid_tool_calls[found.index].get("id")
    return call_id if isinstance(call_id, str) else None


def _what(message: BaseMessage, found: _Candidate) -> str:
    if found.part == "invalid":
        return "botched tool call's arguments"
    if isinstance(message, AIMessage):
        return "assistant message"
    return "user message"
