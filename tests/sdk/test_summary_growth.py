"""A summary's state stays bounded however long the thread grows; version 1 is still read."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import ContextEngine, ContextPolicy, Workspace
from ctxfs._pointers._pointer import digest
from ctxfs._summary._message import (
    MAX_LISTED,
    RECENT_SEGMENTS,
    SUMMARY_TAG,
    SummaryState,
    build_summary_message,
    is_summary,
    next_state,
    summary_state,
)

_fresh = itertools.count()


def writes(paths: list[str]) -> list[BaseMessage]:
    """One AI message writing each path, with its result."""
    messages: list[BaseMessage] = []
    for n, path in enumerate(paths):
        call: Any = {"name": "write_file", "args": {"file_path": path, "content": "x"}}
        messages += [
            AIMessage("", tool_calls=[{**call, "id": f"w{n}"}]),
            ToolMessage("ok", tool_call_id=f"w{n}", name="write_file"),
        ]
    return messages


def fold(previous: SummaryState | None, paths: list[str], number: int) -> HumanMessage:
    """The summary replacing a segment that wrote ``paths``, folding in ``previous``."""
    transcript = f"/transcripts/t/segment-{number:04d}.md"
    start = previous.next_index if previous else 1
    state = next_state(
        previous, writes(paths), next_index=start + 2 * len(paths), transcript=transcript
    )
    return build_summary_message(
        body=("intent", "summary", "next"),
        message_id=f"s{number}",
        state=state,
        first_index=start,
        transcript_dir="/transcripts/t",
        source="extractive",
    )


@settings(max_examples=60, deadline=None)
@given(
    segments=st.lists(
        st.lists(st.integers(0, 80).map(lambda n: f"/src/f{n:02d}.py"), max_size=12),
        min_size=1,
        max_size=40,
    )
)
def test_the_state_names_the_latest_paths_and_stays_bounded(segments: list[list[str]]) -> None:
    previous: SummaryState | None = None
    written: list[str] = []
    for number, paths in enumerate(segments, 1):
        message = fold(previous, paths, number)
        previous = summary_state(message)
        assert previous is not None
        written += paths
        # the latest distinct paths, by their last write, most recent last
        latest = list(dict.fromkeys(reversed(written)))
        assert previous.files == tuple(reversed(latest[:MAX_LISTED]))
        assert previous.earlier_files == (len(latest) > MAX_LISTED)
        assert previous.segment_count == number
        assert previous.transcripts == tuple(
            f"/transcripts/t/segment-{n:04d}.md"
            for n in range(max(1, number - RECENT_SEGMENTS + 1), number + 1)
        )
        # bounded: what the metadata holds does not depend on how many segments came before
        metadata = message.additional_kwargs["ctxfs"]
        assert len(metadata["files"]) <= MAX_LISTED
        assert len(metadata["transcripts"]) <= RECENT_SEGMENTS
        text = str(message.content)
        older = number - min(number, RECENT_SEGMENTS)
        assert (f"and {older} earlier in /transcripts/t)" in text) == (older > 0)
        named = "(and earlier ones, named in the transcript segments)"
        assert (named in text.split("Files written or edited: ")[1].split("\n")[0]) == (
            len(latest) > MAX_LISTED
        )


def test_the_text_names_the_latest_segments_and_where_the_others_are() -> None:
    previous: SummaryState | None = None
    for number in range(1, 9):
        message = fold(previous, [f"/f{number}.py"], number)
        previous = summary_state(message)
    text = str(message.content)
    assert (
        "the archived messages 15-16 are in /transcripts/t/segment-0008.md (earlier parts: "
        "/transcripts/t/segment-0004.md, /transcripts/t/segment-0005.md, "
        "/transcripts/t/segment-0006.md, /transcripts/t/segment-0007.md) and 3 older segments "
        "(each .md names the segment it continues)."
    ) in text
    assert (
        "Transcript segments: /transcripts/t/segment-0004.md, /transcripts/t/segment-0005.md, "
        "/transcripts/t/segment-0006.md, /transcripts/t/segment-0007.md, "
        "/transcripts/t/segment-0008.md (and 3 earlier in /transcripts/t)\n"
    ) in text


def version_1(segments: int, files: int) -> HumanMessage:
    """A summary as metadata version 1 wrote it: every path so far."""
    text = f"{SUMMARY_TAG}\nold summary"
    metadata = {
        "kind": "summary",
        "version": 1,
        "next_index": 500,
        "transcripts": [f"/transcripts/t/segment-{n:04d}.md" for n in range(1, segments + 1)],
        "files": [f"/src/{n}.py" for n in range(files)],
        "offloaded": ["/tool_results/t/a.txt"],
        "intent": "Port it.",
        "summary": "Ported half.",
        "source": "extractive",
        "digest": digest(text),
    }
    return HumanMessage(text, additional_kwargs={"ctxfs": metadata})


def test_a_version_1_summary_is_read_within_the_bounds_and_folds_on() -> None:
    state = summary_state(version_1(segments=120, files=200))
    assert state is not None
    assert state.segment_count == 120
    assert state.transcripts == tuple(f"/transcripts/t/segment-{n:04d}.md" for n in range(116, 121))
    assert state.files == tuple(f"/src/{n}.py" for n in range(170, 200))
    assert state.earlier_files and not state.earlier_offloaded
    assert state.offloaded == ("/tool_results/t/a.txt",)
    assert (state.intent, state.summary) == ("Port it.", "Ported half.")
    after = summary_state(fold(state, ["/src/new.py"], 121))
    assert after is not None
    assert after.segment_count == 121
    assert after.files[-1] == "/src/new.py" and len(after.files) == MAX_LISTED
    assert after.transcripts[-1] == "/transcripts/t/segment-0121.md"


def test_a_small_version_1_summary_reads_as_it_was() -> None:
    state = summary_state(version_1(segments=2, files=3))
    assert state is not None
    assert state.transcripts == ("/transcripts/t/segment-0001.md", "/transcripts/t/segment-0002.md")
    assert state.segment_count == 2
    assert state.files == ("/src/0.py", "/src/1.py", "/src/2.py")
    assert not state.earlier_files


def test_malformed_counts_are_ignored() -> None:
    message = version_1(segments=2, files=0)
    for bad in (True, -3, "7", None):
        data = {**message.additional_kwargs["ctxfs"], "segments": bad, "earlier_files": "yes"}
        state = summary_state(message.model_copy(update={"additional_kwargs": {"ctxfs": data}}))
        assert state is not None
        assert state.segment_count == 2 and not state.earlier_files


@pytest.mark.slow
def test_summary_size_stays_flat_through_the_engine() -> None:
    """Many summaries of one thread: the summary (text and metadata) does not grow."""
    policy = ContextPolicy(
        max_input_tokens=2_000, summarization={"trigger": {"messages": 24}, "keep": {"messages": 4}}
    )
    engine = ContextEngine(Workspace(f"memory://g{next(_fresh)}"), policy)
    state: list[BaseMessage] = [SystemMessage("You are a coding agent.")]
    sizes: list[int] = []
    for n in range(400):
        call: Any = {"name": "write_file", "args": {"file_path": f"/src/m{n}.py", "content": "x"}}
        state += [
            HumanMessage(f"request {n}"),
            AIMessage(f"writing {n}", tool_calls=[{**call, "id": f"c{n}"}]),
            ToolMessage("ok", tool_call_id=f"c{n}", name="write_file"),
        ]
        state = engine.compact(state, thread_id="t").messages
        summary = next((m for m in state if is_summary(m)), None)
        if summary is not None:
            sizes.append(len(json.dumps(summary.additional_kwargs)) + len(str(summary.content)))
    segments = summary_state(next(m for m in state if is_summary(m)))
    assert segments is not None and segments.segment_count > 40
    # once the lists are full (30 files), every later summary is the same size, give or
    # take the digits of growing numbers
    full = sizes[len(sizes) // 2 :]
    assert max(full) - min(full) < 200, (min(full), max(full))
