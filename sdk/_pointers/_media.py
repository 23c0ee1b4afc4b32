"""Media blocks moved out of a tool result, and how they come back byte-exact.

When ctxfs moves a media block of a tool result to a binary file
(:mod:`ctxfs._compaction._media`), the block is replaced by a text block holding a one-line
reference, and the message records, in ``additional_kwargs["ctxfs"]``, what it takes to
rebuild the block (:class:`MovedMedia`): the block as it was with its base64 payload left
out, where the payload sat in it, the file, and the file's size and SHA-256. Only a payload
that is canonical base64 is moved, so encoding the file's bytes again gives it back exactly.

The record is ``{"kind": "media", "media": [...]}``, with whatever the message carried
under that key before as ``shadowed`` (given back with the blocks). When the message's text
is later offloaded or cleared to a pointer, the pointer's metadata keeps this record as what
the message carried before it (its ``shadowed``), and the saved text holds the references;
so :func:`restore_media` runs after the pointer is resolved: first the text blocks, then the
media blocks in their places.

A record counts only while every reference it describes is still in its place, the very
text (compared by digest): a message whose content was replaced while its metadata was
copied along is content, as for pointers.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage

from ctxfs._errors import WorkspaceError
from ctxfs._pointers._pointer import METADATA_KEY, digest
from ctxfs._workspace._workspace import Workspace

__all__ = [
    "MEDIA_KIND",
    "MovedMedia",
    "blank_payload",
    "moved_media",
    "point_media",
    "restore_media",
]

_M = TypeVar("_M", bound=BaseMessage)

MEDIA_KIND = "media"
"""The ``kind`` of a message's metadata that records moved media blocks."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MovedMedia:
    """What it takes to rebuild one media block moved to a file.

    Attributes:
        index: The block's position in the message's content.
        path: The binary file holding the decoded payload.
        size: The file's size in bytes.
        sha256: The SHA-256 of its bytes (hex).
        block: The block as JSON, with its payload as ``null``.
        at: The keys that lead from the block to its payload's string.
        prefix: What precedes the base64 text in that string (``data:image/png;base64,`` for
            a data URL; empty otherwise).
        digest: Digest (:func:`~ctxfs._pointers._pointer.digest`) of the reference text
            that replaced the block.
    """

    index: int
    path: str
    size: int
    sha256: str
    block: str
    at: tuple[str, ...]
    prefix: str
    digest: str

    def to_metadata(self) -> dict[str, Any]:
        """Returns the JSON-ready form stored on the message."""
        return {
            "index": self.index,
            "path": self.path,
            "size": self.size,
            "sha256": self.sha256,
            "block": self.block,
            "at": list(self.at),
            "prefix": self.prefix,
            "digest": self.digest,
        }

    @classmethod
    def from_metadata(cls, data: object) -> MovedMedia | None:
        """Parses :meth:`to_metadata` output; ``None`` for anything malformed."""
        if not isinstance(data, Mapping):
            return None
        ints = [data.get(k) for k in ("index", "size")]
        texts = [data.get(k) for k in ("path", "sha256", "block", "prefix", "digest")]
        at = data.get("at")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints):
            return None
        if not all(isinstance(v, str) for v in texts):
            return None
        if not isinstance(at, list) or not at or not all(isinstance(k, str) for k in at):
            return None
        if not _blank_at(data["block"], at):
            return None
        return cls(
            index=data["index"],
            path=data["path"],
            size=data["size"],
            sha256=data["sha256"],
            block=data["block"],
            at=tuple(at),
            prefix=data["prefix"],
            digest=data["digest"],
        )

    def rebuild(self, data: bytes) -> dict[str, Any]:
        """The block as it was, its payload encoded again from ``data``."""
        block = json.loads(self.block)
        holder = block
        for key in self.at[:-1]:
            holder = holder[key]
        holder[self.at[-1]] = self.prefix + base64.b64encode(data).decode("ascii")
        return block  # type: ignore[no-any-return]


