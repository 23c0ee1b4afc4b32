"""Texts of messages moved out of a request that could not fit otherwise, and reading them back.

The last lossless resort of a compaction (:mod:`ctxfs._compaction._oversized`) moves a large
text that no other step makes smaller to a file: the content of a user or AI message, or the
raw arguments of a call the model botched (``AIMessage.invalid_tool_calls[k]["args"]``).
What is moved is recorded here, as for any pointer, in structured metadata on the message
(``additional_kwargs["ctxfs"]["texts"]``, one entry per moved text), and the text the model
sees in its place is rendered from that record (:func:`render_moved`). An entry counts only
while the text it stands for is exactly the text rendered with it (compared by digest).

An AI message may carry input pointers too: the entries then sit beside them in the same
metadata (see :func:`ctxfs._pointers._pointer.point_input`), and :func:`resolve_moved` gives
the metadata back as it was without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxfs._errors import WorkspaceError
from ctxfs._messages import LayoutEntry, restore_text
from ctxfs._pointers._pointer import (
    METADATA_KEY,
    Pointer,
    _shape,
    digest,
    render_result,
)
from ctxfs._workspace._workspace import Workspace

__all__ = [
    "HOST_KINDS",
    "MOVED_TAG",
    "MovedText",
    "Part",
    "moved_texts",
    "point_moved",
    "read_saved",
    "render_moved",
    "resolve_moved",
]

MOVED_TAG = "[ctxfs: {what} moved out of the request]"
"""How the text standing for a moved one starts; ``what`` says whose text it was."""

HOST_KINDS = ("inputs", "texts")
"""The kinds of ctxfs metadata a message may carry and still have texts moved."""

Part = Literal["content", "invalid"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MovedText:
    """One text of a message moved to a file.

    Attributes:
        part: ``"content"`` (the message's content) or ``"invalid"`` (the ``args`` string
            of ``invalid_tool_calls[index]``).
        index: For ``invalid``: the call's position in ``invalid_tool_calls``; 0 otherwise.
        path: The byte-exact copy in the workspace.
        lines: Lines of the text.
        chars: Characters of the text.
        tokens: Tokens of the text.
        call_id: For ``invalid``: the call's id (``""`` when it has none).
        shape: How the content is laid out again from the text (see
            :func:`ctxfs._messages.text_layout`); empty for a plain string.
        arguments: For ``invalid``: the provider's own copy of the call's arguments
            (OpenAI's ``additional_kwargs["tool_calls"]``) as it was, when there is one.
        digest: SHA-256 (16 hex digits) of the text rendered for the model.
    """

    part: Part
    index: int = 0
    path: str
    lines: int
    chars: int
    tokens: int
    call_id: str = ""
    shape: tuple[LayoutEntry, ...] = ()
    arguments: str | None = None
    digest: str = ""

    def to_metadata(self) -> dict[str, Any]:
        """Returns the JSON-ready form stored on the message."""
        data: dict[str, Any] = {
            "part": self.part,
            "index": self.index,
            "path": self.path,
            "lines": self.lines,
            "chars": self.chars,
            "tokens": self.tokens,
            "call_id": self.call_id,
            "digest": self.digest,
        }
        if self.shape:
            data["shape"] = [list(entry) for entry in self.shape]
        if self.arguments is not None:
            data["arguments"] = self.arguments
        return data

    @classmethod
    def from_metadata(cls, data: object) -> MovedText | None:
        """Parses :meth:`to_metadata` output; ``None`` for anything malformed."""
        if not isinstance(data, Mapping) or data.get("part") not in ("content", "invalid"):
            return None
        ints = [data.get(k) for k in ("index", "lines", "chars", "tokens")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints):
            return None
        texts = [data.get(k) for k in ("path", "call_id", "digest")]
        arguments = data.get("arguments")
        shape = _shape(data.get("shape"))
        if not all(isinstance(v, str) for v in texts) or shape is None:
            return None
        if arguments is not None and not isinstance(arguments, str):
            return None
        return cls(
            part=data["part"],
            index=data["index"],
            path=data["path"],
            lines=data["lines"],
            chars=data["chars"],
            tokens=data["tokens"],
            call_id=data["call_id"],
            shape=shape,
            arguments=arguments,
            digest=data["digest"],
        )


def _ours(message: BaseMessage) -> Mapping[str, Any] | None:
    data = message.additional_kwargs.get(METADATA_KEY)
    if isinstance(data, Mapping) and data.get("kind") in HOST_KINDS:
        return data
    return None


def current_text(message: BaseMessage, part: Part, index: int) -> str | None:
    """The text a part of ``message`` holds now, or ``None`` when it holds none."""
    if part == "content":
        return message.content if isinstance(message.content, str) else None
    invalid = message.invalid_tool_calls if isinstance(message, AIMessage) else []
    if not 0 <= index < len(invalid):
        return None
    args = invalid[index].get("args")
    return args if isinstance(args, str) else None


def moved_texts(message: BaseMessage) -> dict[tuple[Part, int], MovedText]:
    """Returns the texts of ``message`` moved to files, by (part, index).

    Only entries whose rendered text the message still holds count: a message whose content
    was replaced while its metadata was copied along holds content.
    """
    if not isinstance(message, HumanMessage | AIMessage):
        return {}
    data = _ours(message)
    entries = data.get("texts") if data is not None else None
    found: dict[tuple[Part, int], MovedText] = {}
    for entry in entries if isinstance(entries, list) else ():
        moved = MovedText.from_metadata(entry)
        if moved is None:
            continue
        text = current_text(message, moved.part, moved.index)
        if text is None or digest(text) != moved.digest:
            continue
        if moved.part == "invalid":
            assert isinstance(message, AIMessage)
            if (message.invalid_tool_calls[moved.index].get("id") or "") != moved.call_id:
                continue  # metadata copied onto another call
        found[(moved.part, moved.index)] = moved
    return found


def render_moved(
    moved: MovedText, text: str, *, what: str, preview_lines: int, preview_line_chars: int
) -> str:
    """Returns what the model sees in place of a moved text: where the whole is, its first
    lines quoted, and how to read the rest (as for a large tool result)."""
    pointer = Pointer(
        kind="result", path=moved.path, lines=moved.lines, chars=moved.chars, tokens=moved.tokens
    )
    return render_result(
        pointer,
        text,
        preview_lines=preview_lines,
        preview_line_chars=preview_line_chars,
        tag=MOVED_TAG.format(what=what),
    )


def point_moved(message: BaseMessage, moved: MovedText, rendered: str) -> BaseMessage:
    """Returns a copy of ``message`` whose ``moved.part`` holds ``rendered``, with the record.

    Raises:
        ValueError: The message carries metadata of another kind (see :data:`HOST_KINDS`).
    """
    existing = message.additional_kwargs.get(METADATA_KEY)
    data = _ours(message)
    if existing is not None and data is None:
        raise ValueError("the message carries metadata of another kind")
    kwargs = dict(message.additional_kwargs)
    update: dict[str, Any] = {}
    if moved.part == "content":
        update["content"] = rendered
    else:
        assert isinstance(message, AIMessage)
        invalid = [dict(call) for call in message.invalid_tool_calls]
        invalid[moved.index]["args"] = rendered
        update["invalid_tool_calls"] = invalid
        raw = kwargs.get("tool_calls")
        if isinstance(raw, list) and moved.call_id:
            calls, original = _with_arguments(raw, moved.call_id, rendered)
            if original is not None:
                kwargs["tool_calls"] = calls
                moved = replace(moved, arguments=original)
    stamped = replace(moved, digest=digest(rendered))
    held = moved_texts(message)
    held[(moved.part, moved.index)] = stamped
    entries = [entry.to_metadata() for _, entry in sorted(held.items())]
    kwargs[METADATA_KEY] = {**(data or {"kind": "texts"}), "texts": entries}
    update["additional_kwargs"] = kwargs
    return message.model_copy(update=update)


def _with_arguments(raw: list[Any], call_id: str, arguments: str) -> tuple[list[Any], str | None]:
    """``raw`` with the ``arguments`` of the one call ``call_id`` set, and what they were;
    ``raw`` and ``None`` when no single call has that id."""
    matching = [
        k
        for k, call in enumerate(raw)
        if isinstance(call, dict)
        and call.get("id") == call_id
        and isinstance(call.get("function"), dict)
    ]
    if len(matching) != 1:
        return raw, None
    (k,) = matching
    function = raw[k]["function"]
    original = function.get("arguments")
    if not isinstance(original, str):
        return raw, None
    calls = list(raw)
    calls[k] = {**raw[k], "function": {**function, "arguments": arguments}}
    return calls, original


def resolve_moved(message: BaseMessage, workspace: Workspace) -> BaseMessage:
    """Returns ``message`` with its moved texts read back (``message`` itself if it has none).

    Raises:
        WorkspaceError: A file could not be read or does not hold what its entry describes.
    """
    held = moved_texts(message)
    if not held:
        return message
    data = _ours(message)
    assert data is not None
    kwargs = dict(message.additional_kwargs)
    update: dict[str, Any] = {}
    invalid = (
        [dict(c) for c in message.invalid_tool_calls] if isinstance(message, AIMessage) else []
    )
    for (part, index), moved in sorted(held.items()):
        text = read_saved(workspace, moved.path, moved.chars, "record")
        if part == "content":
            update["content"] = restore_text(text, moved.shape)
            continue
        invalid[index]["args"] = text
        raw = kwargs.get("tool_calls")
        if moved.arguments is not None and isinstance(raw, list):
            kwargs["tool_calls"], _ = _with_arguments(raw, moved.call_id, moved.arguments)
    if invalid and any(part == "invalid" for part, _ in held):
        update["invalid_tool_calls"] = invalid
    rest = {key: value for key, value in data.items() if key != "texts"}
    if rest.get("kind") == "texts":
        shadowed = rest.get("shadowed")
        if shadowed is None:
            kwargs.pop(METADATA_KEY)
        else:
            kwargs[METADATA_KEY] = shadowed
    else:
        kwargs[METADATA_KEY] = rest
    update["additional_kwargs"] = kwargs
    return message.model_copy(update=update)


def read_saved(workspace: Workspace, path: str, chars: int, described_by: str) -> str:
    """The text saved at ``path``, which must hold the ``chars`` characters that what points
    to it (its ``described_by``: a pointer, a record) says it does.

    Raises:
        WorkspaceError: It cannot be read, or holds another number of characters.
    """
    text = workspace.read_text(path)
    if len(text) != chars:
        raise WorkspaceError(
            f"{path} holds {len(text):,} characters, not the {chars:,} its {described_by} "
            "describes",
            path=path,
        )
    return text
