"""Pointers: what ctxfs leaves in the context in place of content it moved to the workspace.

A pointer's meaning is structured data (:class:`Pointer`) carried on the message, in
``additional_kwargs["ctxfs"]`` as summaries carry theirs; the text the model sees is rendered
from it (:func:`render_result`, :func:`render_input`, :func:`render_cleared`,
:func:`render_reread`). ctxfs never parses its own prose back: a message is a pointer when
its metadata says so *and* the text it holds is the text rendered with that metadata
(compared by digest), so a tool result that merely looks like a pointer, or a message whose
content was replaced while its metadata was copied along, is content.

Four kinds:

- ``result`` -- a large tool result offloaded when it arrived: path, size and a preview.
- ``cleared`` -- an old tool result cleared to a short pointer to its saved full text.
- ``reread`` -- an old result of a recovery tool that showed content ctxfs had saved; nothing
  was saved again, and the call that showed it is recorded so that it can be repeated.
- ``input`` -- a large argument of an old tool call, saved byte-exact. Its metadata lives on
  the AI message, one entry per (call, argument).

Messages written before pointers carried metadata are read by :mod:`ctxfs._pointers._legacy`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs._json import dumps_any, loads_bounded
from ctxfs._messages import Content, LayoutEntry, replace_tool_arg, restore_text, text_layout
from ctxfs._pointers._legacy import LegacyPointer, legacy_input_pointer, legacy_result_pointer
from ctxfs._sections import neutralize, quote_lines

__all__ = [
    "METADATA_KEY",
    "Pointer",
    "PointerKind",
    "brief_call",
    "content_shape",
    "count_lines",
    "digest",
    "head_line",
    "input_pointers",
    "point_input",
    "point_result",
    "render_cleared",
    "render_input",
    "render_reread",
    "render_result",
    "result_pointer",
]

METADATA_KEY = "ctxfs"
"""The ``additional_kwargs`` key under which ctxfs keeps a message's metadata."""

_VERSION = 1

PointerKind = Literal["result", "cleared", "reread", "input"]

RESULT_TAG = "[ctxfs: tool result offloaded]"
INPUT_TAG = "[ctxfs: tool input offloaded]"
CLEARED_TAG = "[ctxfs: tool result cleared]"


@dataclass(frozen=True, slots=True, kw_only=True)
class Pointer:
    """What a pointer stands for.

    Attributes:
        kind: ``"result"``, ``"cleared"``, ``"reread"`` or ``"input"``.
        path: The byte-exact copy in the workspace; for ``reread``, the saved file or folder
            the result showed.
        lines: Lines of the content it replaced.
        chars: Characters of that content.
        tokens: Tokens of that content.
        tool_call_id: The call whose result (or argument) it replaced.
        arg: For ``input``: the argument's name.
        call_index: For ``input``: the call's position in the AI message's ``tool_calls``.
        target: For ``input``: the file the tool acted on, if known.
        call: For ``reread``: the call that showed the content (``name`` and ``args``), to
            repeat it.
        shape: How the replaced content is laid out again from the saved text (see
            :func:`ctxfs._messages.text_layout`): ``("str" | "text", characters)`` per block
            of a list, with the block's other keys as JSON when it has any (``("json",
            characters)`` for a block of another kind, saved as its JSON), and first
            ``("nul", code point)`` when a character stands for NUL and ``("lone", base)``
            when characters stand for lone surrogates; empty for a plain string of neither.
        digest: SHA-256 (16 hex digits) of the text rendered for the model.
        legacy: Read from the text of an older version's pointer (no metadata): what it
            says about the file must be checked against the file before it is relied on.
    """

    kind: PointerKind
    path: str
    lines: int
    chars: int
    tokens: int
    tool_call_id: str = ""
    arg: str | None = None
    call_index: int | None = None
    target: str | None = None
    call: Mapping[str, Any] | None = None
    shape: tuple[LayoutEntry, ...] = ()
    digest: str = field(default="", compare=False)
    legacy: bool = field(default=False, compare=False)

    def to_metadata(self) -> dict[str, Any]:
        """Returns the JSON-ready form stored on the message."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "path": self.path,
            "lines": self.lines,
            "chars": self.chars,
            "tokens": self.tokens,
            "tool_call_id": self.tool_call_id,
            "digest": self.digest,
        }
        optional = {
            "arg": self.arg,
            "call_index": self.call_index,
            "target": self.target,
            "call": dict(self.call) if self.call is not None else None,
            "shape": [list(block) for block in self.shape] or None,
        }
        data.update({k: v for k, v in optional.items() if v is not None})
        return data

    @classmethod
    def from_metadata(cls, data: object) -> Pointer | None:
        """Parses :meth:`to_metadata` output; ``None`` for anything malformed."""
        if not isinstance(data, Mapping) or data.get("kind") not in (
            "result",
            "cleared",
            "reread",
            "input",
        ):
            return None
        ints = [data.get(k) for k in ("lines", "chars", "tokens")]
        texts = [data.get(k) for k in ("path", "tool_call_id", "digest")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints):
            return None
        if not all(isinstance(v, str) for v in texts):
            return None
        shape = _shape(data.get("shape"))
        call = data.get("call")
        arg, index, target = data.get("arg"), data.get("call_index"), data.get("target")
        if shape is None or (call is not None and not isinstance(call, Mapping)):
            return None
        if arg is not None and not isinstance(arg, str):
            return None
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            return None
        return cls(
            kind=data["kind"],
            path=data["path"],
            lines=data["lines"],
            chars=data["chars"],
            tokens=data["tokens"],
            tool_call_id=data["tool_call_id"],
            arg=arg,
            call_index=index,
            target=target if isinstance(target, str) else None,
            call=call,
            shape=shape,
            digest=data["digest"],
        )


def _shape(raw: object) -> tuple[LayoutEntry, ...] | None:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return None
    out: list[LayoutEntry] = []
    for item in raw:
        if not isinstance(item, list | tuple) or len(item) not in (2, 3):
            return None
        kind, size = item[0], item[1]
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            return None
        if len(item) == 2 and kind in ("str", "text", "json", "nul", "lone"):
            out.append((kind, size))
        elif len(item) == 3 and kind == "text" and _block_keys(item[2]):
            out.append((kind, size, item[2]))
        else:
            return None
    return tuple(out)


def _block_keys(raw: object) -> bool:
    """Whether ``raw`` is a text block's other keys as a shape records them."""
    if not isinstance(raw, str):
        return False
    try:
        block = loads_bounded(raw)
    except ValueError:
        return False
    return isinstance(block, dict) and block.get("type") == "text" and block.get("text") is None


