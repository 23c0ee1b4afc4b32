"""Checks on a branched transcript archive that read the store directly, not the index.

:func:`check_branch` takes one history as its agent saw it (``everything``, the originals)
and the context the engine holds for it now, and asserts that every message of the history
is, byte for byte, in a committed segment of the chain the context's summary names (walked
through the segments' own record files, parent by parent) or in the context itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, messages_to_dict

from ctxfs import Workspace, is_summary, resolve_pointers
from ctxfs._archive._codec import decode_jsonl, sha
from ctxfs._archive._segment import segment_number, thread_transcript_dir
from ctxfs._summary._message import summary_state


def records(workspace: Workspace, thread: str) -> dict[int, dict[str, Any]]:
    """The thread's segment records, by number, as stored (every one that parses)."""
    folder = thread_transcript_dir(thread)
    if not workspace.exists(folder):
        return {}
    out: dict[int, dict[str, Any]] = {}
    for entry in workspace.ls(folder):
        number = segment_number(entry.name)
        if number is not None and entry.name.endswith(".json"):
            try:
                out[number] = json.loads(workspace.read_bytes(entry.path))
            except ValueError:
                continue
    return out


def chain_messages(workspace: Workspace, thread: str, last: int) -> list[BaseMessage]:
    """The messages of segment ``last`` and of every segment it continues, oldest first,
    read from the record and JSONL files (each checked against its record's SHA-256)."""
    stored = records(workspace, thread)
    numbers: list[int] = []
    current: int | None = last
    while current:
        assert current in stored, f"segment {current} of {thread!r} has no record"
        numbers.append(current)
        parent = stored[current].get("parent")
        assert parent is None or parent < current
        current = parent
    out: list[BaseMessage] = []
    for number in reversed(numbers):
        record = stored[number]
        data = workspace.read_bytes(record["jsonl_path"])
        assert sha(data) == record["jsonl_sha256"], f"segment {number} is not as recorded"
        out += decode_jsonl(data)
    return out


def last_segment(context: Sequence[BaseMessage], thread: str) -> int | None:
    """The last segment of ``thread`` the summary in ``context`` names, if any."""
    folder = thread_transcript_dir(thread) + "/"
    for message in context:
        if is_summary(message):
            state = summary_state(message)
            assert state is not None
            own = [p for p in state.transcripts if p.startswith(folder)]
            return segment_number(own[-1]) if own else None
    return None


def check_branch(
    workspace: Workspace,
    thread: str,
    everything: Sequence[BaseMessage],
    context: Sequence[BaseMessage],
) -> list[BaseMessage]:
    """Asserts that ``everything`` (system messages aside) is the archived chain the
    context's summary names followed by the context's own messages (what ctxfs moved to
    files read back), byte for byte.

    Returns the archived part.
    """
    last = last_segment(context, thread)
    archived = chain_messages(workspace, thread, last) if last else []
    kept = [m for m in context if not _made_by_ctxfs(m) and m.type != "system"]
    want = [m for m in everything if m.type != "system"]
    # what ctxfs moved to files (a text too large for a request still over its limit) read back
    got = resolve_pointers([*archived, *kept], workspace, thread_id=thread)
    assert [m.id for m in got] == [m.id for m in want]
    assert messages_to_dict(got) == messages_to_dict(want)
    return archived


_MADE = {"summary", "pinned", "in_view"}  # what ctxfs adds to a context, not the agent's


def _made_by_ctxfs(message: BaseMessage) -> bool:
    meta = message.additional_kwargs.get("ctxfs")
    return is_summary(message) or (isinstance(meta, dict) and meta.get("kind") in _MADE)


def named_segments(context: Sequence[BaseMessage], thread: str) -> list[int]:
    """The numbers of this thread's segments the summary in ``context`` names."""
    folder = thread_transcript_dir(thread) + "/"
    for message in context:
        if is_summary(message):
            state = summary_state(message)
            assert state is not None
            numbers = [segment_number(p) for p in state.transcripts if p.startswith(folder)]
            return [n for n in numbers if n is not None]
    return []


def own_chain(workspace: Workspace, thread: str, last: int) -> list[int]:
    """The numbers of segment ``last`` and the segments it continues, oldest first."""
    stored = records(workspace, thread)
    out: list[int] = []
    current: int | None = last
    while current:
        out.append(current)
        current = stored[current].get("parent")
    return out[::-1]
