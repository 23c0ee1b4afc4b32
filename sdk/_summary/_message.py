"""The summary message that replaces archived messages: its text, its tag and its state.

The summary is a :class:`~langchain_core.messages.HumanMessage` (portable: providers refuse
or ignore system messages in mid-conversation), whose content starts with
:data:`SUMMARY_TAG` and whose ``additional_kwargs["ctxfs"]`` holds the structured state
(``kind="summary"``, the latest transcript segments and how many there are in all, the files
touched and offloaded paths most recently seen, the intent, and ``next_index``: the position
in the original thread of the first message after it). ctxfs recognises a summary by that
metadata (:func:`is_summary`) and folds it into the next one.

The state is bounded: it holds the :data:`RECENT_SEGMENTS` latest segments and the
:data:`MAX_LISTED` latest files and offloaded paths, never everything so far, so a summary
and the checkpoint that carries it stay the same size however long the thread grows. Every
segment is in the thread's transcript folder (and its index); every file name is in them.
Summaries written with the cumulative lists of metadata version 1 are still read (their
lists are cut to the same bounds).

The text has four sections: *Session intent*, *Summary*, *Artifacts* (files written or
edited, offloaded paths, transcript segments: always filled in by ctxfs, never by the model)
and *Next steps*. Who writes the other three is :mod:`ctxfs._summary._body`'s business.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeGuard

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs._messages import target_path_of
from ctxfs._pointers._pointer import digest, input_pointers, result_pointer
from ctxfs._sections import neutralize, one_line, quote_lines

__all__ = [
    "MAX_LISTED",
    "RECENT_SEGMENTS",
    "SECTION_INTENT",
    "SECTION_NEXT",
    "SECTION_SUMMARY",
    "SUMMARY_TAG",
    "SummaryState",
    "build_summary_message",
    "collect_artifacts",
    "is_summary",
    "next_state",
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

MAX_LISTED = 30
"""How many files written and offloaded paths a summary names (the latest ones)."""

RECENT_SEGMENTS = 5
"""How many transcript segments a summary names (the latest ones)."""

_VERSION = 2  # 1 held every transcript, file and offloaded path so far


@dataclass(frozen=True, slots=True)
class SummaryState:
    """What a summary message carries forward into the next one; bounded in size.

    Attributes:
        next_index: Position in the original thread of the first message after the summary.
        transcripts: The latest readable transcript segments (``.md``), oldest first, at
            most :data:`RECENT_SEGMENTS`.
        segments: How many segments the thread's summaries replaced in all (at least
            ``len(transcripts)``; the others are in the same transcript folder).
        files: The latest files written or edited by the agent, at most :data:`MAX_LISTED`.
        offloaded: The latest workspace paths of offloaded tool results and inputs, at most
            :data:`MAX_LISTED`.
        earlier_files: Whether more files were written, before those ``files`` names.
        earlier_offloaded: Whether more content was offloaded, before what ``offloaded``
            names.
        intent: The session intent section.
        summary: The summary section.
    """

    next_index: int
    transcripts: tuple[str, ...] = ()
    segments: int = 0
    files: tuple[str, ...] = ()
    offloaded: tuple[str, ...] = ()
    earlier_files: bool = False
    earlier_offloaded: bool = False
    intent: str = ""
    summary: str = ""

    @property
    def segment_count(self) -> int:
        """How many segments there are in all (``segments``, or the ones named)."""
        return max(self.segments, len(self.transcripts))

    def to_metadata(self) -> dict[str, Any]:
        """Returns the JSON-ready ``additional_kwargs["ctxfs"]`` value."""
        return {
            "kind": "summary",
            "version": _VERSION,
            "next_index": self.next_index,
            "transcripts": list(self.transcripts[-RECENT_SEGMENTS:]),
            "segments": self.segment_count,
            "files": list(self.files[-MAX_LISTED:]),
            "offloaded": list(self.offloaded[-MAX_LISTED:]),
            "earlier_files": self.earlier_files or len(self.files) > MAX_LISTED,
            "earlier_offloaded": self.earlier_offloaded or len(self.offloaded) > MAX_LISTED,
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
    """Returns the state a ctxfs summary carries, or ``None`` for any other message.

    A summary of metadata version 1 (every path so far) is read within the same bounds as
    a current one: its latest entries, with the others counted or flagged as earlier.
    """
    data = _metadata(message)
    if data is None:
        return None
    next_index = data.get("next_index")
    if not _count(next_index):
        return None

    def strings(key: str) -> tuple[str, ...]:
        value = data.get(key)
        if not isinstance(value, list):
            return ()
        return tuple(v for v in value if isinstance(v, str))

    transcripts, files, offloaded = strings("transcripts"), strings("files"), strings("offloaded")
    segments = data.get("segments")
    intent, summary = data.get("intent"), data.get("summary")
    return SummaryState(
        next_index=next_index,
        transcripts=transcripts[-RECENT_SEGMENTS:],
        segments=max(segments if _count(segments) else 0, len(transcripts)),
        files=files[-MAX_LISTED:],
        offloaded=offloaded[-MAX_LISTED:],
        earlier_files=data.get("earlier_files") is True or len(files) > MAX_LISTED,
        earlier_offloaded=data.get("earlier_offloaded") is True or len(offloaded) > MAX_LISTED,
        intent=intent if isinstance(intent, str) else "",
        summary=summary if isinstance(summary, str) else "",
    )


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# -- artifacts ------------------------------------------------------------------------------


def collect_artifacts(
    messages: Sequence[BaseMessage], previous: SummaryState | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Returns the files written or edited and the offloaded paths, previous ones first.

    A file counts as written when a tool call named like a write/edit tool (``write_file``,
    ``edit_file``, ``Write``, ``Edit``, ``MultiEdit``...) names it in ``file_path`` or
    ``path``. Offloaded paths are those of the ctxfs pointers in tool results and arguments.
    A path seen again moves to the end (the latest come last); the answer is not cut to
    :data:`MAX_LISTED` (:func:`next_state` does that).
    """
    files: dict[str, None] = dict.fromkeys(previous.files if previous else ())
    offloaded: dict[str, None] = dict.fromkeys(previous.offloaded if previous else ())

    def seen(paths: dict[str, None], path: str) -> None:
        paths.pop(path, None)
        paths[path] = None

    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["name"].lower() in _WRITE_TOOLS:
                    target = target_path_of(call["args"])
                    if target:
                        seen(files, target)
            held_inputs = input_pointers(message)
            for index, call in enumerate(message.tool_calls):
                for arg in call["args"]:
                    if (index, arg) in held_inputs:
                        seen(offloaded, held_inputs[index, arg].path)
        elif isinstance(message, ToolMessage):
            held = result_pointer(message)
            if held is not None and held.kind != "reread":
                seen(offloaded, held.path)
    return tuple(files), tuple(offloaded)


