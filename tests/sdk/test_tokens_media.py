"""Media blocks are counted as providers bill them (issue 24.8): images by their pixels, read
from the image's header; never the base64 payload as text; a size that cannot be read costs
the most one image can cost."""

from __future__ import annotations

import base64
import math
import struct

import pytest
from _images import png as _png
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage, ToolMessage

from ctxfs import TiktokenCounter
from ctxfs._tokens import MESSAGE_OVERHEAD_TOKENS
from ctxfs._tokens._media import (
    MAX_IMAGE_TOKENS,
    MEDIA_BYTES_PER_TOKEN,
    anthropic_image_tokens,
    image_tokens,
    media_tokens,
    openai_image_tokens,
)


def _gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 20


def _jpeg(width: int, height: int, exif: int = 0) -> bytes:
    app1 = b"\xff\xe1" + struct.pack(">H", exif + 2) + b"\x00" * exif if exif else b""
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app1 + sof + b"\xff\xd9"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _blocks(data: bytes, mime: str = "image/png") -> dict[str, dict[str, object]]:
    payload = _b64(data)
    return {
        "anthropic": {
            "type": "image",
            "source": {"type": "base64", "media_type": mime, "data": payload},
        },
        "openai": {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{payload}"}},
        "langchain": {"type": "image", "base64": payload, "mime_type": mime},
    }


def test_provider_rules_on_known_sizes() -> None:
    # Anthropic: w*h/750, the long edge brought down to 1,568, at most 1,600
    assert anthropic_image_tokens(200, 200) == math.ceil(200 * 200 / 750) == 54
    assert anthropic_image_tokens(1092, 1092) == 1590
    assert anthropic_image_tokens(4000, 3000) == MAX_IMAGE_TOKENS
    # OpenAI: 85 + 170 per 512-px tile after fitting into 2048 and bringing the short side to 768
    assert openai_image_tokens(1024, 1024) == 85 + 170 * 4  # 768x768: 2x2 tiles
    assert openai_image_tokens(2048, 4096) == 85 + 170 * 6  # 1024x2048 -> 768x1536: 2x3
    assert openai_image_tokens(300, 200) == 85 + 170
    assert openai_image_tokens(4000, 3000, "low") == 85
    assert image_tokens(1024, 1024) == max(anthropic_image_tokens(1024, 1024), 765)
    assert image_tokens(-1, -1) == MAX_IMAGE_TOKENS


@pytest.mark.parametrize("form", ["anthropic", "openai", "langchain"])
@pytest.mark.parametrize(
    ("image", "size"),
    [(_png(640, 480), (640, 480)), (_gif(64, 32), (64, 32)), (_jpeg(800, 600, 30_000), (800, 600))],
)
def test_an_image_is_counted_by_its_pixels_in_every_format(
    form: str, image: bytes, size: tuple[int, int]
) -> None:
    block = _blocks(image)[form]
    provider = {"anthropic": "anthropic", "openai": "openai", "langchain": None}[form]
    assert media_tokens([block]) == image_tokens(*size, provider=provider)


def test_a_12_mb_image_costs_its_pixels_not_its_bytes() -> None:
    image = _png(1920, 1080, padding=12_000_000)
    message = HumanMessage([{"type": "text", "text": "what is this?"}, _blocks(image)["anthropic"]])
    counter = TiktokenCounter()
    tokens = counter.count_message(message)
    text = counter.count_text("what is this?")
    assert tokens == MESSAGE_OVERHEAD_TOKENS + text + anthropic_image_tokens(1920, 1080)
    assert tokens < 2_000  # not millions (the base64), not 4 (nothing)


def test_unknown_sizes_cost_the_most_one_image_can() -> None:
    for block in [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "image", "url": "https://example.com/cat.png"},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        {"type": "image", "base64": _b64(b"not an image at all" * 10)},
        {"type": "image", "base64": "%%% not base64 %%%"},
    ]:
        assert media_tokens([block]) == MAX_IMAGE_TOKENS, block
    assert media_tokens([{"type": "image_url", "image_url": {"url": "x", "detail": "low"}}]) == 85


