"""Threads branch (issue 23): a fork, a lost storage reply or a racing reader never stops
compaction; each branch keeps its own segments, and nothing of any branch is lost."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ctxfs import (
    ArchiveFailed,
    ArchiveRepaired,
    CompactionResult,
    ContextEngine,
    ContextOverBudget,
    ContextPolicy,
    TranscriptArchive,
    Workspace,
)
from ctxfs._cli._main import main
from ctxfs.testing import Fault, FaultyStore
from tests.sdk._branch_check import check_branch, named_segments, own_chain

WINDOW = 4_000
POLICY = ContextPolicy(
    max_input_tokens=WINDOW,
    clearing={"enabled": False},
    summarization={"trigger": {"tokens": 2_000}, "keep": {"messages": 4}},
)


def clock() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


def turn(label: str, n: int) -> list[BaseMessage]:
    words = " ".join(f"{label}{n}w{i}" for i in range(60))
    return [
        HumanMessage(f"{label} asks {n}: {words}", id=f"{label}-h{n}"),
        AIMessage(f"{label} answers {n}: {words}", id=f"{label}-a{n}"),
    ]


class Line:
    """One history: what its agent saw (``everything``) and what the engine left it."""

    def __init__(self, engine: ContextEngine, context: list[BaseMessage], seen: list[BaseMessage]):
        self.engine, self.context, self.everything = engine, list(context), list(seen)
        self.results: list[CompactionResult] = []

    def fork(self) -> Line:
        return Line(self.engine, self.context, self.everything)

    def step(self, label: str, n: int, thread: str = "t") -> CompactionResult:
        new = turn(label, n)
        self.everything += new
        result = self.engine.compact([*self.context, *new], thread_id=thread)
        self.context = result.messages
        self.results.append(result)
        return result

    def until_summarized(self, label: str, start: int = 0) -> int:
        n = start
        while not self.step(label, n).summarized:
            n += 1
            assert n < start + 50, "never summarized"
        return n + 1


def healthy(result: CompactionResult) -> None:
    bad = [e for e in result.events if isinstance(e, ArchiveFailed | ContextOverBudget)]
    assert not bad, bad
    assert result.request_tokens <= WINDOW


def test_a_fork_from_an_older_summary_gets_its_own_branch_and_compacts() -> None:
    # The case: segment 1, then segment 2 on the continuation, then the state after
    # segment 1 goes on. On 0.2 every later compaction failed and the context grew.
    ws = Workspace("memory://branch-fork")
    engine = ContextEngine(ws, POLICY, clock=clock)
    main = Line(engine, [SystemMessage("agent", id="sys")], [SystemMessage("agent", id="sys")])
    main.until_summarized("m")
    after_one = main.fork()
    end = 100
    for _ in range(4):  # until main archives messages the fork does not share
        end = main.until_summarized("m", end)

    fork = after_one
    for n in range(30):
        healthy(fork.step("f", n))
    assert sum(r.summarized for r in fork.results) >= 3
    check_branch(ws, "t", fork.everything, fork.context)
    check_branch(ws, "t", main.everything, main.context)
    # the fork's summary names its own branch only: segment 1, then its own
    named = named_segments(fork.context, "t")
    fork_chain = own_chain(ws, "t", named[-1])
    main_chain = own_chain(ws, "t", named_segments(main.context, "t")[-1])
    assert named == fork_chain[-len(named) :]
    assert fork_chain[0] == main_chain[0] == 1
    assert main_chain[-1] not in fork_chain and fork_chain[-1] not in main_chain

    branches = TranscriptArchive(ws, "t").branches()
    assert [b.numbers for b in branches] == [tuple(main_chain), tuple(fork_chain)]
    shared = [n for n in main_chain if n in fork_chain]
    assert branches[1].forked_from == shared[-1]
    assert branches[1].number == fork_chain[len(shared)]


def test_every_head_write_losing_its_reply_is_recognised_and_compaction_carries_on() -> None:
    # The case: the index head's write lands but its answer is lost, on every head
    # write after the first summary. On 0.2 each later compaction was refused.
    raw = Workspace("memory://branch-lost-head")
    store = FaultyStore(raw.store)
    ws = Workspace(store)
    engine = ContextEngine(ws, POLICY, clock=clock)
    line = Line(engine, [SystemMessage("agent", id="sys")], [SystemMessage("agent", id="sys")])
    line.until_summarized("x")
    index = TranscriptArchive(ws, "t").index_path
    store.add(Fault(method="write", kind="lost_response", path=index, times=None))
    for n in range(100, 130):
        healthy(line.step("x", n))
    assert sum(r.summarized for r in line.results) >= 4
    assert store.fired, "no fault was injected"
    check_branch(raw, "t", line.everything, line.context)
    branches = TranscriptArchive(raw, "t").branches()
    assert len(branches) == 1  # recognised as this writer's own, not taken for a fork


def test_a_reader_racing_the_first_commit_reads_without_failing() -> None:
    ws = Workspace("memory://branch-race")  # two archives, as two processes would hold
    writer, reader = TranscriptArchive(ws, "t"), TranscriptArchive(ws, "t")
    messages = [HumanMessage("one", id="1"), AIMessage("two", id="2")]
    listing = ws.ls
    raced: list[bool] = []

    def ls_after_the_writer(path: str, *args: Any, **kwargs: Any) -> Any:
        if not raced:  # the reader found no index; the writer commits before it rebuilds
            raced.append(True)
            committed = writer.recent()
            segment, _ = writer.write_segment(messages, start=0, tokens=1, committed=committed)
            writer.commit(segment, summary=HumanMessage("s", id="s"), committed=committed)
        return listing(path, *args, **kwargs)

    ws.ls = ls_after_the_writer  # type: ignore[method-assign]
    assert [m.id for m in reader.read_all()] == ["1", "2"]
    assert raced
    assert [s.number for s in TranscriptArchive(ws, "t").segments()] == [1]


def _renumber(value: object) -> Callable[[Workspace], None]:
    def damage(ws: Workspace) -> None:
        path = TranscriptArchive(ws, "t").index_path
        document = json.loads(ws.read_text(path))
        document["segments"][0]["number"] = value
        ws.write_text(path, json.dumps(document))

    return damage


def test_an_entry_whose_number_is_not_an_integer_is_repaired_not_raised() -> None:
    for value in ["1", 1.0, None, True, [1]]:
        ws = Workspace(f"memory://branch-number-{value!r}")
        engine = ContextEngine(ws, POLICY, clock=clock)
        line = Line(engine, [SystemMessage("agent", id="sys")], [SystemMessage("agent", id="sys")])
        end = line.until_summarized("n")
        _renumber(value)(ws)
        results = [line.step("n", n) for n in range(end, end + 20)]
        for result in results:
            healthy(result)
        assert any(isinstance(e, ArchiveRepaired) for e in results[0].events), value
        assert sum(r.summarized for r in results) >= 2
        check_branch(ws, "t", line.everything, line.context)


def test_two_writers_of_one_branch_at_one_moment_keep_both_and_the_loser_is_told() -> None:
    ws = Workspace("memory://branch-concurrent")
    one, two = TranscriptArchive(ws, "t"), TranscriptArchive(ws, "t")
    seen_one, seen_two = one.recent(), two.recent()
    a, _ = one.write_segment([HumanMessage("a", id="a")], start=0, tokens=1, committed=seen_one)
    b, _ = two.write_segment([HumanMessage("b", id="b")], start=0, tokens=1, committed=seen_two)
    one.commit(a, summary=HumanMessage("sa", id="sa"), committed=seen_one)
    two.commit(b, summary=HumanMessage("sb", id="sb"), committed=seen_two)
    assert not one.repairs
    (told,) = two.repairs
    assert "another writer committed segment 1" in told and "two branches" in told
    branches = TranscriptArchive(ws, "t").branches()
    assert [b.numbers for b in branches] == [(1,), (2,)]


def test_twin_writers_of_the_same_segment_share_one_and_its_first_summary() -> None:
    ws = Workspace("memory://branch-twins")
    one, two = TranscriptArchive(ws, "t"), TranscriptArchive(ws, "t")
    seen_one, seen_two = one.recent(), two.recent()
    messages = [HumanMessage("same", id="x")]
    a, _ = one.write_segment(messages, start=0, tokens=1, committed=seen_one)
    b, _ = two.write_segment(messages, start=0, tokens=1, committed=seen_two)
    assert a.number == b.number == 1
    one.commit(a, summary=HumanMessage("first", id="s"), committed=seen_one)
    final = two.commit(b, summary=HumanMessage("second", id="s"), committed=seen_two)
    assert final.summary == "first"
    assert [s.number for s in TranscriptArchive(ws, "t").segments()] == [1]


def test_an_index_from_before_branches_reads_as_one_line() -> None:
    ws = Workspace("memory://branch-legacy")
    archive = TranscriptArchive(ws, "t")
    for n in range(3):
        seen = archive.recent()
        segment, _ = archive.write_segment(
            [HumanMessage(f"m{n}", id=f"m{n}")], start=n, tokens=1, committed=seen
        )
        archive.commit(segment, summary=HumanMessage("s", id=f"s{n}"), committed=seen)
    document = json.loads(ws.read_text(archive.index_path))
    for entry in document["segments"]:
        del entry["parent"]
    document["version"] = 4
    ws.write_text(archive.index_path, json.dumps(document))
    (branch,) = TranscriptArchive(ws, "t").branches()
    assert branch.numbers == (1, 2, 3)


def test_the_transcripts_command_lists_each_branch_and_its_segments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = Workspace(str(tmp_path / "ws"))
    archive = TranscriptArchive(ws, "t", clock=clock)

    def add(text: str, start: int, after: list[str]) -> str:
        seen = archive.recent(expected=after)
        segment, _ = archive.write_segment(
            [HumanMessage(text, id=text)], start=start, tokens=1, committed=seen
        )
        archive.commit(segment, summary=HumanMessage("s", id=f"s-{text}"), committed=seen)
        return segment.markdown_path

    one = add("one", 0, [])
    two = add("two", 1, [one])
    add("three", 2, [one, two])
    fork = add("fork", 1, [one])  # back to the state after segment 1
    add("fork-more", 2, [one, fork])
    assert main(["transcripts", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert "  2 branches:\n" in out
    assert "    branch 1: segments 1, 2, 3\n" in out
    assert "    branch 4: segments 1, 4, 5 (forked after segment 1)\n" in out
    assert [b.numbers for b in TranscriptArchive(ws, "t").branches()] == [(1, 2, 3), (1, 4, 5)]
    assert [m.id for m in TranscriptArchive(ws, "t").read_all(branch=5)] == [
        "one",
        "fork",
        "fork-more",
    ]


def test_each_branch_is_walked_from_its_summary_through_the_segments_it_continues() -> None:
    """On a forked thread the folder holds both branches' segments, and the summary names
    only its branch's latest ones ('and 6 older segments'): each .md says which segment it
    continues, so the model walks back from the one its summary names through its own
    branch's segments alone, and each of them holds that branch's messages."""
    ws = Workspace("memory://branch-walk")
    engine = ContextEngine(ws, POLICY, clock=clock)
    main = Line(engine, [SystemMessage("agent", id="sys")], [SystemMessage("agent", id="sys")])
    main.until_summarized("m")
    fork = main.fork()
    end = 100
    for _ in range(3):
        end = main.until_summarized("m", end)
    for n in range(25):
        healthy(fork.step("f", n))
    folder = TranscriptArchive(ws, "t").directory
    for line, other in ((main, r"f asks"), (fork, r"m asks 1\d\d:")):
        summary = str(line.context[1].content)
        named = re.findall(rf"{re.escape(folder)}/segment-\d+\.md", summary)
        walked, md = [], named[0]
        while md:
            walked.append(int(md[-7:-3]))
            text = ws.read_text(md)
            assert not re.search(other, text)  # the other branch's messages are not on it
            found = re.search(r"It continues (segment-\d+\.md)\.|It is the thread's first", text)
            assert found is not None, text[:400]
            md = f"{folder}/{found.group(1)}" if found.group(1) else ""
        assert walked[::-1] == own_chain(ws, "t", named_segments(line.context, "t")[-1])
