"""Typed records of what the context engine and its integrations did: events and results.

Every event is a frozen dataclass deriving from :class:`ContextEvent`; match on the class::

    for event in result.events:
        match event:
            case ToolResultOffloaded(path=path, tokens=tokens):
                log.info("offloaded %s tokens to %s", tokens, path)
            case OffloadFailed(reason=reason):
                log.warning("kept inline: %s", reason)

New kinds of events (clearing, summarization, archiving) are new subclasses; code that matches
on the ones it knows keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from langchain_core.messages import BaseMessage, ToolMessage

__all__ = [
    "ArchiveFailed",
    "ArchiveRepaired",
    "CompactionResult",
    "ContextEvent",
    "ContextMeasured",
    "ContextOverBudget",
    "MediaOffloaded",
    "MessageOffloaded",
    "OffloadFailed",
    "OffloadResult",
    "PrefixChanged",
    "Summarized",
    "ToolInputOffloaded",
    "ToolResultCleared",
    "ToolResultOffloaded",
    "ToolResultOutcome",
    "describe_event",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextEvent:
    """Base class of everything the engine reports."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultOffloaded(ContextEvent):
    """A tool result was saved to a file and replaced by a pointer.

    Attributes:
        tool_call_id: The tool call the result answers.
        tool_name: The tool's name, if the message carried it.
        path: Where the full text lives in the workspace.
        lines: Lines in the full text.
        chars: Characters in the full text.
        tokens: Tokens in the full text.
        tokens_after: Tokens in the pointer that replaced it.
    """

    tool_call_id: str
    tool_name: str | None
    path: str
    lines: int
    chars: int
    tokens: int
    tokens_after: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MediaOffloaded(ContextEvent):
    """A media block of a tool result (image, audio, video, file) was saved to a binary file
    and replaced by a text reference naming it.

    Attributes:
        tool_call_id: The tool call the result answers.
        tool_name: The tool's name, if the message carried it.
        path: The file that holds the block's decoded payload, byte for byte.
        media_type: The block's MIME type.
        size: Bytes in the file.
        tokens: What providers bill for the block, as ctxfs counts it.
        tokens_after: Tokens of the reference that replaced it.
    """

    tool_call_id: str
    tool_name: str | None
    path: str
    media_type: str
    size: int
    tokens: int
    tokens_after: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputOffloaded(ContextEvent):
    """One argument of an old tool call was saved to a file and replaced by a pointer.

    Attributes:
        tool_call_id: The tool call whose argument moved.
        tool_name: The tool's name.
        arg: The argument's name (e.g. ``content``).
        path: Where the byte-exact copy lives in the workspace.
        target_path: The file the tool itself wrote (its ``file_path`` argument), if known.
        chars: Characters in the argument.
        tokens: Tokens in the argument.
    """

    tool_call_id: str
    tool_name: str
    arg: str
    path: str
    target_path: str | None
    chars: int
    tokens: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageOffloaded(ContextEvent):
    """A request over its limit after every other step: a large text of a user or AI
    message, or the raw arguments of a call the model botched, was saved to a file and
    replaced by a pointer with a preview.

    Attributes:
        message_id: The message whose text moved.
        role: ``"user"`` or ``"assistant"``.
        part: ``"content"``, or ``"invalid_tool_call"`` for the arguments of
            ``invalid_tool_calls[index]``.
        index: For ``invalid_tool_call``: the call's position; 0 otherwise.
        tool_call_id: For ``invalid_tool_call``: the call's id, if it has one.
        path: Where the byte-exact copy lives in the workspace.
        chars: Characters in the text.
        tokens: Tokens in the text.
        tokens_after: Tokens of the pointer that replaced it.
    """

    message_id: str | None
    role: Literal["user", "assistant"]
    part: Literal["content", "invalid_tool_call"]
    index: int = 0
    tool_call_id: str | None = None
    path: str
    chars: int
    tokens: int
    tokens_after: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultCleared(ContextEvent):
    """An old tool result was cleared: replaced by a short pointer to its full text.

    Attributes:
        tool_call_id: The tool call the result answers.
        tool_name: The tool's name, if the message carried it.
        path: Where the full text can be read back: the file saved now (``kind="saved"``),
            the file it was offloaded to earlier (``"offloaded"``), or the saved file or
            folder the result showed (``"reread"``).
        kind: ``"saved"`` (written to the workspace now), ``"offloaded"`` (already an
            offload pointer: no new file) or ``"reread"`` (a recovery tool's view of content
            ctxfs had saved: no new file; repeating the call shows it again).
        tokens: Tokens of the message before clearing.
        tokens_after: Tokens of the message after (the pointer).
    """

    tool_call_id: str
    tool_name: str | None
    path: str
    kind: Literal["saved", "offloaded", "reread"]
    tokens: int
    tokens_after: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffloadFailed(ContextEvent):
    """Offloading was attempted but the content stayed inline; nothing was lost.

    Attributes:
        tool_call_id: The tool call concerned.
        reason: What went wrong, for a log line.
        path: The file that could not be written or verified, if one was chosen.
        arg: For a tool input, the argument's name.
    """

    tool_call_id: str
    reason: str
    path: str | None = None
    arg: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Summarized(ContextEvent):
    """Old messages were archived as a transcript segment and replaced by a summary.

    Attributes:
        segment_paths: The segment's files: the lossless ``.jsonl`` and the readable ``.md``.
        messages_archived: How many messages left the conversation.
        first_index: Position of the first of them in the original thread.
        tokens_before: Tokens of the history before summarizing.
        tokens_after: Tokens after (system prompt, summary, kept messages).
        summary_chars: Characters in the summary message.
        source: ``"model"``, ``"extractive"`` (no model, or the model failed) or ``"index"``
            (a re-run reused the summary already recorded for the same segment).
        model_error: Why the model's summary was not used, when there was a model.
    """

    segment_paths: tuple[str, ...]
    messages_archived: int
    first_index: int
    tokens_before: int
    tokens_after: int
    summary_chars: int
    source: str
    model_error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveFailed(ContextEvent):
    """The transcript could not be archived, so nothing was summarized or dropped.

    Attributes:
        reason: What went wrong, for a log line.
    """

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveRepaired(ContextEvent):
    """A thread's transcript index was missing, torn or stale, and was rebuilt from the
    segments' own records; nothing committed was lost.

    Attributes:
        reason: What was wrong and what was done, for a log line.
    """

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefixChanged(ContextEvent):
    """Compaction changed messages a provider's prompt cache held: from ``first_changed`` on,
    the next request is read anew instead of from the cache.

    Attributes:
        first_changed: Position (in the history before compaction) of the first message
            that changed or left.
        tokens_given_up: Cached tokens the compaction gave up: those of the messages from
            ``first_changed`` on that the previous request of the same thread (what this
            engine's last compaction of it returned) already held. Messages appended since
            were never cached and do not count; on a thread's first compaction by this engine
            every message from ``first_changed`` on counts.
    """

    first_changed: int
    tokens_given_up: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextOverBudget(ContextEvent):
    """The request could not be brought within the window; it is sent as it is.

    Sent anyway because only the provider knows for sure: its count of the tool schemas and
    framing differs a little from ctxfs's, and if it refuses, the LangChain middleware
    compacts harder and retries once.

    Attributes:
        tokens: Tokens of the request (system, messages, tool schemas).
        limit: What it may hold: the window minus the room kept for the answer.
        system: Tokens of the system message(s) given apart from the messages.
        tools: Tokens of the tool schemas.
        messages: Tokens of the messages.
        reason: Why compaction could not do more (e.g. the system prompt alone is too big).
    """

    tokens: int
    limit: int
    system: int
    tools: int
    messages: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextMeasured(ContextEvent):
    """Before a model call: how large the request was, and is after compaction.

    The request is what the model is sent: the system message, the messages and the tool
    schemas (the parts the integration could see).

    Attributes:
        thread_id: The conversation (with its sub-thread, if any).
        messages: Messages the model will be sent.
        tokens_before: Tokens of the request before compaction.
        tokens_after: Tokens of the request the model will be sent (equal when nothing
            changed).
        system_tokens: Of ``tokens_after``, the system message given apart from the messages.
        tool_tokens: Of ``tokens_after``, the tool schemas.
        message_tokens: Of ``tokens_after``, the messages.
        max_input_tokens: The policy's window, for comparison.
        limit: The most the request may hold: the window minus the room for the answer.
    """

    thread_id: str
    messages: int
    tokens_before: int
    tokens_after: int
    system_tokens: int = 0
    tool_tokens: int = 0
    message_tokens: int = 0
    max_input_tokens: int
    limit: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionResult:
    """What :meth:`ContextEngine.compact` returns.

    Attributes:
        messages: The new history: system prompt(s), the summary if one was made, and the
            kept messages. Unchanged messages are the input objects themselves.
        events: What moved where (offloads, the summary, failures), in order.
        tokens_before: Tokens of the input history.
        tokens_after: Tokens of ``messages``.
        fixed_tokens: Tokens of the parts of the request given apart from the messages: a
            system message and the tool schemas (0 when none were given).
        target: The most tokens the request (``fixed_tokens`` plus the messages) should hold
            after compaction (:attr:`ContextPolicy.summary_target_tokens`).
        reached_target: Whether ``request_tokens <= target``.
        reason: Why the target was not reached, or ``None`` when it was.
    """

    messages: list[BaseMessage]
    events: tuple[ContextEvent, ...] = field(default=())
    tokens_before: int = 0
    tokens_after: int = 0
    fixed_tokens: int = 0
    target: int = 0
    reached_target: bool = True
    reason: str | None = None

    @property
    def request_tokens(self) -> int:
        """Tokens of the whole request after compaction: ``fixed_tokens + tokens_after``."""
        return self.fixed_tokens + self.tokens_after

    @property
    def summarized(self) -> bool:
        """Whether a summary replaced old messages."""
        return any(isinstance(e, Summarized) for e in self.events)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultOutcome:
    """What :meth:`ContextEngine.offload_tool_result_detailed` returns.

    Attributes:
        message: The message to keep: a pointer, or the input itself when nothing moved.
        event: What happened to its text, or ``None`` when the result was small, exempt or
            a pointer.
        media: One event per media block moved to a file (or left inline after a failure),
            before the text step.
    """

    message: ToolMessage
    event: ContextEvent | None = None
    media: tuple[ContextEvent, ...] = ()

    @property
    def events(self) -> tuple[ContextEvent, ...]:
        """Every event, in order: the media blocks', then the text's."""
        return (*self.media, self.event) if self.event is not None else self.media


