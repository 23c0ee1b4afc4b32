"""Writing a summary's body: by a chat model from a bounded rendering, or extractively.

A chat model writes the intent, summary and next steps from a bounded rendering of the
archived messages (:func:`render_for_model`: the beginning and the end, at most
``trim_tokens`` tokens). With no model, or when the model fails or answers nothing usable,
:func:`extractive_body` writes them deterministically from the messages. Sync and async
callers share everything here; only the model call differs (:func:`call_model`,
:func:`acall_model`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxfs._json import dumps_any
from ctxfs._messages import message_text
from ctxfs._policy._prompt import DEFAULT_SUMMARY_PROMPT
from ctxfs._sections import neutralize, one_line, quote_lines
from ctxfs._summary._message import SECTION_INTENT, SECTION_SUMMARY, SUMMARY_TAG, SummaryState
from ctxfs._tokens import TokenCounter

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "ModelAnswer",
    "acall_model",
    "call_model",
    "extractive_body",
    "format_prompt",
    "model_body",
    "render_for_model",
]


_CLIP = 1_500

ModelAnswer = tuple[str | None, str | None]
"""A summary model's usable answer or ``None``, and why not (``None`` on success)."""


# -- the extractive fallback ----------------------------------------------------------------


def _clip(text: str, limit: int = _CLIP) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters in the transcript]"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def extractive_body(
    messages: Sequence[BaseMessage],
    *,
    first_index: int,
    previous: SummaryState | None,
) -> tuple[str, str, str]:
    """Returns (intent, summary, next steps) taken from the messages, without a model.

    Deterministic: the first user request (or the previous intent), what the archived
    messages contain (counts, tools used, the latest user request), and the last assistant
    text. Never empty.

    Args:
        messages: The messages being archived.
        first_index: Position of the first of them in the original thread.
        previous: The summary being folded in, if any.
    """
    humans = [m for m in messages if isinstance(m, HumanMessage) and message_text(m).strip()]
    if previous is not None and previous.intent:
        intent = previous.intent
    elif humans:
        intent = f"The user's first request: {_clip(message_text(humans[0]))}"
    else:
        intent = "(no user request in the archived messages)"

    tools = Counter(
        call["name"] for m in messages if isinstance(m, AIMessage) for call in m.tool_calls
    )
    kinds = Counter(m.type for m in messages)
    last = first_index + len(messages) - 1
    lines: list[str] = []
    if previous is not None and previous.summary:
        # as it was: its own lines already say which messages they cover, and a label here
        # would pile up, one more at each fold
        lines.append(_clip(previous.summary))
    lines.append(
        f"Messages {first_index}-{last} ({_plural(len(messages), 'message')}): "
        f"{kinds['human']} from the user, {kinds['ai']} from the assistant, "
        f"{_plural(kinds['tool'], 'tool result')}."
    )
    if tools:
        used = ", ".join(f"{name} x{count}" for name, count in sorted(tools.items()))
        lines.append(f"Tools called: {used}.")
    if len(humans) > 1 or (humans and previous is not None):
        latest = _clip(message_text(humans[-1]), 800)
        lines.append(f"The latest user message in this part: {latest}")
    summary = "\n".join(lines)

    said = [m for m in messages if isinstance(m, AIMessage) and message_text(m).strip()]
    if said:
        next_steps = (
            "Continue from the messages below. The last assistant message before them said: "
            f"{_clip(message_text(said[-1]))}"
        )
    else:
        next_steps = "Continue from the messages below."
    return intent, summary, next_steps


# -- the model path -------------------------------------------------------------------------


def _render(message: BaseMessage) -> str:
    # The role line and the tool-call lines are ctxfs's; the text is quoted, so a message
    # cannot close the prompt's <messages> section nor pass for another message ("[human]").
    lines = [f"[{message.type}]"]
    text = message_text(message)
    if text:
        lines.append(quote_lines(text))
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = dumps_any(call["args"])
            lines.append(one_line(f"(tool call {call['name']} {args})"))
    return "\n".join(lines)


def _clip_tokens(counter: TokenCounter, text: str, budget: int, *, keep_end: bool) -> str:
    """The longest prefix (or suffix) of ``text`` within ``budget`` tokens."""
    if counter.count_text(text) <= budget:
        return text
    clipped = _clip_raw(counter, text, budget, keep_end=keep_end)
    # a cut can make a tag of what was not one ("</messages" of "</messagesX"): cut before it
    while neutralize(clipped) != clipped:
        clipped = clipped[: max(clipped.rfind(opener) for opener in "<\uff1c\ufe64")]
    return clipped


