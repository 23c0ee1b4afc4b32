"""Media blocks of tool results moved to binary files (issue 24.8): byte-exact files, the rest
of the message unchanged, a reference that names the file, honest token counts."""

from __future__ import annotations

import base64
import itertools
from typing import Any

import pytest
from _images import png as _png
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    MediaOffloaded,
    OffloadFailed,
    ToolResultCleared,
    Workspace,
    WorkspaceError,
    pointer_of,
    resolve_pointers,
)
from ctxfs._archive._codec import decode_jsonl, encode_jsonl
from ctxfs._compaction._media import MEDIA_REFERENCE, extension, media_blocks
from ctxfs._tokens._media import media_tokens
from ctxfs.tools import tool_functions

_fresh = itertools.count()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# Every format a tool result may carry a base64 payload in: (build, media type).
FORMATS: list[tuple[str, Any]] = [
    ("image/png", lambda p: {"type": "image", "base64": p, "mime_type": "image/png"}),
    (
        "image/jpeg",
        lambda p: {"type": "image", "source_type": "base64", "data": p, "mime_type": "image/jpeg"},
    ),
    (
        "image/gif",
        lambda p: {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/gif", "data": p},
        },
    ),
    (
        "image/webp",
        lambda p: {"type": "image_url", "image_url": {"url": f"data:image/webp;base64,{p}"}},
    ),
    ("image/png", lambda p: {"type": "input_image", "image_url": f"data:image/png;base64,{p}"}),
    ("audio/wav", lambda p: {"type": "input_audio", "input_audio": {"data": p, "format": "wav"}}),
    ("audio/mpeg", lambda p: {"type": "audio", "base64": p, "mime_type": "audio/mpeg"}),
    ("video/mp4", lambda p: {"type": "video", "base64": p, "mime_type": "video/mp4"}),
    (
        "application/pdf",
        lambda p: {
            "type": "file",
            "file": {"file_data": f"data:application/pdf;base64,{p}", "filename": "a.pdf"},
        },
    ),
    (
        "application/pdf",
        lambda p: {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": p},
        },
    ),
    (
        "text/csv",
        lambda p: {"type": "input_file", "file_data": f"data:text/csv;base64,{p}"},
    ),
]


def _engine(**results: Any) -> tuple[ContextEngine, Workspace]:
    ws = Workspace(f"memory://media{next(_fresh)}")
    policy = ContextPolicy(max_input_tokens=200_000, tool_results=results)
    return ContextEngine(ws, policy), ws


texts = st.lists(
    st.one_of(st.text(max_size=30), st.builds(lambda t: {"type": "text", "text": t}, st.text())),
    max_size=3,
)


def _payloads(max_bytes: int) -> st.SearchStrategy[list[tuple[int, bytes]]]:
    """One to three media blocks: a format of FORMATS (by index) and the bytes it carries."""
    block = st.tuples(
        st.sampled_from(range(len(FORMATS))), st.binary(min_size=1, max_size=max_bytes)
    )
    return st.lists(block, min_size=1, max_size=3)


