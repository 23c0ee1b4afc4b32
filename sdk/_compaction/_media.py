"""Media blocks of tool results moved to binary files and replaced by a short reference.

A tool may return images, audio, video or files as base64 blocks (LangChain's
``{"type": "image", "base64": ..., "mime_type": ...}``, Anthropic's
``{"type": "image", "source": {"type": "base64", ...}}``, OpenAI's data URLs in
``image_url``, ``input_image``, ``file`` and ``input_file`` blocks, ``input_audio``). Such a
block is bytes in the agent's state and in every request, whatever the provider bills for it.
Here a block is moved out: its payload is decoded, written create-only to a binary file
under ``/tool_results/`` named after the call and the block's place
(``<call>.block<k>.<ext>``, the extension from the media type), read back and compared, and
only then is the block replaced by a text block of one line::

    [ctxfs: image moved out of the context] image/png, 1,204,331 bytes, 1600x1200 px, saved
    to /tool_results/<thread>/<call>.block2.png; ...

**Which blocks move** (the rule, :func:`moves_at_return`):

- *When the tool returns*, a block moves when it is large as ctxfs counts it: its billed
  tokens (:func:`ctxfs._tokens.media_tokens`, the same count the engine uses for the
  window) are over the result threshold, as for any result, or its decoded payload is over
  ``max_media_bytes`` (5 MiB by default). The byte cap is what catches images: an image is
  billed by its pixels (at most 1,600 tokens), never over the threshold, yet a 12 MB image
  is 16 MB of base64 in the state and in every request, and over what providers accept for
  one image. An image the model just asked for is otherwise left for it to see, unless
  the result's text is over the threshold: then every block moves, so the text can be
  saved (a file holds text only) and the result pointed to.
- *When old results are cleared* in a compaction, every media block of a cleared result
  moves, whatever its size, like the text of the result around it.

A block without a payload (an image given by URL, a file id) holds no bytes and stays. A
payload that is not canonical base64 (line breaks or spaces inside it, padding bits set,
characters outside the alphabet) stays inline too, with an
:class:`~ctxfs._events.OffloadFailed` event saying why: only a payload that encoding its
bytes again gives back exactly can be moved and restored byte-exact. So does a block whose
other keys JSON cannot give back identical. Every other block of the message (text blocks,
their order) is kept.

**Coming back.** The message records each moved block (:mod:`ctxfs._pointers._media`): the
block with its payload left out, where the payload sat, the file and its size and SHA-256.
:func:`ctxfs.resolve_pointers` reads the file, encodes it again and puts the block back in
its place, after the pointer of an offloaded or cleared text, whose saved copy holds the
references, is resolved.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage, ToolMessage

from ctxfs._events import ContextEvent, MediaOffloaded, OffloadFailed
from ctxfs._layout import RESULTS_DIR, file_name
from ctxfs._pointers._media import MovedMedia, blank_payload, point_media
from ctxfs._pointers._pointer import digest
from ctxfs._tokens import TokenCounter
from ctxfs._tokens._media import IMAGE_TYPES, MEDIA_TYPES, image_size, media_tokens
from ctxfs._workspace._saving import Unsaved, save_bytes
from ctxfs._workspace._workspace import Workspace

_M = TypeVar("_M", bound=BaseMessage)

__all__ = [
    "DEFAULT_MAX_MEDIA_BYTES",
    "MEDIA_REFERENCE",
    "MediaBlock",
    "MediaMoved",
    "media_blocks",
    "media_path",
    "move_media",
    "moves_at_return",
    "reference",
]

DEFAULT_MAX_MEDIA_BYTES = 5 * 1024 * 1024
"""Largest media payload a tool result keeps inline when it returns (5 MiB: the smallest
per-image limit of the major providers' APIs)."""

MEDIA_REFERENCE = "[ctxfs: {what} moved out of the context]"
"""How a reference starts; ``what`` is ``image``, ``audio``, ``video`` or ``file``."""

_EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/svg+xml": "svg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/ogg": "ogg",
    "video/quicktime": "mov",
    "text/plain": "txt",
    "text/markdown": "md",
    "application/octet-stream": "bin",
}
_SUBTYPE = re.compile(r"[a-z0-9]{1,8}")
_WHITESPACE = re.compile(rb"[ \t\r\n]+")


@dataclass(frozen=True, slots=True)
class MediaBlock:
    """One media block of a content that carries a base64 payload.

    Attributes:
        index: Its position in the content (0-based).
        what: ``"image"``, ``"audio"``, ``"video"`` or ``"file"``.
        media_type: Its MIME type (from the block; ``application/octet-stream`` if none).
        payload: The base64 text as the block holds it.
        tokens: What providers bill for it, as :func:`~ctxfs._tokens.media_tokens` counts.
        at: The keys that lead from the block to the string holding the payload.
        prefix: What precedes the payload in that string (a data URL's head, with its
            comma; empty otherwise).
    """

    index: int
    what: str
    media_type: str
    payload: str
    tokens: int
    at: tuple[str, ...] = ()
    prefix: str = ""

    def decoded(self) -> bytes | None:
        """The payload's bytes, or ``None`` when it is not valid base64 (line breaks and
        spaces inside it are allowed, as MIME writes them)."""
        raw = self.payload.encode("ascii", "ignore")
        if len(raw) != len(self.payload):
            return None
        try:
            return base64.b64decode(_WHITESPACE.sub(b"", raw), validate=True)
        except (binascii.Error, ValueError):
            return None

    def size_bound(self) -> int:
        """The decoded size, without decoding (exact for base64 without line breaks)."""
        return len(self.payload.rstrip("=")) * 3 // 4


