"""The summary message that replaces archived messages: its text, its tag and its state.

The summary is a :class:`~langchain_core.messages.HumanMessage` (portable: providers refuse
or ignore system messages in mid-conversation), whose content starts with
:data:`SUMMARY_TAG` and whose ``additional_kwargs["ctxfs"]`` holds the structured state
(``kind="summary"``, the transcript paths, files touched, offloaded paths, the intent, and
``next_index``: the position in the original thread of the first message after it). ctxfs
recognises a summary by that metadata (:func:`is_summary`) and folds it into the next one.

The text has four sections: *Session intent*, *Summary*, *Artifacts* (files written or
edited, offloaded paths, transcript segments: always filled in by ctxfs, never by the model)
and *Next steps*. Who writes the other three is :mod:`ctxfs._summarizer`'s business.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs._messages import target_path_of
from ctxfs._pointers import digest, input_pointers, result_pointer

__all__ = [
    "SECTION_INTENT",
    "SECTION_NEXT",
    "SECTION_SUMMARY",
    "SUMMARY_TAG",
    "SummaryState",
    "build_summary_message",
    "collect_artifacts",
    "is_summary",
    "summary_state",
]

SUMMARY_TAG = "[ctxfs: conversation summary]"
"""First line of every summary message."""

SECTION_INTENT = "## Session intent"
SECTION_SUMMARY = "## Summary"
SECTION_NEXT = "## Next steps"

_WRITE_TOOLS = frozenset(
    {"write_file", "edit_file", "write", "edit", "multiedit", "create_file", "notebookedit"}
)
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
    if not isinstance(data, Mapping) or data.get("kind") != "summary":
        return None
    content = message.content
    if not isinstance(content, str):
        return None
    # Only a summary ctxfs wrote, as it wrote it: its metadata holds a digest of its text
    # (summaries from before the digest are known by their tag), so metadata copied onto
    # another message, or a summary whose text was replaced, is a message like any other.
    recorded = data.get("digest")
    if recorded is None:
        return data if content.startswith(SUMMARY_TAG) else None
    return data if recorded == digest(content) else None


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
            held_inputs = input_pointers(message)
            for index, call in enumerate(message.tool_calls):
                for arg in call["args"]:
                    if (index, arg) in held_inputs:
                        offloaded[held_inputs[index, arg].path] = None
        elif isinstance(message, ToolMessage):
            held = result_pointer(message)
            if held is not None and held.kind != "reread":
                offloaded[held.path] = None
    return tuple(files), tuple(offloaded)


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
        lines += [SECTION_INTENT, intent, "", SECTION_SUMMARY, summary, ""]
        tail = ["", SECTION_NEXT, next_steps]
    else:
        intent = _section(body, SECTION_INTENT) or state.intent
        summary = _section(body, SECTION_SUMMARY) or body
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
    text = "\n".join(lines)
    metadata = {**final.to_metadata(), "source": source, "digest": digest(text)}
    return HumanMessage(content=text, id=message_id, additional_kwargs={"ctxfs": metadata})


def _listing(paths: Sequence[str]) -> str:
    if not paths:
        return "none"
    if len(paths) <= _MAX_LISTED:
        return ", ".join(paths)
    hidden = len(paths) - _MAX_LISTED
    return f"{', '.join(paths[-_MAX_LISTED:])} (and {hidden} earlier)"