def digest(text: str) -> str:
    """Returns the digest a pointer records of the text it renders (16 hex digits)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def content_shape(content: Content) -> tuple[LayoutEntry, ...]:
    """Returns how a content of text is laid out (see :attr:`Pointer.shape`)."""
    return text_layout(content)


def restore_content(text: str, shape: tuple[LayoutEntry, ...]) -> Content:
    """Returns the content a pointer replaced, from its full text and :attr:`Pointer.shape`."""
    return restore_text(text, shape)


# -- reading pointers off messages ----------------------------------------------------------


def result_pointer(message: BaseMessage) -> Pointer | None:
    """Returns the pointer a tool result holds, or ``None`` if it holds content.

    Only a pointer ctxfs wrote counts: the message's metadata describes one and its content
    is exactly the text rendered from it. A message from before pointers carried metadata is
    recognised by :func:`ctxfs._pointers._legacy.legacy_result_pointer`.
    """
    if not isinstance(message, ToolMessage) or not isinstance(message.content, str):
        return None
    data = message.additional_kwargs.get(METADATA_KEY)
    if data is None:
        old = legacy_result_pointer(message.content, message.tool_call_id)
        return _adopt(old, message.tool_call_id) if old is not None else None
    pointer = Pointer.from_metadata(data)
    if pointer is None or pointer.kind == "input" or pointer.digest != digest(message.content):
        return None
    # metadata copied onto another call's result is content
    return pointer if pointer.tool_call_id == message.tool_call_id else None


def input_pointers(message: BaseMessage) -> dict[tuple[int, str], Pointer]:
    """Returns the input pointers of an AI message, by (call index, argument name)."""
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return {}
    data = message.additional_kwargs.get(METADATA_KEY)
    found: dict[tuple[int, str], Pointer] = {}
    if isinstance(data, Mapping) and data.get("kind") == "inputs":
        entries = data.get("inputs")
        for entry in entries if isinstance(entries, list) else ():
            pointer = Pointer.from_metadata(entry)
            if pointer is None or pointer.kind != "input" or pointer.arg is None:
                continue
            index = pointer.call_index
            if index is None or not 0 <= index < len(message.tool_calls):
                continue
            call = message.tool_calls[index]
            if pointer.tool_call_id != (call.get("id") or ""):
                continue  # metadata copied onto another call
            value = call["args"].get(pointer.arg)
            if isinstance(value, str) and digest(value) == pointer.digest:
                found[(index, pointer.arg)] = pointer
        return found
    for index, call in enumerate(message.tool_calls):
        for arg, value in call["args"].items():
            if isinstance(value, str):
                call_id = call.get("id") or ""
                old = legacy_input_pointer(value, call_id, arg)
                if old is not None:
                    found[(index, arg)] = replace(
                        _adopt(old, call_id), arg=arg, call_index=index, digest=digest(value)
                    )
    return found


def _adopt(old: LegacyPointer, tool_call_id: str) -> Pointer:
    return Pointer(
        kind=old.kind,
        path=old.path,
        lines=old.lines,
        chars=old.chars,
        tokens=old.tokens,
        tool_call_id=tool_call_id,
        legacy=True,
    )


# -- putting pointers on messages -----------------------------------------------------------


def _shadowed(message: BaseMessage, ours: bool) -> object:
    """What a message carried under :data:`METADATA_KEY` before ctxfs's metadata went there:
    kept inside ctxfs's metadata and given back when the pointer is resolved."""
    existing = message.additional_kwargs.get(METADATA_KEY)
    if ours:  # ctxfs's own metadata: carry on what it kept
        return existing.get("shadowed") if isinstance(existing, Mapping) else None
    return existing