@settings(max_examples=40, deadline=None)
@given(
    before=texts,
    after=texts,
    payloads=_payloads(max_bytes=600),
    broken=st.sets(st.integers(0, 2), max_size=2),
)
def test_moved_blocks_are_byte_exact_and_the_rest_is_unchanged(
    before: list[Any], after: list[Any], payloads: list[tuple[int, bytes]], broken: set[int]
) -> None:
    engine, ws = _engine(max_media_bytes=0)  # every block with a payload moves
    media: list[Any] = []
    for n, (which, data) in enumerate(payloads):
        payload = _b64(data)
        if n in broken:  # not base64: it must stay as it is
            payload = payload[:1] + "*" + payload[1:]
        media.append(FORMATS[which][1](payload))
    content = [*before, *media, *after]
    message = ToolMessage(content, tool_call_id="call_1", name="shot", id="m1")
    outcome = engine.offload_tool_result_detailed(message, thread_id="t")

    assert outcome.message.id == "m1" and outcome.message.tool_call_id == "call_1"
    out = outcome.message.content
    assert isinstance(out, list) and len(out) == len(content)
    assert out[: len(before)] == before
    assert out[len(before) + len(media) :] == after
    moved = [e for e in outcome.events if isinstance(e, MediaOffloaded)]
    failed = [e for e in outcome.events if isinstance(e, OffloadFailed)]
    assert len(moved) + len(failed) == len(media)
    moved_paths = iter(moved)
    for n, (which, data) in enumerate(payloads):
        block = out[len(before) + n]
        if n in broken:
            assert block == media[n]  # kept inline, untouched
            continue
        event = next(moved_paths)
        assert ws.read_bytes(event.path) == data
        assert event.path.endswith("." + extension(FORMATS[which][0]))
        assert event.size == len(data) and event.media_type == FORMATS[which][0]
        assert event.tokens == media_tokens([media[n]])
        assert block["type"] == "text"
        text = block["text"]
        assert event.path in text and FORMATS[which][0] in text and f"{len(data):,} bytes" in text
        assert event.tokens_after == engine.token_counter.count_text(text)


def test_the_reference_of_an_image_gives_its_pixels_and_read_file_stays_bounded() -> None:
    engine, ws = _engine(max_media_bytes=1_000)
    data = _png(800, 600, padding=5_000)
    block = {"type": "image", "base64": _b64(data), "mime_type": "image/png"}
    message = ToolMessage([{"type": "text", "text": "shot:"}, block], tool_call_id="c1")
    outcome = engine.offload_tool_result_detailed(message, thread_id="t")
    (event,) = outcome.events
    assert isinstance(event, MediaOffloaded)
    text = outcome.message.content[1]["text"]  # type: ignore[index]
    assert text.startswith(MEDIA_REFERENCE.format(what="image"))
    assert "800x600 px" in text and event.path == "/tool_results/t/c1.block2.png"
    # what the reference advises: ctxfs's read_file refuses a binary file, in one line
    read_file = {f.name: f for f in tool_functions(ws)}["read_file"]
    answer = read_file(file_path=event.path)
    assert answer.startswith("Error:") and "binary" in answer and len(answer) < 400
    # the billed tokens of the image against the reference's
    counter = engine.token_counter
    assert counter.count_message(outcome.message) < counter.count_message(message)


def test_which_blocks_move_when_the_tool_returns() -> None:
    engine, _ = _engine(max_media_bytes=100_000, threshold={"tokens": 2_000})
    small_image = {"type": "image", "base64": _b64(_png(10, 10, 100)), "mime_type": "image/png"}
    large_image = {"type": "image", "base64": _b64(_png(10, 10, 120_000)), "mime_type": "image/png"}
    by_url = {"type": "image", "url": "https://example.com/x.png"}
    short_audio = {"type": "audio", "base64": _b64(b"\x01" * 3_000), "mime_type": "audio/wav"}
    # 80,000 bytes: billed over the threshold as ctxfs counts audio, under the byte cap
    long_audio = {"type": "audio", "base64": _b64(b"\x01" * 80_000), "mime_type": "audio/wav"}
    assert media_tokens([long_audio]) > 2_000 >= media_tokens([short_audio])
    content: list[Any] = [small_image, large_image, by_url, short_audio, long_audio]
    outcome = engine.offload_tool_result_detailed(
        ToolMessage(content, tool_call_id="c1"), thread_id="t"
    )
    out = outcome.message.content
    assert [out[i] == content[i] for i in range(5)] == [True, False, True, True, False]
    assert len(outcome.events) == 2