def _blank_at(block: str, at: Sequence[str]) -> bool:
    """Whether ``block`` is a block's JSON whose value at ``at`` is ``null``."""
    try:
        holder: object = json.loads(block)
    except ValueError:
        return False
    for key in at[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    return isinstance(holder, dict) and at[-1] in holder and holder[at[-1]] is None


def blank_payload(block: Mapping[str, Any], at: Sequence[str]) -> str | None:
    """``block`` as JSON with the string at ``at`` as ``null``, or ``None`` when JSON cannot
    give the block back identical (tuples, non-string keys, NaN...). The payload itself is
    left out before the round trip: a string always comes back, and it may be megabytes."""
    blanked = _blanked(block, at)
    if blanked is None:
        return None
    try:
        text = json.dumps(blanked, ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text if json.loads(text) == blanked else None


def _blanked(value: object, at: Sequence[str]) -> dict[str, Any] | None:
    """A copy of the dicts along ``at`` with its last key set to ``None`` (the rest shared)."""
    if not isinstance(value, dict) or not at or at[0] not in value:
        return None
    out = dict(value)
    if len(at) == 1:
        out[at[0]] = None
        return out
    inner = _blanked(value[at[0]], at[1:])
    if inner is None:
        return None
    out[at[0]] = inner
    return out


def moved_media(message: BaseMessage) -> tuple[MovedMedia, ...]:
    """The media blocks ``message`` records as moved, if every reference is in its place."""
    data = message.additional_kwargs.get(METADATA_KEY)
    content = message.content
    if not isinstance(data, Mapping) or data.get("kind") != MEDIA_KIND:
        return ()
    entries = data.get("media")
    if not isinstance(entries, list) or not entries or not isinstance(content, list):
        return ()
    found: list[MovedMedia] = []
    for entry in entries:
        moved = MovedMedia.from_metadata(entry)
        if moved is None or moved.index >= len(content):
            return ()
        block = content[moved.index]
        if not isinstance(block, dict) or set(block) != {"type", "text"}:
            return ()
        text = block["text"]
        if block["type"] != "text" or not isinstance(text, str) or digest(text) != moved.digest:
            return ()
        found.append(moved)
    return tuple(found)


def point_media(message: _M, content: list[Any], moved: Sequence[MovedMedia]) -> _M:
    """Returns a copy of ``message`` holding ``content``, in which the blocks ``moved``
    describes were replaced by their references, with the record of them added to what the
    message already recorded."""
    held = moved_media(message)
    existing = message.additional_kwargs.get(METADATA_KEY)
    if held:
        assert isinstance(existing, Mapping)
        shadowed = existing.get("shadowed")
    else:
        shadowed = existing
    indices = {m.index for m in moved}
    entries = sorted([*(m for m in held if m.index not in indices), *moved], key=_index)
    data: dict[str, Any] = {"kind": MEDIA_KIND, "media": [m.to_metadata() for m in entries]}
    if shadowed is not None:
        data["shadowed"] = shadowed
    kwargs = {**message.additional_kwargs, METADATA_KEY: data}
    return message.model_copy(update={"content": content, "additional_kwargs": kwargs})


def _index(moved: MovedMedia) -> int:
    return moved.index


def restore_media(message: _M, workspace: Workspace) -> _M:
    """Returns ``message`` with every media block it records as moved back in its place,
    byte-exact (``message`` itself if it records none).

    Raises:
        WorkspaceError: A file could not be read, or does not hold the bytes recorded.
    """
    held = moved_media(message)
    if not held:
        return message
    content = list(message.content)
    for moved in held:
        saved = workspace.read_bytes(moved.path)
        if len(saved) != moved.size or hashlib.sha256(saved).hexdigest() != moved.sha256:
            raise WorkspaceError(
                f"{moved.path} holds {len(saved):,} bytes that are not the {moved.size:,} "
                "bytes of the media block moved there",
                path=moved.path,
            )
        content[moved.index] = moved.rebuild(saved)
    kwargs = dict(message.additional_kwargs)
    record = kwargs.pop(METADATA_KEY)
    shadowed = record.get("shadowed")
    if shadowed is not None:
        kwargs[METADATA_KEY] = shadowed
    return message.model_copy(update={"content": content, "additional_kwargs": kwargs})