def media_blocks(content: object) -> list[MediaBlock]:
    """The media blocks of ``content`` that carry a base64 payload, in order."""
    if not isinstance(content, list):
        return []
    found: list[MediaBlock] = []
    for index, block in enumerate(content):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind not in IMAGE_TYPES and kind not in MEDIA_TYPES:
            continue
        located = _payload(block)
        if located is None:
            continue
        at, prefix, payload, media_type = located
        what = _what(str(kind), media_type)
        tokens = media_tokens([block])
        found.append(MediaBlock(index, what, media_type, payload, tokens, at, prefix))
    return found


def moves_at_return(block: MediaBlock, threshold: int, max_bytes: int) -> bool:
    """Whether ``block`` moves when its tool returns (see the module docstring)."""
    return block.tokens > threshold or block.size_bound() > max_bytes


def media_path(thread_id: str, tool_call_id: str, block: MediaBlock) -> str:
    """The first-choice file for a media block of a tool result."""
    stem = f"{file_name(tool_call_id)}.block{block.index + 1}"
    return f"{RESULTS_DIR}/{file_name(thread_id)}/{stem}.{extension(block.media_type)}"


def extension(media_type: str) -> str:
    """The file extension for a MIME type (``bin`` when it names none)."""
    media_type = media_type.lower().split(";")[0].strip()
    if media_type in _EXTENSIONS:
        return _EXTENSIONS[media_type]
    subtype = media_type.rpartition("/")[2].removeprefix("x-")
    return subtype if _SUBTYPE.fullmatch(subtype) else "bin"


def reference(block: MediaBlock, path: str, size: int) -> str:
    """The text that stands for a moved block: what it was, where it is, how to use it."""
    pixels = ""
    if block.what == "image":
        width, height = image_size(block.payload)
        if width > 0 and height > 0:
            pixels = f", {width}x{height} px"
    head = MEDIA_REFERENCE.format(what=block.what)
    return (
        f"{head} {block.media_type}, {size:,} bytes{pixels}, saved to {path}. It is a binary "
        "file: read_file shows it again only if your read_file reads media; otherwise give "
        "the path to a tool that takes a file."
    )


@dataclass(frozen=True, slots=True)
class MediaMoved:
    """What :func:`move_media` did to a content.

    Attributes:
        content: The content with the moved blocks replaced (the input itself if none moved).
        events: One :class:`~ctxfs._events.MediaOffloaded` per block moved, one
            :class:`~ctxfs._events.OffloadFailed` per block that had to stay.
        moved: What it takes to rebuild each moved block, in order.
    """

    content: Any
    events: tuple[ContextEvent, ...]
    moved: tuple[MovedMedia, ...] = ()

    def applied_to(self, message: _M) -> _M:
        """``message`` (whose content was moved) holding :attr:`content`, with the record of
        the moved blocks in its metadata; ``message`` itself if nothing moved."""
        if not self.moved:
            return message
        return point_media(message, self.content, self.moved)


def move_media(
    workspace: Workspace,
    counter: TokenCounter,
    message: ToolMessage,
    *,
    thread_id: str,
    moves: Callable[[MediaBlock], bool],
) -> MediaMoved:
    """Moves the media blocks of a tool result's content that ``moves`` picks to files.

    Each block is saved and verified before it is replaced; a block whose payload is not
    canonical base64, whose other keys JSON cannot hold, or whose file could not be
    written, stays as it is, with an :class:`~ctxfs._events.OffloadFailed` event. Nothing
    else of the content changes. Apply the result to the message with
    :meth:`MediaMoved.applied_to`, which records how to rebuild each moved block.
    """
    content: object = message.content
    tool_call_id, tool_name = message.tool_call_id, message.name
    picked = [block for block in media_blocks(content) if moves(block)]
    if not picked:
        return MediaMoved(content, ())
    assert isinstance(content, list)
    out: list[Any] = list(content)
    events: list[ContextEvent] = []
    moved: list[MovedMedia] = []
    for block in picked:
        first = media_path(thread_id, tool_call_id, block)
        data, blank, why = _movable(block, content[block.index])
        if data is None or blank is None:
            reason = f"block {block.index + 1} ({block.media_type}) stays inline: {why}"
            events.append(OffloadFailed(tool_call_id=tool_call_id, reason=reason, path=first))
            continue
        try:
            path = save_bytes(workspace, first, data)
        except Unsaved as failure:
            events.append(
                OffloadFailed(tool_call_id=tool_call_id, reason=failure.reason, path=failure.path)
            )
            continue
        text = reference(block, path, len(data))
        out[block.index] = {"type": "text", "text": text}
        moved.append(
            MovedMedia(
                index=block.index,
                path=path,
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                block=blank,
                at=block.at,
                prefix=block.prefix,
                digest=digest(text),
            )
        )
        events.append(
            MediaOffloaded(
                tool_call_id=tool_call_id,
                tool_name=tool_name,
                path=path,
                media_type=block.media_type,
                size=len(data),
                tokens=block.tokens,
                tokens_after=counter.count_text(text),
            )
        )
    if not moved:
        return MediaMoved(content, tuple(events))
    return MediaMoved(out, tuple(events), tuple(moved))