def test_large_text_beside_a_small_image_is_offloaded_with_the_image_moved() -> None:
    # Found in review: a page's text with a screenshot stayed inline whole ("the workspace
    # keeps only text"): the image was too small to move, and the text could not be saved
    # beside it.
    engine, ws = _engine(max_media_bytes=100_000, threshold={"tokens": 2_000})
    image = {"type": "image", "base64": _b64(_png(10, 10, 100)), "mime_type": "image/png"}
    page = " ".join(f"word{i}" for i in range(3_000))
    original = ToolMessage([{"type": "text", "text": page}, image], tool_call_id="c1")
    outcome = engine.offload_tool_result_detailed(original, thread_id="t")
    kinds = [type(e).__name__ for e in outcome.events]
    assert kinds == ["MediaOffloaded", "ToolResultOffloaded"], kinds
    assert pointer_of(outcome.message) is not None
    assert engine.token_counter.count_message(outcome.message) < 300
    assert resolve_pointers([outcome.message], ws)[0].content == original.content


def test_old_media_is_moved_when_results_are_cleared() -> None:
    ws = Workspace(f"memory://media{next(_fresh)}")
    policy = ContextPolicy(
        max_input_tokens=100_000,
        clearing={
            "trigger": {"tokens": 500},
            "keep": {"results": 1},
            "min_tokens": 50,
            "clear_at_least": {"tokens": 100},
            "frees_per_rewrite": 0.0,
        },
    )
    engine = ContextEngine(ws, policy)
    data = _png(1_000, 1_000, padding=300)
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(data)}"}}
    content: list[Any] = ["the chart:", image, {"type": "text", "text": "done", "id": "x"}]
    messages: list[BaseMessage] = [HumanMessage("go")]
    for n in range(3):
        call = [{"name": "shot", "args": {}, "id": f"c{n}"}]
        messages.append(AIMessage("", tool_calls=call, id=f"a{n}"))
        messages.append(ToolMessage(list(content), tool_call_id=f"c{n}", name="shot"))
    messages.append(AIMessage("ok"))
    out = engine.clear_tool_results(messages, thread_id="t")
    moved = [e for e in out.events if isinstance(e, MediaOffloaded)]
    cleared = [e for e in out.events if isinstance(e, ToolResultCleared)]
    assert [e.tool_call_id for e in moved] == ["c0", "c1"]
    assert [e.tool_call_id for e in cleared] == ["c0", "c1"]
    for event in moved:
        assert ws.read_bytes(event.path) == data
    for event in cleared:  # the saved text names the image's file
        assert event.path in out.messages[1 + 2 * int(event.tool_call_id[1:]) + 1].content
        saved = ws.read_text(event.path)
        assert saved.startswith("the chart:[ctxfs: image moved out") and saved.endswith("done")
        assert event.tokens_after < event.tokens
    counter = engine.token_counter
    assert cleared[0].tokens == counter.count_message(messages[2])
    assert out.messages[-2] is messages[-2]  # the kept result keeps its image
    assert media_blocks(out.messages[-2].content)


def _through_the_archive(message: BaseMessage) -> BaseMessage:
    """``message`` as an archived transcript gives it back (JSONL)."""
    (back,) = decode_jsonl(encode_jsonl([message]))
    return back


_CLEAR_ALL = {
    "trigger": {"tokens": 1},
    "keep": {"results": 0},
    "min_tokens": 1,
    "clear_at_least": {"tokens": 1},
    "frees_per_rewrite": 0.0,
}