def point_result(message: ToolMessage, pointer: Pointer, text: str) -> ToolMessage:
    """Returns a copy of ``message`` holding ``text``, the rendering of ``pointer``.

    Keeps the id, ``tool_call_id``, ``name``, ``status`` and ``artifact``, and whatever the
    message carried under :data:`METADATA_KEY` (given back by the resolution).
    """
    stamped = replace(pointer, digest=digest(text))
    data = stamped.to_metadata()
    shadowed = _shadowed(message, result_pointer(message) is not None)
    if shadowed is not None:
        data["shadowed"] = shadowed
    kwargs = {**message.additional_kwargs, METADATA_KEY: data}
    return message.model_copy(update={"content": text, "additional_kwargs": kwargs})


def point_input(message: AIMessage, pointer: Pointer, text: str) -> AIMessage:
    """Returns a copy of ``message`` whose argument ``pointer.arg`` of call
    ``pointer.call_index`` holds ``text``, the rendering of ``pointer``."""
    assert pointer.call_index is not None and pointer.arg is not None
    stamped = replace(pointer, digest=digest(text))
    held = input_pointers(message)
    held[(pointer.call_index, pointer.arg)] = stamped
    entries = [p.to_metadata() for _, p in sorted(held.items())]
    existing = message.additional_kwargs.get(METADATA_KEY)
    # texts of the message moved out of the request (ctxfs._pointers._moved) stay recorded
    ours = isinstance(existing, Mapping) and existing.get("kind") in ("inputs", "texts")
    data: dict[str, Any] = {"kind": "inputs", "inputs": entries}
    shadowed = _shadowed(message, ours)
    if shadowed is not None:
        data["shadowed"] = shadowed
    if ours and existing.get("texts") is not None:  # type: ignore[union-attr]
        data["texts"] = existing["texts"]  # type: ignore[index]
    # A provider's own copy of the call (OpenAI's JSON ``arguments``) is re-serialized when an
    # argument changes: its original string is kept, to be given back byte-exact.
    originals = dict(existing.get("openai_arguments") or {}) if ours else {}  # type: ignore[union-attr]
    call_id = message.tool_calls[pointer.call_index].get("id")
    raw = _openai_arguments(message, call_id)
    if call_id is not None and raw is not None and call_id not in originals:
        originals[call_id] = raw
    if originals:
        data["openai_arguments"] = originals
    kwargs = {**message.additional_kwargs, METADATA_KEY: data}
    return replace_tool_arg(message, pointer.call_index, pointer.arg, text, kwargs=kwargs)


def _openai_arguments(message: AIMessage, call_id: str | None) -> str | None:
    calls = message.additional_kwargs.get("tool_calls")
    for raw in calls if isinstance(calls, list) else ():
        function = raw.get("function") if isinstance(raw, dict) else None
        if isinstance(function, dict) and raw.get("id") == call_id:
            arguments = function.get("arguments")
            return arguments if isinstance(arguments, str) else None
    return None


# -- rendering ------------------------------------------------------------------------------


def count_lines(text: str) -> int:
    """Returns the number of lines, counting a last line without a newline; 0 for ``""``."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _clip(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    return f"{line[:width]}… [{len(line) - width:,} more characters]"


def _quoted(line: str) -> str:
    """One preview line, quoted; a line break inside it (``\r``, ``U+2028``) shown as a
    space, so the preview keeps the result's own lines."""
    quoted = quote_lines(line)
    return quoted if "\n" not in quoted else quote_lines(" ".join(line.splitlines()))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else f"{text[:width]}…"


def _one_line(text: str, width: int) -> str:
    # Flattening keeps the length, so only what can be shown is looked at.
    head = text[: width + 1]
    flat = "".join(" " if ch.isspace() or not ch.isprintable() else ch for ch in head)
    return neutralize(_cut(flat, width))