def test_other_media_are_counted_by_their_payload() -> None:
    small = {"type": "input_audio", "input_audio": {"data": _b64(b"\x00" * 100), "format": "wav"}}
    assert media_tokens([small]) == MAX_IMAGE_TOKENS
    video = b"\x00" * 3_000_000
    block = {"type": "file", "base64": _b64(video), "mime_type": "video/mp4"}
    assert media_tokens([block]) == math.ceil(len(video) / MEDIA_BYTES_PER_TOKEN)


def test_text_and_strings_carry_no_media_tokens() -> None:
    assert media_tokens("a string with data:image/png;base64,AAAA inside") == 0
    assert media_tokens(["plain", {"type": "text", "text": "t"}, {"type": "tool_use"}]) == 0


@settings(max_examples=60, deadline=None)
@given(
    width=st.integers(1, 20_000),
    height=st.integers(1, 20_000),
    padding=st.integers(0, 200_000),
    form=st.sampled_from(["anthropic", "openai", "langchain"]),
)
def test_any_image_costs_its_size_bounded_whatever_its_bytes(
    width: int, height: int, padding: int, form: str
) -> None:
    """The class: every image, every format, any payload size: counted from its pixels, at
    most what one image can cost, and the payload is never tokenized as text."""
    block = _blocks(_png(width, height, padding))[form]
    provider = {"anthropic": "anthropic", "openai": "openai", "langchain": None}[form]
    tokens = media_tokens([block])
    assert tokens == image_tokens(width, height, provider=provider)
    assert 1 <= tokens <= MAX_IMAGE_TOKENS
    texts: list[str] = []

    class Spy(TiktokenCounter):
        def count_text(self, text: str) -> int:
            texts.append(text)
            return super().count_text(text)

    result = ToolMessage([block], tool_call_id="c1")
    assert Spy().count_message(result) == MESSAGE_OVERHEAD_TOKENS + tokens
    assert texts == []


_WORDS = " ".join(f"word{i}" for i in range(2_000))


@pytest.mark.parametrize(
    "block",
    [
        {
            "type": "search_result",
            "source": "s",
            "title": "t",
            "content": [{"type": "text", "text": _WORDS}],
        },
        {"type": "json", "json": {"rows": _WORDS}},
        {"type": "reasoning", "reasoning": _WORDS},
        {"type": "thinking", "thinking": _WORDS, "signature": "sig"},
        {"type": "tool_result", "tool_use_id": "x", "content": _WORDS},
        {"type": "something-new", "payload": _WORDS},
        {"text_without_type": _WORDS},
    ],
    ids=lambda block: str(block.get("type", "untyped")),
)
def test_a_block_that_is_neither_text_nor_media_is_counted_by_its_text(
    block: dict[str, object],
) -> None:
    """It was counted as nothing: a 4,000-token search result as 4 tokens, so the request
    was undercounted and clearing passed it by."""
    counter = TiktokenCounter()
    plain = counter.count_message(ToolMessage(_WORDS, tool_call_id="c"))
    assert counter.count_message(ToolMessage([block], tool_call_id="c")) >= plain


def test_a_tool_use_block_of_a_listed_call_is_counted_once() -> None:
    from langchain_core.messages import AIMessage

    counter = TiktokenCounter()
    call = {"name": "write", "args": {"content": _WORDS}, "id": "w1"}
    use = {"type": "tool_use", "id": "w1", "name": "write", "input": {"content": _WORDS}}
    listed = counter.count_message(AIMessage("", tool_calls=[call]))
    both = counter.count_message(AIMessage([use], tool_calls=[call]))
    assert listed <= both < listed + 20
    other = {**use, "id": "w2"}  # a block of no listed call is text of its own
    assert counter.count_message(AIMessage([other], tool_calls=[call])) > 1.9 * listed
