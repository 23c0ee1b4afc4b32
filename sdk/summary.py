"""The summary that replaces archived messages: its text, its tag, and the fallback.

The summary message is a :class:`~langchain_core.messages.HumanMessage` (portable: providers
refuse or ignore system messages in mid-conversation), whose content starts with
:data:`SUMMARY_TAG` and whose ``additional_kwargs["ctxfs"]`` holds the structured state
(``kind="summary"``, the transcript paths, files touched, offloaded paths, the intent, and
``next_index``: the position in the original thread of the first message after it). ctxfs
recognises a summary by that metadata (:func:`is_summary`) and folds it into the next one.

The text has four sections: *Session intent*, *Summary*, *Artifacts* (files written or
edited, offloaded paths, transcript segments: always filled in by ctxfs, never by the model)
and *Next steps*. A chat model writes intent, summary and next steps from a bounded rendering
of the archived messages (:func:`render_for_model`: the beginning and the end, at most
``trim_tokens`` tokens). With no model, or when the model fails or answers nothing usable,
:func:`extractive_body` writes them deterministically from the messages.

Sync and async callers share everything here; only the model call differs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs.offload import offloadable_text, pointer_path, target_path_of
from ctxfs.tokens import TokenCounter

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "SUMMARY_TAG",
    "SummaryState",
    "acall_model",
    "build_summary_message",
    "call_model",
    "collect_artifacts",
    "extractive_body",
    "format_prompt",
    "is_summary",
    "model_body",
    "render_for_model",
    "summary_state",
]

SUMMARY_TAG = "[ctxfs: conversation summary]"
"""First line of every summary message."""

DEFAULT_SUMMARY_PROMPT = """\
You are compacting the history of a long-running agent session. The messages below are being \
removed from the agent's context (they stay archived and searchable). Write what the agent \
needs to continue the work without them, in exactly these three sections:

## Session intent
What the user asked for and any constraints or preferences they stated, in their own words \
where it matters.

## Summary
What was done, found and decided, in order: commands run and their outcomes, errors and how \
they were fixed, facts learned about the code or environment, open questions. Be specific: \
keep file paths, function names, identifiers, numbers and error messages exactly.

## Next steps
What remains to be done, starting with what the agent was doing when the history was cut.

Write only these sections, in English, with no preamble.

<messages>
{messages}
</messages>"""
"""The default prompt; ``{messages}`` is replaced by :func:`render_for_model`'s output."""

_WRITE_TOOLS = frozenset(
    {"write_file", "edit_file", "write", "edit", "multiedit", "create_file", "notebookedit"}
)
_SECTION_INTENT = "## Session intent"
_SECTION_SUMMARY = "## Summary"
_SECTION_NEXT = "## Next steps"
_CLIP = 1_500
_MAX_LISTED = 30


@dataclass(frozen=True, slots=True)
class SummaryState:
    """What a summary message carries forward into the next one.

    Attributes:
        next_index: Position in the original thread of the first message after the summary.
        transcripts: Readable transcript segments (``.md``), oldest first.
        files: Files written or edited by the agent so far.
        offloaded: Workspace paths of offloaded tool results and inputs seen so far.
        intent: The session intent section.
        summary: The summary section.
    """

    next_index: int
    transcripts: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    offloaded: tuple[str, ...] = ()
    intent: str = ""
    summary: str = ""

    def to_metadata(self) -> dict[str, Any]:
        """Returns the JSON-ready ``additional_kwargs["ctxfs"]`` value."""
        return {
            "kind": "summary",
            "version": 1,
            "next_index": self.next_index,
            "transcripts": list(self.transcripts),
            "files": list(self.files),
            "offloaded": list(self.offloaded),
            "intent": self.intent,
            "summary": self.summary,
        }


def _metadata(message: BaseMessage) -> Mapping[str, Any] | None:
    if not isinstance(message, HumanMessage):
        return None
    data = message.additional_kwargs.get("ctxfs")
    if isinstance(data, Mapping) and data.get("kind") == "summary":
        return data
    return None