@dataclass(frozen=True, slots=True, kw_only=True)
class OffloadResult:
    """What :meth:`ContextEngine.offload_tool_inputs` and ``clear_tool_results`` return.

    Attributes:
        messages: A new list; unchanged messages are the input objects themselves.
        events: One event per argument or result moved, or left inline after a failure.
        tokens_before: Tokens of the input history.
        tokens_after: Tokens of ``messages``.
    """

    messages: list[BaseMessage]
    events: tuple[ContextEvent, ...] = field(default=())
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def changed(self) -> bool:
        """Whether any message was replaced."""
        return any(isinstance(e, ToolInputOffloaded | ToolResultCleared) for e in self.events)


def describe_event(event: ContextEvent) -> str:
    """One line for a person: what moved, how big, and where it is now.

    The demo's live view and ``ctxfs replay`` print events with it.
    """
    match event:
        case ToolResultOffloaded():
            tool = event.tool_name or "a tool"
            return f"result of {tool} ({event.tokens:,} tokens) offloaded -> {event.path}"
        case MediaOffloaded():
            tool = event.tool_name or "a tool"
            return (
                f"{event.media_type} of {tool} ({event.size:,} bytes, {event.tokens:,} tokens) "
                f"offloaded -> {event.path}"
            )
        case ToolInputOffloaded():
            return (
                f"input {event.tool_name}.{event.arg} ({event.tokens:,} tokens) "
                f"offloaded -> {event.path}"
            )
        case ToolResultCleared():
            tool = event.tool_name or "a tool"
            how = {"saved": "saved now", "offloaded": "saved earlier", "reread": "re-read"}
            return (
                f"old result of {tool} cleared ({event.tokens:,} -> {event.tokens_after:,} "
                f"tokens, {how[event.kind]}) -> {event.path}"
            )
        case Summarized():
            where = ", ".join(event.segment_paths) or "?"
            return (
                f"summarized {event.messages_archived} messages ({event.source}; "
                f"{event.tokens_before:,} -> {event.tokens_after:,} tokens), "
                f"transcript -> {where}"
            )
        case OffloadFailed():
            return f"offload failed, kept inline: {event.reason}"
        case ArchiveFailed():
            return f"archive failed, nothing dropped: {event.reason}"
        case PrefixChanged():
            return (
                f"prompt prefix changed at message {event.first_changed} "
                f"({event.tokens_given_up:,} cached tokens given up)"
            )
        case ArchiveRepaired():
            return f"transcript index repaired: {event.reason}"
        case ContextOverBudget():
            return (
                f"request over budget: {event.tokens:,} tokens for a limit of "
                f"{event.limit:,} (system {event.system:,}, tools {event.tools:,}, messages "
                f"{event.messages:,}): {event.reason}"
            )
        case ContextMeasured():
            return (
                f"request {event.tokens_before:,} -> {event.tokens_after:,} tokens of "
                f"{event.limit:,} (system {event.system_tokens:,}, tools {event.tool_tokens:,}, "
                f"{event.messages} messages {event.message_tokens:,})"
            )
    describe = getattr(event, "describe", None)
    if callable(describe):  # an event defined outside the engine says what it is itself
        return str(describe())
    path = getattr(event, "path", None)
    return f"{type(event).__name__}{f' -> {path}' if path else ''}"
