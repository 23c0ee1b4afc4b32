"""Archive files anyone may have edited: reading and searching them never raises.

A transcript segment is JSON lines on storage that a user, a script or an agent with write
access can change. Whatever a ``.jsonl`` file holds (any bytes, any JSON on any line, a
nesting the JSON reader gives up on), :func:`decode_jsonl` returns messages or raises
``ValueError``, and ``history_search`` (tool and CLI) names the file it could not read and
searches the rest.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage, HumanMessage

from ctxfs import Workspace
from ctxfs._archive._codec import decode_jsonl, encode_jsonl
from ctxfs._cli._main import main
from ctxfs.tools._history import search_history

_fresh = itertools.count()
_SEGMENT = "/transcripts/t/segment-0002.jsonl"

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "data", "content", "id", "x"]), inner, max_size=4
        )
    ),
    max_leaves=12,
)
_damaged = st.one_of(
    st.binary(max_size=200),
    st.lists(_json, min_size=1, max_size=4).map(
        lambda lines: "\n".join(json.dumps(v) for v in lines).encode()
    ),
    st.integers(1, 5_000).map(lambda depth: b"[" * depth + b"]" * depth),
)


def _workspace(damaged: bytes) -> Workspace:
    ws = Workspace(f"memory://damage{next(_fresh)}")
    good: list[BaseMessage] = [HumanMessage("the needle is here", id="h1")]
    ws.write_bytes("/transcripts/t/segment-0001.jsonl", encode_jsonl(good))
    ws.write_bytes(_SEGMENT, damaged)
    return ws


@settings(max_examples=80, deadline=None)
@given(data=_damaged)
def test_decoding_returns_messages_or_raises_value_error(data: bytes) -> None:
    try:
        messages = decode_jsonl(data)
    except ValueError:
        return
    assert all(isinstance(m, BaseMessage) for m in messages)


@settings(max_examples=40, deadline=None)
@given(data=_damaged)
def test_search_finds_the_rest_and_names_what_it_could_not_read(data: bytes) -> None:
    ws = _workspace(data)
    notes: list[str] = []
    hits = search_history(ws, "needle", thread_id=None, notes=notes)
    assert any(h.path.endswith("segment-0001.jsonl") and h.message == 0 for h in hits)
    try:
        decode_jsonl(data)
    except ValueError:
        assert any(_SEGMENT in note for note in notes), notes


def test_a_line_that_is_not_a_message_is_named_not_raised() -> None:
    # the case found by hand: a line that is a JSON object without "type" (a KeyError inside
    # LangChain's reader) ended `ctxfs transcripts --search` with an internal error
    ws = _workspace(b'{"number": "x", "entries": "y"}\n')
    notes: list[str] = []
    hits = search_history(ws, "needle", notes=notes)
    assert [h.message for h in hits] == [0]
    assert notes == [f"{_SEGMENT} is not a readable transcript"]


def test_the_transcripts_command_searches_past_a_damaged_segment(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    ws = Workspace(root)
    ws.write_bytes("/transcripts/t/segment-0001.jsonl", encode_jsonl([HumanMessage("needle")]))
    ws.write_bytes(_SEGMENT, b'{"number": "x"}\n')
    assert main(["transcripts", str(root), "--search", "needle"]) == 0