def head_line(text: str, *, width: int = 80) -> str:
    """Returns the first non-blank line of ``text``, on one line and clipped to ``width``."""
    for line in text.splitlines():
        if line.strip():
            return _one_line(line.strip(), width)
    return "(empty)"


def brief_call(
    name: str | None,
    args: Mapping[str, Any] | None,
    *,
    width: int = 100,
    value_width: int = 50,
) -> str:
    """Returns a tool call in brief, on one line: ``bash(command="ls -la")``.

    Each argument value is shown as JSON clipped to ``value_width`` characters, the whole to
    ``width``. ``args=None`` (the call is not in the history) gives ``name(?)``.

    Example:
        >>> brief_call("bash", {"command": "ls -la"})
        'bash(command="ls -la")'
    """
    if args is None:
        return f"{name or 'tool'}(?)"
    shown = []
    for key, value in args.items():
        rendered = dumps_any(value, sort_keys=False)
        shown.append(f"{key}={_cut(rendered, value_width)}")
    return _one_line(f"{name or 'tool'}({', '.join(shown)})", width)


def _size(pointer: Pointer) -> str:
    lines = "line" if pointer.lines == 1 else "lines"
    tokens = "token" if pointer.tokens == 1 else "tokens"
    return f"{pointer.lines:,} {lines}, {pointer.tokens:,} {tokens}"


# The texts below are as short as they can be while saying what the content was and where to
# read it: the call a result answers, or whose argument moved, stays in the context next to
# it (a call and its results are never separated), so they do not repeat it.


def render_result(
    pointer: Pointer,
    text: str,
    *,
    preview_lines: int,
    preview_line_chars: int,
    tag: str = RESULT_TAG,
) -> str:
    """Returns what the model sees in place of a large tool result.

    The preview lines are quoted (:func:`ctxfs._sections.quote_lines`): a line of the
    result cannot pass for one of ctxfs's (``[ctxfs ...``), a heading or a role marker, nor
    open or close a ctxfs section.

    Args:
        pointer: The ``result`` pointer.
        text: The full text (for the preview).
        preview_lines: How many first lines to show.
        preview_line_chars: Where to clip each preview line.
        tag: What the first line starts with (another kind of text moved out with a
            preview, see :mod:`ctxfs._pointers._moved`).
    """
    out = [f"{tag} Too large to keep: {_size(pointer)}, saved to {pointer.path}."]
    shown = min(preview_lines, pointer.lines)
    if shown:
        head = text.split("\n", shown)[:shown]
        out.append(f"Lines 1-{shown}:")
        clipped = "\n".join(_clip(line, preview_line_chars) for line in head)
        # neutralized as a whole: a tag split over two lines ("<", "/memory>") is a tag too
        out.extend(_quoted(line) for line in neutralize(clipped).split("\n"))
        # The rest starts at the first line not shown whole: a clipped one is read again.
        rest = next((n for n, line in enumerate(head) if len(line) > preview_line_chars), shown)
        if rest < pointer.lines:
            out.append(f"[read_file it from offset={rest} for the rest, or grep it]")
        else:
            out.append("[read_file it for the whole, or grep it]")
    else:
        out.append("[read_file it with offset and limit, or grep it]")
    return "\n".join(out)


def render_input(pointer: Pointer, *, tool_name: str) -> str:
    """Returns what the model sees in place of a large tool-call argument.

    Args:
        pointer: The ``input`` pointer.
        tool_name: The tool called (the call itself is next to the pointer; unused in the
            text, kept for callers that render for another context).
    """
    del tool_name
    return (
        f"{INPUT_TAG} {pointer.chars:,} characters, saved byte-exact to {pointer.path}; "
        "read_file it."
    )


def render_cleared(pointer: Pointer, text: str, *, call: str) -> str:
    """Returns the short pointer that replaces an old tool result whose full text is saved.

    Args:
        pointer: The ``cleared`` pointer.
        text: The full text (for its first line).
        call: The call in brief (:func:`brief_call`); the call stays in the context next to
            its result, so the text does not repeat it.
    """
    del call
    return (
        f"{CLEARED_TAG} {_size(pointer)}, saved to {pointer.path}; read_file or grep it. "
        f"First line: {head_line(text, width=60)}"
    )


def render_reread(pointer: Pointer, *, call: str) -> str:
    """Returns the pointer that replaces a recovery tool's view of content ctxfs saved."""
    del call
    return (
        f"{CLEARED_TAG} It showed {_size(pointer)} of {pointer.path}; repeat the call to see "
        "it again."
    )