def _clip_raw(counter: TokenCounter, text: str, budget: int, *, keep_end: bool) -> str:
    low, high = 0, len(text)
    while low < high:  # largest length whose slice fits
        mid = (low + high + 1) // 2
        part = text[len(text) - mid :] if keep_end else text[:mid]
        if counter.count_text(part) <= budget:
            low = mid
        else:
            high = mid - 1
    return text[len(text) - low :] if keep_end else text[:low]


def render_for_model(
    messages: Sequence[BaseMessage],
    *,
    previous: SummaryState | None,
    counter: TokenCounter,
    trim_tokens: int,
) -> str:
    """Returns the archived messages as text for the summary model, within ``trim_tokens``.

    The previous summary (at most a quarter of the budget) comes first, then messages from
    the beginning (a third of what is left: that is where the intent is) and from the end
    (the rest), with a marker saying how many messages were left out between them. A message
    too large for what is left is clipped, keeping its start (head) or its end (tail).
    """
    parts: list[str] = []
    budget = trim_tokens
    if previous is not None and (previous.intent or previous.summary):
        prior = f"[previous summary]\n{SECTION_INTENT}\n{quote_lines(previous.intent)}\n\n"
        prior += f"{SECTION_SUMMARY}\n{quote_lines(previous.summary)}"
        prior = _clip_tokens(counter, prior, trim_tokens // 4, keep_end=False)
        parts.append(prior)
        budget -= counter.count_text(prior)
    rendered = [_render(m) for m in messages]
    sizes = [counter.count_text(r) + 1 for r in rendered]
    if sum(sizes) <= budget:
        return "\n\n".join([*parts, *rendered])
    head_budget = budget // 3
    tail_budget = budget - head_budget
    head: list[str] = []
    i = 0
    while i < len(rendered) and head_budget > 0:
        piece = _clip_tokens(counter, rendered[i], head_budget - 1, keep_end=False)
        if piece:
            head.append(piece)
        head_budget -= sizes[i]
        i += 1
    tail: list[str] = []
    j = len(rendered) - 1
    while j >= i and tail_budget > 0:
        piece = _clip_tokens(counter, rendered[j], tail_budget - 1, keep_end=True)
        if piece:
            tail.append(piece)
        tail_budget -= sizes[j]
        j -= 1
    omitted = j - i + 1
    marker = f"[... {_plural(omitted, 'message')} left out here; they are in the transcript ...]"
    return "\n\n".join([*parts, *head, marker, *reversed(tail)])


def model_body(answer: object) -> str | None:
    """Returns the usable text of a model's answer, or ``None`` to fall back.

    Accepts a message (its text), a string, or anything else (unusable). Empty or
    whitespace-only answers are unusable; an echoed :data:`SUMMARY_TAG` line is removed.
    """
    if isinstance(answer, BaseMessage):
        text = message_text(answer)
    elif isinstance(answer, str):
        text = answer
    else:
        return None
    text = text.strip()
    if text.startswith(SUMMARY_TAG):
        text = text[len(SUMMARY_TAG) :].strip()
    return text or None


def format_prompt(template: str, rendered: str) -> str:
    """Returns the prompt: ``template`` with ``{messages}`` replaced (other braces are kept)."""
    return template.replace("{messages}", rendered)


def call_model(model: BaseChatModel, prompt: str) -> tuple[str | None, str | None]:
    """Asks ``model`` for a summary; never raises.

    Returns:
        The usable answer (see :func:`model_body`) or ``None``, and why not (``None`` on
        success).
    """
    try:
        answer = model.invoke([HumanMessage(prompt)])
    except Exception as exc:  # any provider failure falls back to the extractive summary
        return None, f"the summary model raised {type(exc).__name__}: {exc}"
    return _usable(answer)


async def acall_model(model: BaseChatModel, prompt: str) -> tuple[str | None, str | None]:
    """Async twin of :func:`call_model`."""
    try:
        answer = await model.ainvoke([HumanMessage(prompt)])
    except Exception as exc:  # any provider failure falls back to the extractive summary
        return None, f"the summary model raised {type(exc).__name__}: {exc}"
    return _usable(answer)


def _usable(answer: object) -> tuple[str | None, str | None]:
    body = model_body(answer)
    return (body, None) if body is not None else (None, "the summary model answered nothing")
