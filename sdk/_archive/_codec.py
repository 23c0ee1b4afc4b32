"""The archive's formats: messages to lossless JSONL and to a readable Markdown twin.

- **JSONL** lines are ``json.dumps(messages_to_dict([m])[0], ensure_ascii=True)``: pure ASCII,
  so no exotic line separator can split a line; :func:`decode_jsonl` restores the messages
  exactly. Values JSON cannot hold are still archived: ``bytes`` as a tagged base64 string,
  anything else as a tagged ``repr``.
- **Markdown** holds each message's text and each string tool argument verbatim (tabs,
  quotes, non-ASCII, CRLF), inside fences longer than any backtick run of the text, so a
  ``grep`` for an exact line of a tool result hits it. Its first line gives the thread and
  the message range, from which a segment whose record is lost is described again
  (:func:`markdown_range`).

Pure functions over values: nothing here touches storage.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from ctxfs._errors import ArchiveError

__all__ = [
    "decode_jsonl",
    "encode_jsonl",
    "encode_lines",
    "joined",
    "json_bytes",
    "markdown_range",
    "markdown_thread",
    "render_markdown",
    "sha",
]

_MARKDOWN_RANGE = re.compile(rb"^# Transcript of thread .*, messages (\d+)-(\d+)\n")
_MARKDOWN_THREAD = re.compile(rb'^# Transcript of thread (".*"), messages \d+-\d+\n')


def sha(data: bytes) -> str:
    """Returns the SHA-256 of ``data``, hex."""
    return hashlib.sha256(data).hexdigest()


def markdown_range(markdown: bytes) -> tuple[int, int] | None:
    """Returns the (start, stop) message range a Markdown twin's heading gives, if any."""
    found = _MARKDOWN_RANGE.match(markdown)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)) + 1


def markdown_thread(markdown: bytes) -> str | None:
    """Returns the thread id a Markdown twin's heading gives, if any (check it against the
    folder it was found in: a heading is text anyone may have written)."""
    found = _MARKDOWN_THREAD.match(markdown)
    if found is None:
        return None
    try:
        thread = json.loads(found.group(1))
    except (ValueError, RecursionError):
        return None
    return thread if isinstance(thread, str) else None


def encode_jsonl(messages: Sequence[BaseMessage]) -> bytes:
    """Returns the lossless JSONL bytes of ``messages`` (ASCII, one message per line).

    Values JSON cannot hold are still archived: ``bytes`` as a tagged base64 string
    (restored exactly by :func:`decode_jsonl`), anything else as a tagged ``repr``.
    Lone surrogates are escaped as JSON allows (``\\udXXX``) and come back as they were.
    """
    return joined(encode_lines(messages))


def encode_lines(messages: Sequence[BaseMessage]) -> list[str]:
    """Returns the JSONL lines of :func:`encode_jsonl`, one per message, without newlines.

    Raises:
        ArchiveError: A message holds data no transcript can keep and give back: nested
            deeper than the JSON reader follows, or a container that holds itself.
    """
    lines = []
    for at, data in enumerate(messages_to_dict(list(messages))):
        try:
            line = _encode_line(data)
        except (RecursionError, ValueError) as exc:
            why = "nests too deeply" if isinstance(exc, RecursionError) else str(exc).lower()
            raise ArchiveError(
                f"message {at + 1} of the part to archive cannot be written as a transcript: "
                f"its data {why}"
            ) from None
        lines.append(line)
    return lines


def joined(lines: Sequence[str]) -> bytes:
    """Returns JSONL lines as the bytes of a segment file."""
    return ("\n".join(lines) + "\n").encode("ascii")


def _encode_line(data: object) -> str:
    line = json.dumps(data, ensure_ascii=True, default=_tagged)
    if _ESCAPE in line or _BYTES_TAG in line or _REPR_TAG in line:
        # a tag may be ctxfs's own or the message's data: escape the data's keys, so that
        # decoding gives back exactly what was there
        line = json.dumps(_escaped(data), ensure_ascii=True, default=_tagged)
    return line


def _escaped(value: object) -> object:
    if isinstance(value, dict):
        return {
            (_ESCAPE + k if isinstance(k, str) and k.startswith(_KEYS) else k): _escaped(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_escaped(v) for v in value]
    return value


def decode_jsonl(data: bytes) -> list[BaseMessage]:
    """Returns the messages of :func:`encode_jsonl` bytes.

    Raises:
        ValueError: ``data`` is not such bytes, however it fails: not ASCII, not JSON,
            nested past what the JSON reader follows, or JSON that is not messages (an
            object without ``type``, a list where a message belongs). A file of the archive
            is read from storage anyone may have edited: one kind of error for all of it.
    """
    try:
        lines = data.decode("ascii").split("\n")
        values = [json.loads(line, object_hook=_untagged) for line in lines if line]
        return messages_from_dict(values)
    except ValueError:
        raise
    except RecursionError as exc:
        raise ValueError("not the archive's JSON lines: nested too deeply") from exc
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"not the archive's JSON lines: {type(exc).__name__}: {exc}") from exc