def next_state(
    previous: SummaryState | None,
    messages: Sequence[BaseMessage],
    *,
    next_index: int,
    transcript: str,
    intent: str = "",
) -> SummaryState:
    """Returns the state of the summary that replaces ``messages``, folding in ``previous``.

    Bounded like every state: the latest segments and paths, with a count of the segments
    and flags for the paths that fell out.

    Args:
        previous: The state of the summary being folded in, if any.
        messages: The messages being archived.
        next_index: Position in the original thread of the first message after them.
        transcript: Their readable transcript segment.
        intent: The session intent section, until a body replaces it.
    """
    files, offloaded = collect_artifacts(messages, previous)
    before = previous.transcripts if previous is not None else ()
    count = previous.segment_count if previous is not None else 0
    transcripts = (*before, transcript)
    return SummaryState(
        next_index=next_index,
        transcripts=transcripts[-RECENT_SEGMENTS:],
        segments=count + 1,
        files=files[-MAX_LISTED:],
        offloaded=offloaded[-MAX_LISTED:],
        earlier_files=len(files) > MAX_LISTED or (previous is not None and previous.earlier_files),
        earlier_offloaded=len(offloaded) > MAX_LISTED
        or (previous is not None and previous.earlier_offloaded),
        intent=intent,
    )


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
    shown = state.transcripts[-RECENT_SEGMENTS:]
    older = state.segment_count - len(shown)
    lines = [
        SUMMARY_TAG,
        f"Earlier messages of this conversation (up to message {last}) were archived and "
        "replaced by this summary. Nothing was lost: the archived messages "
        f"{first_index}-{last} are in {shown[-1] if shown else transcript_dir}"
        + (f" (earlier parts: {', '.join(shown[:-1])})" if len(shown) > 1 else "")
        + (
            f" and {older} older segment{'s' if older > 1 else ''} (each .md names the segment "
            "it continues)"
            if older > 0
            else ""
        )
        + ".",
        f'Search them with grep (path "{transcript_dir}") and read them with read_file; each '
        ".md segment has a lossless .jsonl twin.",
        "",
    ]
    if isinstance(body, tuple):
        # the messages' own text: no line of it is one of the summary's headings
        intent, summary, next_steps = body
        lines += [SECTION_INTENT, quote_lines(intent), "", SECTION_SUMMARY, quote_lines(summary)]
        lines.append("")
        tail = ["", SECTION_NEXT, quote_lines(next_steps)]
    else:
        intent = _section(body, SECTION_INTENT) or state.intent
        summary = _section(body, SECTION_SUMMARY) or body
        lines.append(_quoted(body))
        lines.append("")
        tail = []
    named = "and earlier ones, named in the transcript segments"
    lines += [
        "## Artifacts",
        f"Files written or edited: {_listing(state.files, state.earlier_files and named)}",
        "Offloaded content (read with read_file): "
        + _listing(state.offloaded, state.earlier_offloaded and named),
        "Transcript segments: "
        + _listing(shown, older > 0 and f"and {older} earlier in {transcript_dir}"),
        *tail,
    ]
    final = replace(state, transcripts=shown, intent=intent, summary=summary)
    text = "\n".join(lines)
    metadata = {**final.to_metadata(), "source": source, "digest": digest(text)}
    return HumanMessage(content=text, id=message_id, additional_kwargs={"ctxfs": metadata})


def _quoted(text: str) -> str:
    """``text`` quoted line by line (:func:`ctxfs._sections.quote_lines`), but for the
    headings a summary model is asked to write: quoted text (a user's request, a model's
    answer repeating a web page) cannot forge ctxfs's ``## Artifacts``, a ``[ctxfs`` line
    or a role marker."""
    own = (SECTION_INTENT, SECTION_SUMMARY, SECTION_NEXT)
    # neutralized whole first: a tag split over two lines ("<", "/summary>") is a tag too
    return "\n".join(
        line.strip() if line.strip() in own else quote_lines(line)
        for line in neutralize(text).splitlines()
    )


def _listing(paths: Sequence[str], more: str | bool) -> str:
    """The latest paths (at most :data:`MAX_LISTED`), and where the earlier ones are."""
    if not paths:
        return "none"
    listed = [one_line(path) for path in paths[-MAX_LISTED:]]
    if not more and len(paths) > len(listed):
        more = "and earlier ones"
    return f"{', '.join(listed)} ({more})" if more else ", ".join(listed)
