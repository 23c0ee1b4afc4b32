"""What keeps a thread: the references a retained thread, or the workspace itself, holds.

A rule is a callable that, given a :class:`RuleContext`, yields :class:`Reference` s: a
workspace path (a file or a folder) or a thread id that must stay. It is asked once with
``thread=None`` for what the workspace itself holds (long-term memory, a registry of your
own), and once for each thread that stays, for what that thread points to; a thread that
a reference reaches stays too, with everything it points to in turn. The rules ctxfs ships:

- :func:`pointer_rule`: the pointers in a thread's transcripts. Every message of every
  ``.jsonl`` segment is read (the transcripts are lossless): its result and input pointers
  (:mod:`ctxfs._pointers`, the paths :func:`~ctxfs.resolve_pointers` would read), the
  summary's transcripts and offloaded paths; and any thread folder's path written anywhere
  in a segment's text counts too (a re-read's call, a path the model quoted). Every
  ``.json`` file of the folder (the index, the segment records with the summaries that
  replaced them, the sub-task record with its artifacts, records other versions add) is read
  as JSON, and each string naming a thread folder's path counts. What offloaded results and
  inputs hold is data, not a reference, and is not read.
- :func:`memory_rule`: every file under ``/memories`` read generically (JSON, JSON lines or
  text): a string equal to a thread's id or folder name, or naming a path of a thread's
  folders, keeps that thread (a memory version records the thread it came from).
- :func:`messages_rule`: the pointers in the messages a thread keeps in its agent's state
  (a checkpointer), which the workspace does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from ctxfs._archive._transcripts import decode_jsonl
from ctxfs._errors import PathNotFoundError, WorkspaceError
from ctxfs._json import loads_bounded
from ctxfs._layout import MEMORIES_DIR, TRANSCRIPTS_DIR, safe_name
from ctxfs._pointers._pointer import METADATA_KEY, input_pointers, result_pointer
from ctxfs._summary._message import summary_state
from ctxfs._workspace._workspace import Workspace
from ctxfs.lifecycle._files import list_files
from ctxfs.lifecycle._threads import ThreadInfo

__all__ = [
    "DEFAULT_RULES",
    "Reference",
    "RetentionRule",
    "RuleContext",
    "memory_rule",
    "message_references",
    "messages_rule",
    "pointer_rule",
]

_AREA_PATH = re.compile(
    r"(?<![A-Za-z0-9._-])/(?:tool_results|tool_inputs|transcripts)/[A-Za-z0-9._-]+"
)
"""A thread's folder in an SDK area (or a path below it), named anywhere in a string; an
area on its own (``ls /tool_results``) names no thread."""


@dataclass(frozen=True, slots=True)
class Reference:
    """Something that must stay: a workspace path, or a whole thread.

    Attributes:
        path: A file or folder of the workspace (a folder keeps every thread below it).
        thread_id: A thread id (or a thread's folder name).
        why: Where the reference was found, for the plan's reasons.
        source: The workspace file that holds it, when it is one: a collection deletes that
            file before what it points to. ``None`` (a rule that does not say) stands for
            every file of the holding thread's transcript folder.
    """

    path: str | None = None
    thread_id: str | None = None
    why: str = ""
    source: str | None = None


@dataclass(frozen=True, slots=True)
class RuleContext:
    """What a rule is asked about.

    Attributes:
        workspace: The workspace being collected.
        thread: The thread whose references are asked for, or ``None`` for what the
            workspace itself holds.
        threads: Every thread of the workspace (sub-agent threads included).
    """

    workspace: Workspace
    thread: ThreadInfo | None
    threads: tuple[ThreadInfo, ...]


RetentionRule = Callable[[RuleContext], Iterable[Reference]]
"""Yields the references a thread (or, for ``thread=None``, the workspace) holds."""


def _sdk_paths(value: object) -> Iterator[str]:
    """Every string in a JSON value (keys too) that is an SDK area path or names one."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield from _AREA_PATH.findall(item)
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _strings(value: object) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def message_references(
    messages: Sequence[BaseMessage], why: str, *, source: str | None = None
) -> Iterator[Reference]:
    """The workspace paths ctxfs's pointers and summaries in ``messages`` stand for
    (``source``: the file the messages were read from, if any)."""
    for message in messages:
        held = result_pointer(message)
        if held is not None:
            yield Reference(path=held.path, why=why, source=source)
        for pointer in input_pointers(message).values():
            yield Reference(path=pointer.path, why=why, source=source)
        state = summary_state(message)
        if state is not None:
            for path in (*state.transcripts, *state.offloaded):
                yield Reference(path=path, why=why, source=source)
        for path in _sdk_paths(message.additional_kwargs.get(METADATA_KEY)):
            yield Reference(path=path, why=why, source=source)


def _read(workspace: Workspace, path: str) -> bytes:
    try:
        return workspace.read_bytes(path)
    except PathNotFoundError as exc:
        # listed, then gone: what it pointed to is unknown, so nothing may be collected
        raise WorkspaceError(
            f"{path} was listed but could not be read; nothing is collected (run again)",
            path=path,
        ) from exc


def pointer_rule(context: RuleContext) -> Iterator[Reference]:
    """The pointers in a thread's transcripts (see the module docstring)."""
    thread = context.thread
    if thread is None:
        return
    folder = f"{TRANSCRIPTS_DIR}/{thread.key}/"
    for stamped in thread.files:
        if not stamped.path.startswith(folder):
            continue
        name = stamped.path[len(folder) :]
        if name.endswith(".jsonl"):
            yield from _jsonl_references(_read(context.workspace, stamped.path), stamped.path)
        elif name.endswith(".json"):
            data = _read(context.workspace, stamped.path)
            try:
                value: object = loads_bounded(data)
            except (ValueError, UnicodeDecodeError):
                value = data.decode("utf-8", "replace")  # torn: every path in its text
            for path in _sdk_paths(value):
                yield Reference(path=path, why=f"named in {stamped.path}", source=stamped.path)


def _jsonl_references(data: bytes, source: str) -> Iterator[Reference]:
    why = f"a pointer in {source}"
    try:
        messages = decode_jsonl(data)
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError):
        messages = None
    if messages is not None:
        yield from message_references(messages, why, source=source)
    # and every thread folder's path anywhere in the text: what the messages say (a
    # re-read's call, a summary's prose), what a message that no longer parses or a later
    # format carries
    text = data.decode("utf-8", "replace")
    for path in dict.fromkeys(_AREA_PATH.findall(text)):
        yield Reference(path=path, why=why, source=source)