def _movable(block: MediaBlock, raw: Mapping[str, Any]) -> tuple[bytes | None, str | None, str]:
    """The bytes to save and the block's JSON without its payload, or why it stays."""
    data = block.decoded()
    if data is None:
        return None, None, "its payload is not valid base64"
    if base64.b64encode(data).decode("ascii") != block.payload:
        return (
            None,
            None,
            (
                "its payload is not canonical base64 (line breaks, spaces or stray padding bits): "
                "encoding the bytes again would not give it back exactly"
            ),
        )
    blank = blank_payload(raw, block.at)
    if blank is None:
        return None, None, "its keys do not come back identical from JSON"
    return data, blank, ""


def planned_text(content: Sequence[Any], thread_id: str, tool_call_id: str) -> list[Any] | None:
    """``content`` with every media block that has a payload replaced by the reference it
    would get at its first-choice path, without writing (for a clearing's estimate);
    ``None`` when a block would have to stay (:func:`move_media` would refuse it), so
    clearing neither counts the result as freed nor tries it again at every compaction."""
    out = list(content)
    for block in media_blocks(content):
        if _movable(block, content[block.index])[0] is None:
            return None
        path = media_path(thread_id, tool_call_id, block)
        out[block.index] = {"type": "text", "text": reference(block, path, block.size_bound())}
    return out


# -- reading blocks --------------------------------------------------------------------------


_Located = tuple[tuple[str, ...], str, str, str]
"""Where a payload sits (keys, prefix), the payload, and its MIME type."""


def _payload(block: Mapping[str, Any]) -> _Located | None:
    """Where the base64 payload of a media block sits, the payload and its MIME type, or
    ``None`` if it has none."""
    kind = block.get("type")
    if kind in ("image_url", "input_image"):  # OpenAI: a data URL, or a URL
        url = block.get("image_url")
        if isinstance(url, Mapping):
            return _data_url(url.get("url"), ("image_url", "url"))
        return _data_url(url, ("image_url",))
    source = block.get("source")
    if isinstance(source, Mapping):  # Anthropic
        data = source.get("data")
        if source.get("type") == "base64" and isinstance(data, str):
            return ("source", "data"), "", data, _mime(source.get("media_type"), kind)
        return None
    if isinstance(block.get("base64"), str):  # LangChain
        return ("base64",), "", block["base64"], _mime(block.get("mime_type"), kind)
    data = block.get("data")
    if block.get("source_type") == "base64" and isinstance(data, str):  # LangChain, older
        return ("data",), "", data, _mime(block.get("mime_type"), kind)
    if kind == "input_audio":  # OpenAI
        audio = block.get("input_audio")
        if isinstance(audio, Mapping) and isinstance(audio.get("data"), str):
            fmt = audio.get("format")
            mime = f"audio/{fmt}" if isinstance(fmt, str) and fmt else _mime(None, kind)
            return ("input_audio", "data"), "", audio["data"], mime
        return None
    if kind in ("file", "input_file"):  # OpenAI: a data URL in file_data
        inner = block.get("file")
        if isinstance(inner, Mapping):
            return _data_url(inner.get("file_data"), ("file", "file_data"))
        return _data_url(block.get("file_data"), ("file_data",))
    for key in ("url", "data"):
        found = _data_url(block.get(key), (key,))
        if found is not None:
            return found
    return None


def _data_url(url: object, at: tuple[str, ...]) -> _Located | None:
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    head, comma, payload = url.partition(",")
    if not comma or not head.endswith(";base64"):
        return None
    media_type = head[len("data:") : -len(";base64")].split(";")[0]
    return at, head + comma, payload, media_type or "application/octet-stream"


def _mime(value: object, kind: object) -> str:
    if isinstance(value, str) and "/" in value:
        return value
    return "application/octet-stream"


def _what(kind: str, media_type: str) -> str:
    top = media_type.partition("/")[0].lower()
    if kind in IMAGE_TYPES or top == "image":
        return "image"
    if kind in ("audio", "input_audio") or top == "audio":
        return "audio"
    if kind == "video" or top == "video":
        return "video"
    return "file"