_BYTES_TAG = "__ctxfs_bytes_base64__"
_REPR_TAG = "__ctxfs_repr__"
_ESCAPE = "__ctxfs_escaped__"
_KEYS = (_BYTES_TAG, _REPR_TAG, _ESCAPE)


def _tagged(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return {_BYTES_TAG: base64.b64encode(bytes(value)).decode("ascii")}
    return {_REPR_TAG: repr(value)}


def _untagged(data: dict[str, Any]) -> object:
    if len(data) == 1 and isinstance(data.get(_BYTES_TAG), str):
        return base64.b64decode(data[_BYTES_TAG])
    if any(isinstance(k, str) and k.startswith(_ESCAPE) for k in data):
        return {(k[len(_ESCAPE) :] if k.startswith(_ESCAPE) else k): v for k, v in data.items()}
    return data


def json_bytes(value: object, *, indent: int | None = None) -> bytes:
    """Returns ``value`` as ASCII JSON bytes, with a final newline (index files, records)."""
    text = json.dumps(value, ensure_ascii=True, indent=indent, default=_tagged)
    return (text + "\n").encode("ascii")


def _fence(text: str) -> str:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _verbatim(text: str) -> list[str]:
    fence = _fence(text)
    return [fence, text, fence] if text else ["(empty)"]


def _content_lines(message: BaseMessage) -> list[str]:
    content = message.content
    if isinstance(content, str):
        return _verbatim(content)
    out: list[str] = []
    for block in content:
        if isinstance(block, str):
            out += _verbatim(block)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            out += _verbatim(block["text"])
        else:
            raw = _json_line(block, sort_keys=True)
            clipped = raw if len(raw) <= 500 else f"{raw[:500]}… (complete in the .jsonl)"
            out.append(f"[{_inline(block.get('type', 'block'))} block] {clipped}")
    return out or ["(empty)"]


def _inline(value: object) -> str:
    """``value`` on the line it is shown on: as it is when every character of it prints,
    else as a JSON string (ASCII escapes), so a line break of any kind in an id or a name
    cannot start a line of its own (a ``## Message`` heading the thread never had)."""
    text = str(value)
    return text if text.isprintable() else json.dumps(text)


def _json_line(value: object, *, sort_keys: bool = False) -> str:
    """``value`` as JSON on one line: its non-ASCII characters as they are when they all
    print, else escaped (JSON leaves U+2028 and the like unescaped)."""
    shown = json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, default=repr)
    if shown.isprintable():
        return shown
    return json.dumps(value, sort_keys=sort_keys, default=repr)


def render_markdown(
    messages: Sequence[BaseMessage], *, thread_id: str, start: int, continues: str | None = None
) -> str:
    """Returns the readable Markdown twin of a segment.

    Each message gets a heading with its position in the thread and in the segment (``#N``,
    as ``history_read`` numbers it), its type and id; its text (and every string tool
    argument) follows verbatim in a fenced block. ``continues``: the file name of the
    segment this one continues ("" for a thread's first segment), said under the title, so
    a branch of a forked thread can be walked back from its latest segment. Ids and names
    are shown on their heading's line (as JSON strings when they hold a line break, a tab
    or another character that does not print).
    """
    stop = start + len(messages) - 1
    title = json.dumps(thread_id, ensure_ascii=not thread_id.isprintable())
    lines = [
        f"# Transcript of thread {title}, messages {start}-{stop}",
        "",
        "Every text below is verbatim. The .jsonl file next to this one holds the same "
        "messages losslessly (langchain_core messages_from_dict). Messages are numbered as in "
        "the thread; #N is a message's number in this segment, the one history_read takes.",
    ]
    if continues is not None:
        lines += [
            "",
            f"It continues {_inline(continues)}."
            if continues
            else "It is the thread's first segment.",
        ]
    for offset, message in enumerate(messages):
        heading = (
            f"## Message {start + offset} (#{offset} in this segment): {_inline(message.type)}"
        )
        if isinstance(message, ToolMessage):
            heading += (
                f" result of {_inline(message.name or 'tool')} "
                f"(call {_inline(message.tool_call_id)})"
            )
            if message.status != "success":
                heading += f", status {_inline(message.status)}"
        if message.id:
            heading += f" [id {_inline(message.id)}]"
        lines += ["", heading, "", *_content_lines(message)]
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                lines += ["", f"Tool call {_inline(call['name'])} (id {_inline(call.get('id'))}):"]
                for name, value in call["args"].items():
                    if isinstance(value, str):
                        lines += [f"- {_inline(name)}:", *_verbatim(value)]
                    else:
                        lines.append(f"- {_inline(name)}: {_json_line(value)}")
    return "\n".join(lines) + "\n"