@settings(max_examples=30, deadline=None)
@given(
    before=texts,
    after=texts,
    payloads=_payloads(max_bytes=300),
    at_return=st.booleans(),
    offload_text=st.booleans(),
    own_metadata=st.booleans(),
)
def test_moved_blocks_resolve_to_the_original_content(
    before: list[Any],
    after: list[Any],
    payloads: list[tuple[int, bytes]],
    at_return: bool,
    offload_text: bool,
    own_metadata: bool,
) -> None:
    """Moved when the tool returns or when the result is cleared, with the text around them
    offloaded or not, kept in the context or archived: resolve_pointers gives back the very
    blocks, every key, in their places, and the message's own metadata."""
    ws = Workspace(f"memory://media{next(_fresh)}")
    results = {
        "max_media_bytes": 0 if at_return else 10**9,
        "threshold": {"tokens": 1 if offload_text else 100_000},
    }
    policy = ContextPolicy(max_input_tokens=100_000, tool_results=results, clearing=_CLEAR_ALL)
    engine = ContextEngine(ws, policy)
    media = [FORMATS[which][1](_b64(data)) for which, data in payloads]
    content = [*before, *media, *after]
    kwargs = {"ctxfs": {"the tool's": "own"}} if own_metadata else {}
    original = ToolMessage(
        content, tool_call_id="c1", name="shot", id="m1", additional_kwargs=kwargs
    )
    returned = engine.offload_tool_result_detailed(original, thread_id="t").message
    history: list[BaseMessage] = [
        HumanMessage("go", id="h"),
        AIMessage("", tool_calls=[{"name": "shot", "args": {}, "id": "c1"}], id="a"),
        returned,
        AIMessage("ok", id="z"),
    ]
    cleared = engine.clear_tool_results(history, thread_id="t").messages[2]
    if at_return:
        assert not media_blocks(returned.content)
    assert isinstance(cleared.content, str)  # the clearing reached it: text, media and all
    for held in (returned, cleared):
        for kept in (held, _through_the_archive(held)):
            (back,) = resolve_pointers([kept], ws)
            assert back.content == content
            assert back.additional_kwargs == kwargs
            assert back.id == "m1" and back.tool_call_id == "c1"


def test_a_payload_that_is_not_canonical_base64_stays_inline() -> None:
    engine, ws = _engine(max_media_bytes=0)
    data = bytes(range(200))
    wrapped = _b64(data)[:76] + "\n" + _b64(data)[76:]  # MIME line breaks: valid, not canonical
    stray = "QR=="  # decodes to b"A", which encodes as "QQ=="
    blocks = [
        {"type": "image", "base64": wrapped, "mime_type": "image/png"},
        {"type": "audio", "base64": stray, "mime_type": "audio/wav"},
    ]
    outcome = engine.offload_tool_result_detailed(
        ToolMessage(list(blocks), tool_call_id="c1"), thread_id="t"
    )
    assert outcome.message.content == blocks
    assert [type(e) for e in outcome.events] == [OffloadFailed, OffloadFailed]
    assert all("not canonical base64" in e.reason for e in outcome.events)  # type: ignore[attr-defined]
    assert not ws.exists("/tool_results/t/c1.block1.png")


def test_a_moved_block_whose_file_is_gone_or_changed_does_not_resolve() -> None:
    engine, ws = _engine(max_media_bytes=0)
    data = _png(4, 4, 50)
    block = {"type": "image", "base64": _b64(data), "mime_type": "image/png"}
    outcome = engine.offload_tool_result_detailed(
        ToolMessage(["see:", block], tool_call_id="c1"), thread_id="t"
    )
    (event,) = outcome.events
    assert isinstance(event, MediaOffloaded)
    assert resolve_pointers([outcome.message], ws)[0].content == ["see:", block]
    for changed in (data[:-1] + b"\x00", data[:-1]):  # same size, other bytes; shorter
        ws.write_bytes(event.path, changed)
        with pytest.raises(WorkspaceError, match="not the"):
            resolve_pointers([outcome.message], ws)
    ws.rm(event.path)
    with pytest.raises(WorkspaceError):
        resolve_pointers([outcome.message], ws)
    # a copy whose reference text was edited is content: nothing to rebuild
    edited = outcome.message.model_copy(update={"content": ["see:", {"type": "text", "text": "x"}]})
    assert resolve_pointers([edited], ws) == [edited]