def is_summary(message: BaseMessage) -> bool:
    """Returns whether ``message`` is a summary ctxfs wrote (tagged in ``additional_kwargs``)."""
    return summary_state(message) is not None


def summary_state(message: BaseMessage) -> SummaryState | None:
    """Returns the state a ctxfs summary carries, or ``None`` for any other message."""
    data = _metadata(message)
    if data is None:
        return None
    next_index = data.get("next_index")
    if isinstance(next_index, bool) or not isinstance(next_index, int) or next_index < 0:
        return None

    def strings(key: str) -> tuple[str, ...]:
        value = data.get(key)
        if not isinstance(value, list):
            return ()
        return tuple(v for v in value if isinstance(v, str))

    intent, summary = data.get("intent"), data.get("summary")
    return SummaryState(
        next_index=next_index,
        transcripts=strings("transcripts"),
        files=strings("files"),
        offloaded=strings("offloaded"),
        intent=intent if isinstance(intent, str) else "",
        summary=summary if isinstance(summary, str) else "",
    )


# -- artifacts ------------------------------------------------------------------------------


def collect_artifacts(
    messages: Sequence[BaseMessage], previous: SummaryState | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Returns the files written or edited and the offloaded paths, previous ones first.

    A file counts as written when a tool call named like a write/edit tool (``write_file``,
    ``edit_file``, ``Write``, ``Edit``, ``MultiEdit``...) names it in ``file_path`` or
    ``path``. Offloaded paths are those of the ctxfs pointers in tool results and arguments.
    """
    files: dict[str, None] = dict.fromkeys(previous.files if previous else ())
    offloaded: dict[str, None] = dict.fromkeys(previous.offloaded if previous else ())
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["name"].lower() in _WRITE_TOOLS:
                    target = target_path_of(call["args"])
                    if target:
                        files[target] = None
                for value in call["args"].values():
                    path = pointer_path(value) if isinstance(value, str) else None
                    if path:
                        offloaded[path] = None
        elif isinstance(message, ToolMessage):
            text = offloadable_text(message.content)
            path = pointer_path(text) if text is not None else None
            if path:
                offloaded[path] = None
    return tuple(files), tuple(offloaded)


# -- the extractive fallback ----------------------------------------------------------------


def _text(message: BaseMessage) -> str:
    """The text blocks of a message's content, joined (tool calls excluded)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


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
    humans = [m for m in messages if isinstance(m, HumanMessage) and _text(m).strip()]
    if previous is not None and previous.intent:
        intent = previous.intent
    elif humans:
        intent = f"The user's first request: {_clip(_text(humans[0]))}"
    else:
        intent = "(no user request in the archived messages)"

    tools = Counter(
        call["name"] for m in messages if isinstance(m, AIMessage) for call in m.tool_calls
    )
    kinds = Counter(m.type for m in messages)
    last = first_index + len(messages) - 1
    lines: list[str] = []
    if previous is not None and previous.summary:
        lines.append(f"Earlier: {_clip(previous.summary)}")
    lines.append(
        f"Messages {first_index}-{last} ({_plural(len(messages), 'message')}): "
        f"{kinds['human']} from the user, {kinds['ai']} from the assistant, "
        f"{_plural(kinds['tool'], 'tool result')}."
    )
    if tools:
        used = ", ".join(f"{name} x{count}" for name, count in sorted(tools.items()))
        lines.append(f"Tools called: {used}.")
    if len(humans) > 1 or (humans and previous is not None):
        lines.append(f"The latest user message in this part: {_clip(_text(humans[-1]), 800)}")
    summary = "\n".join(lines)

    said = [m for m in messages if isinstance(m, AIMessage) and _text(m).strip()]
    if said:
        next_steps = (
            "Continue from the messages below. The last assistant message before them said: "
            f"{_clip(_text(said[-1]))}"
        )
    else:
        next_steps = "Continue from the messages below."
    return intent, summary, next_steps


# -- the model path -------------------------------------------------------------------------


def _render(message: BaseMessage) -> str:
    lines = [f"[{message.type}]"]
    text = _text(message)
    if text:
        lines.append(text)
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = json.dumps(call["args"], ensure_ascii=False, sort_keys=True)
            lines.append(f"(tool call {call['name']} {args})")
    return "\n".join(lines)


def _clip_tokens(counter: TokenCounter, text: str, budget: int, *, keep_end: bool) -> str:
    """The longest prefix (or suffix) of ``text`` within ``budget`` tokens."""
    if counter.count_text(text) <= budget:
        return text
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
        prior = f"[previous summary]\n{_SECTION_INTENT}\n{previous.intent}\n\n"
        prior += f"{_SECTION_SUMMARY}\n{previous.summary}"
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
        text = _text(answer)
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


def _section(body: str, title: str) -> str:
    """The text under ``## title`` in a model's answer ("" if absent)."""
    start = body.find(title)
    if start < 0:
        return ""
    rest = body[start + len(title) :]
    end = rest.find("\n## ")
    return (rest if end < 0 else rest[:end]).strip()


# -- the message ----------------------------------------------------------------------------


def build_summary_message(
    *,
    body: str | tuple[str, str, str],
    message_id: str,
    state: SummaryState,
    first_index: int,
    transcript_dir: str,
    source: Literal["model", "extractive"],
) -> HumanMessage:
    """Returns the tagged summary message.

    Args:
        body: A model's answer (free text, ideally with the three sections), or the
            (intent, summary, next steps) triple of :func:`extractive_body`.
        message_id: A deterministic id (derived from the transcript segment).
        state: What the summary carries forward; ``intent`` and ``summary`` are filled in
            here from the body.
        first_index: Position in the original thread of the first archived message.
        transcript_dir: The thread's transcript folder, for the search hint.
        source: Who wrote the body, recorded in the metadata.
    """
    last = state.next_index - 1
    transcripts = state.transcripts
    shown = transcripts[-5:]
    lines = [
        SUMMARY_TAG,
        f"Earlier messages of this conversation (up to message {last}) were archived and "
        "replaced by this summary. Nothing was lost: the archived messages "
        f"{first_index}-{last} are in {transcripts[-1] if transcripts else transcript_dir}"
        + (f" (earlier parts: {', '.join(shown[:-1])})" if len(shown) > 1 else "")
        + (f" and {len(transcripts) - 5} older segments" if len(transcripts) > 5 else "")
        + ".",
        f'Search them with grep (path "{transcript_dir}") and read them with read_file; each '
        ".md segment has a lossless .jsonl twin.",
        "",
    ]
    if isinstance(body, tuple):
        intent, summary, next_steps = body
        lines += [_SECTION_INTENT, intent, "", _SECTION_SUMMARY, summary, ""]
        tail = ["", _SECTION_NEXT, next_steps]
    else:
        intent = _section(body, _SECTION_INTENT) or state.intent
        summary = _section(body, _SECTION_SUMMARY) or body
        lines.append(body)
        lines.append("")
        tail = []
    lines += [
        "## Artifacts",
        f"Files written or edited: {_listing(state.files)}",
        f"Offloaded content (read with read_file): {_listing(state.offloaded)}",
        f"Transcript segments: {_listing(transcripts)}",
        *tail,
    ]
    final = SummaryState(
        next_index=state.next_index,
        transcripts=transcripts,
        files=state.files,
        offloaded=state.offloaded,
        intent=intent,
        summary=summary,
    )
    metadata = {**final.to_metadata(), "source": source}
    return HumanMessage(
        content="\n".join(lines), id=message_id, additional_kwargs={"ctxfs": metadata}
    )


def _listing(paths: Sequence[str]) -> str:
    if not paths:
        return "none"
    if len(paths) <= _MAX_LISTED:
        return ", ".join(paths)
    hidden = len(paths) - _MAX_LISTED
    return f"{', '.join(paths[-_MAX_LISTED:])} (and {hidden} earlier)"