def memory_rule(context: RuleContext) -> Iterator[Reference]:
    """The threads long-term memory names (see the module docstring)."""
    if context.thread is not None:
        return
    keys = {thread.key for thread in context.threads}
    for stamped in list_files(context.workspace, MEMORIES_DIR):
        data = _read(context.workspace, stamped.path)
        why = f"named in {stamped.path}"
        for text in _memory_strings(data):
            yield from (Reference(path=p, why=why) for p in _AREA_PATH.findall(text))
            # an id on its own, or in prose ("learned in thread main"): among its words.
            # A thread is known by its folder name, which its id gives even when the
            # workspace no longer says the id (only a hashed results folder is left).
            for word in dict.fromkeys((text, *_words_of(text))):
                for key in (word, safe_name(word)):
                    if key in keys:
                        yield Reference(thread_id=key, why=why)


def _memory_strings(data: bytes) -> Iterator[str]:
    """The strings of a memory file: JSON, JSON lines, or else its text."""
    text = data.decode("utf-8", "replace")
    try:
        yield from _strings(loads_bounded(text))
        return
    except ValueError:
        pass
    for line in text.splitlines():
        try:
            yield from _strings(loads_bounded(line))
        except ValueError:
            yield line


def _words_of(line: str) -> Iterator[str]:
    yield from re.findall(r"[^\s\"'`<>()\[\],;]+", line)


def messages_rule(messages: Callable[[str], Sequence[BaseMessage] | None]) -> RetentionRule:
    """A rule for the messages each thread keeps in its agent's state.

    The workspace holds what a compaction moved out of the context; the messages still in
    the context (with their pointers) are in the agent's state, which ctxfs does not see.
    Pass a function that returns them for a thread id, from a LangGraph checkpointer say::

        messages_rule(lambda t: graph.get_state({"configurable": {"thread_id": t}})
                      .values.get("messages"))

    Args:
        messages: Returns a thread's kept messages, or ``None`` if it has none.
    """

    def rule(context: RuleContext) -> Iterator[Reference]:
        thread = context.thread
        if thread is None or thread.thread_id is None:
            return
        held = messages(thread.thread_id) or ()
        yield from message_references(held, f"a pointer in the kept messages of {thread.name!r}")

    return rule


DEFAULT_RULES: tuple[RetentionRule, ...] = (pointer_rule, memory_rule)
"""The rules a collection applies unless told otherwise."""
