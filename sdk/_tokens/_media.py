"""Media blocks of a message: images counted as providers bill them, never their bytes as text.

A message content may hold images, audio, video or files beside its text. Providers do not
bill their base64 payload as text: an image costs what its pixels cost, whatever its size in
bytes. :func:`media_tokens` counts each media block of a content so:

- **An image in Anthropic's format** (``{"type": "image", "source": {...}}``): scaled down
  until its long edge is at most 1,568 pixels, then ``width * height / 750`` tokens, at most
  :data:`MAX_IMAGE_TOKENS`.
- **An image in OpenAI's format** (``{"type": "image_url", ...}`` or ``"input_image"``): with
  ``detail="low"``, 85 tokens; otherwise (``"high"``, ``"auto"``, none) fitted into 2,048 x
  2,048, its short side brought down to 768, then 85 tokens plus 170 per 512-pixel tile.
- **An image in LangChain's own format** (``{"type": "image", "base64" | "url" | "data": ...}``),
  which may go to either: the larger of the two.
- **An image whose size cannot be read** (a URL, a format not recognised, a broken payload):
  :data:`MAX_IMAGE_TOKENS`, the most either provider bills for one image.
- **Other media** (audio, video, files, documents, PDFs): one token per
  :data:`MEDIA_BYTES_PER_TOKEN` bytes of payload, at least :data:`MAX_IMAGE_TOKENS`. Providers
  bill these by duration or by page; the payload is a conservative stand-in for both (a
  recorded second or a page of PDF is a few kilobytes at least).

The width and height are read from the image's header (``imagesize``), decoding only the first
:data:`_HEAD_BASE64_CHARS` characters of the base64 payload: a 12 MB image is not decoded.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "IMAGE_TYPES",
    "MAX_IMAGE_TOKENS",
    "MEDIA_BYTES_PER_TOKEN",
    "MEDIA_TYPES",
    "image_size",
    "image_tokens",
    "media_tokens",
]

MAX_IMAGE_TOKENS = 1_600
"""Tokens counted for an image whose size is unknown: Anthropic's most for one image (OpenAI's
most at high detail is 1,445)."""

MEDIA_BYTES_PER_TOKEN = 32
"""Payload bytes per token counted for media other than images."""

_ANTHROPIC_LONG_EDGE = 1_568
_OPENAI_BOX, _OPENAI_SHORT, _OPENAI_TILE = 2_048, 768, 512
_OPENAI_BASE, _OPENAI_PER_TILE = 85, 170
_HEAD_BASE64_CHARS = 128 * 1024  # 96 KiB of image: past any JPEG's EXIF block to its size
_TEXT_TYPES = frozenset({"text", "reasoning", "thinking", "tool_use", "tool_call", "tool_result"})
MEDIA_TYPES = frozenset(
    {"audio", "input_audio", "video", "file", "input_file", "document", "media", "pdf"}
)
"""Block types of media other than images, in the formats ctxfs knows."""
COUNTED_AS_MEDIA = MEDIA_TYPES | {"image", "image_url", "input_image"}
"""Block types :func:`media_tokens` counts; every other block is counted as its text."""

IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
"""Block types of images, in the formats ctxfs knows."""


def anthropic_image_tokens(width: int, height: int) -> int:
    """Tokens Anthropic bills for an image of ``width`` x ``height`` pixels."""
    scale = min(1.0, _ANTHROPIC_LONG_EDGE / max(width, height))
    w, h = width * scale, height * scale
    return min(MAX_IMAGE_TOKENS, math.ceil(w * h / 750))


def openai_image_tokens(width: int, height: int, detail: str | None = None) -> int:
    """Tokens OpenAI bills for an image of ``width`` x ``height`` pixels at ``detail``."""
    if detail == "low":
        return _OPENAI_BASE
    w, h = float(width), float(height)
    fit = min(1.0, _OPENAI_BOX / max(w, h))
    w, h = w * fit, h * fit
    short = min(1.0, _OPENAI_SHORT / min(w, h))
    w, h = w * short, h * short
    tiles = math.ceil(w / _OPENAI_TILE) * math.ceil(h / _OPENAI_TILE)
    return _OPENAI_BASE + _OPENAI_PER_TILE * tiles


def image_tokens(width: int, height: int, provider: str | None = None) -> int:
    """Tokens of an image for ``provider`` (``"anthropic"``, ``"openai"``; ``None``: the larger).

    An unknown size (a side not positive) costs :data:`MAX_IMAGE_TOKENS`.
    """
    if width <= 0 or height <= 0:
        return MAX_IMAGE_TOKENS
    if provider == "anthropic":
        return anthropic_image_tokens(width, height)
    if provider == "openai":
        return openai_image_tokens(width, height)
    return max(anthropic_image_tokens(width, height), openai_image_tokens(width, height))


def media_tokens(content: object) -> int:
    """Tokens of the media blocks of a message content (0 for a string or text-only blocks).

    Args:
        content: A message content: a string, or a list of strings and blocks.

    Returns:
        The sum over its media blocks, counted as the module docstring says.
    """
    if isinstance(content, str) or not isinstance(content, list):
        return 0
    total = 0
    for block in content:
        if isinstance(block, Mapping):
            total += _block_tokens(block)
    return total


def _block_tokens(block: Mapping[str, Any]) -> int:
    kind = block.get("type")
    if not isinstance(kind, str) or kind in _TEXT_TYPES:
        return 0
    if kind in ("image_url", "input_image"):  # OpenAI
        url = block.get("image_url")
        detail = block.get("detail")
        if isinstance(url, Mapping):
            detail = url.get("detail", detail)
            url = url.get("url")
        if detail == "low":
            return _OPENAI_BASE
        width, height = image_size(_data_url_payload(url))
        if width <= 0 or height <= 0:
            return MAX_IMAGE_TOKENS
        return openai_image_tokens(width, height, detail if isinstance(detail, str) else None)
    if kind == "image":
        source = block.get("source")
        if isinstance(source, Mapping):  # Anthropic
            payload = source.get("data") if source.get("type") == "base64" else None
            return image_tokens(*image_size(payload), provider="anthropic")
        payload = block.get("base64") or block.get("data")
        if payload is None:
            payload = _data_url_payload(block.get("url"))
        return image_tokens(*image_size(payload))
    if kind in MEDIA_TYPES:
        return max(MAX_IMAGE_TOKENS, math.ceil(_payload_bytes(block) / MEDIA_BYTES_PER_TOKEN))
    return 0  # a block ctxfs does not know: neither text nor media


def _data_url_payload(url: object) -> str | None:
    """The base64 payload of a ``data:...;base64,`` URL, or ``None``."""
    if isinstance(url, str) and url.startswith("data:"):
        head, _, payload = url.partition(",")
        return payload if head.endswith(";base64") else None
    return None


def image_size(payload: object) -> tuple[int, int]:
    """Width and height read from the head of a base64 image, or ``(-1, -1)``."""
    if not isinstance(payload, str) or not payload:
        return (-1, -1)
    head = payload[:_HEAD_BASE64_CHARS]
    head = head[: len(head) - len(head) % 4]
    import imagesize  # on the first image: the workspace commands count none

    try:
        raw = base64.b64decode(head, validate=False)
        width, height = imagesize.get(io.BytesIO(raw))
    except (binascii.Error, ValueError, OSError, IndexError, TypeError, AttributeError):
        return (-1, -1)
    return (int(width), int(height))


def _payload_bytes(block: Mapping[str, Any]) -> int:
    """Bytes of a media block's base64 payload, wherever the format keeps it (0 if none)."""
    found = 0
    for value in block.values():
        if isinstance(value, str):
            payload = _data_url_payload(value) or (value if len(value) > 256 else "")
            found = max(found, len(payload) * 3 // 4)
        elif isinstance(value, Mapping):
            found = max(found, _payload_bytes(value))
    return found
