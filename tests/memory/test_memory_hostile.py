"""Memory under hostile input (issue 24, classes 7 and 12), over generated input.

- A memory file (or an archived segment) nested thousands of levels deep is a format error
  naming the file from load, injection, retrieval and ``ctxfs memory ...``, never a
  ``RecursionError``.
- A thread offered again, however long, queues nothing again.
- Any valid namespace (dots included) and any thread syncs into a LangGraph store.
- Recalled passages never repeat what the ``<memory>`` block already injects.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from _memory_helpers import FakeClock, FakeTime, fact, update
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from ctxfs import TranscriptArchive, Workspace
from ctxfs._cli._main import main
from ctxfs._errors import MemoryFormatError
from ctxfs.memory import (
    KeywordRetriever,
    LongTermMemory,
    MemorySettings,
    Scope,
    StoreRetriever,
    TurnQueue,
    collect_entries,
)
from ctxfs.memory import _queue as queue_module
from ctxfs.testing import ScriptedChatModel


def _archive(workspace: Workspace, thread: str, messages: list[BaseMessage]) -> None:
    archive = TranscriptArchive(workspace, thread)
    segment, _ = archive.write_segment(messages, start=0, tokens=1)
    archive.commit(segment, summary=AIMessage("summary"))


# -- depth --------------------------------------------------------------------------------


def _nested(depth: int, where: str) -> bytes:
    """A memory document with ``depth`` levels of nesting put in one of its fields."""
    deep = "[" * depth + "]" * depth
    head = '{"format": "ctxfs-memory", "version": 1, "namespace": ["alice"]'
    if where == "top":
        return deep.encode()
    if where == "field":
        return f'{head}, "facts": {deep}}}'.encode()
    return f'{head}, "user": {{"work": {deep}}}, "extra": {"{" * 3}}}'.encode()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(100, 20_000), st.sampled_from(["top", "field", "broken"]))
def test_a_deeply_nested_memory_is_a_format_error_naming_the_file_everywhere(
    depth: int, where: str
) -> None:
    workspace = Workspace("memory://deep")
    workspace.write_bytes("/memories/alice/memory.json", _nested(depth, where))
    memory = LongTermMemory(workspace, ("alice",))
    for step in (
        memory.load,
        memory.prompt,
        lambda: memory.apply(update(fact("X.")), thread_id="t"),
    ):
        with pytest.raises(MemoryFormatError, match=r"/memories/alice/memory\.json"):
            step()
    # retrieval skips the file (and names it on the log): it still searches the rest
    LongTermMemory(workspace, ("bob",)).apply(update(fact("Bob likes tea.")), thread_id="t")
    hits = KeywordRetriever(workspace).search("tea")
    assert [h.text for h in hits] == ["Bob likes tea."]
    assert StoreRetriever(InMemoryStore()).sync(workspace) == 1


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_the_cli_reports_a_deep_memory_as_one_line_naming_the_file(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.write_bytes("/memories/alice/memory.json", _nested(5_000, "field"))
    for argv in (
        ("show", "-n", "alice"),
        ("forget", "-n", "alice", "fact-000000000000"),
        ("history", "-n", "alice"),
        ("rollback", "-n", "alice", "--to", "1"),
        ("consolidate", "-n", "alice"),
    ):
        status, _, err = _cli("memory", argv[0], str(tmp_path), *argv[1:])
        assert status == 2, err
        assert "/memories/alice/memory.json" in err and "5,001 levels deep" in err
        assert "Recursion" not in err and "internal error" not in err
    status, _, err = _cli("memory", "search", str(tmp_path), "anything")
    assert status == 1 and "internal error" not in err


def test_a_deeply_nested_transcript_segment_is_skipped_by_retrieval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    workspace = Workspace("memory://deep-transcript")
    _archive(workspace, "t1", [HumanMessage("The vault key is blue.")])
    path = next(p for p in workspace.glob("**/segment-*.jsonl", "/transcripts").paths)
    workspace.write_bytes(path, b'{"type": "human", "data": ' + b"[" * 50_000 + b"\n")
    _archive(workspace, "t2", [HumanMessage("The vault door is red.")])
    with caplog.at_level("WARNING", logger="ctxfs.memory"):
        hits = KeywordRetriever(workspace).search("vault")
    assert [h.text for h in hits] == ["The vault door is red."]
    assert path in caplog.text


# -- a long thread offered again ---------------------------------------------------------


def _thread(n: int) -> list[BaseMessage]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"message {i}", id=f"m{i}") for i in range(n)
    ]


def test_a_thread_of_more_than_ten_thousand_messages_is_queued_once() -> None:
    queue = TurnQueue(debounce_seconds=0)
    messages = _thread(12_000)
    assert queue.add("t", messages) == 12_000
    queue.drain()
    for _ in range(3):
        assert queue.add("t", messages) == 0
    assert queue.add("t", [*messages, HumanMessage("one more", id="new")]) == 1


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 8),
    st.lists(st.integers(0, 40), min_size=1, max_size=8),
    st.booleans(),
)
def test_every_message_of_a_growing_thread_is_queued_exactly_once(
    limit: int, lengths: list[int], ids: bool
) -> None:
    """The state of a thread grows (sorted offer lengths) and is offered after each run;
    the queue keeps only ``limit`` keys, far fewer than the thread holds."""
    total = max(lengths)
    messages = [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"message {i}", id=f"m{i}" if ids else None)
        for i in range(total)
    ]
    queue = TurnQueue(debounce_seconds=0, clock=FakeClock())
    queue._seen = queue_module.SeenMessages(limit)  # the bound under test
    queued: list[BaseMessage] = []
    for length in sorted(lengths):
        queue.add("t", messages[:length])
        queued.extend(m for batch in queue.drain() for m in batch.messages)
        queue.add("t", messages[:length])  # offered again at once: nothing new
        assert queue.drain() == []
    assert [m.content for m in queued] == [m.content for m in messages]


# -- namespaces and threads in a store ---------------------------------------------------

segment = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9._%-]{0,12}", fullmatch=True).filter(
    lambda s: "%" not in s
)
thread_ids = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(segment, min_size=1, max_size=3), thread_ids)
def test_any_namespace_and_any_thread_sync_into_a_store_and_are_found(
    namespace: list[str], thread: str
) -> None:
    workspace = Workspace("memory://store-names")
    memory = LongTermMemory(workspace, namespace, now=FakeTime())
    memory.apply(update(fact("The deploy key rotates monthly.")), thread_id=thread)
    _archive(workspace, thread, [HumanMessage("The staging cluster is in Oslo.")])
    retriever = StoreRetriever(InMemoryStore())
    assert retriever.sync(workspace) == 2
    scope = Scope(namespace=tuple(namespace))
    assert [h.text for h in retriever.search("deploy key", scope=scope)] == [
        "The deploy key rotates monthly."
    ]
    assert [h.text for h in retriever.search("staging Oslo", scope=scope)] == [
        "The staging cluster is in Oslo."
    ]


def test_the_dotted_namespace_of_the_issue_syncs() -> None:
    workspace = Workspace("memory://dotted")
    LongTermMemory(workspace, ("alice.smith",)).apply(update(fact("Uses zsh.")), thread_id="t.1")
    LongTermMemory(workspace, ("bob",)).apply(update(fact("Uses fish.")), thread_id="t2")
    retriever = StoreRetriever(InMemoryStore())
    assert retriever.sync(workspace) == 2
    assert [h.text for h in retriever.search("uses", scope=Scope(namespace=("alice.smith",)))] == [
        "Uses zsh."
    ]


# -- recall does not repeat the injected facts -------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 12), st.integers(10, 400), st.integers(1, 6))
def test_recalled_passages_never_repeat_an_injected_fact(
    facts: int, budget: int, recall_k: int
) -> None:
    workspace = Workspace("memory://repeat")
    settings_ = MemorySettings(max_injection_tokens=budget, recall_k=recall_k)
    memory = LongTermMemory(workspace, ("alice",), settings=settings_, now=FakeTime())
    contents = [f"The ledger service number {i} runs on host ledger-{i}." for i in range(facts)]
    memory.apply(update(*(fact(c, 0.7 + i / 100) for i, c in enumerate(contents))), thread_id="t")
    said = [HumanMessage(c) for c in contents] + [HumanMessage("The ledger backup runs daily.")]
    _archive(workspace, "t", said)
    injected = memory.prompt()
    shown = {f.content for f in memory.load().facts if f.id in injected.facts}
    recalled = memory.recall_prompt("ledger service host backup")
    for content in shown:
        assert content not in recalled.text
    # what is not injected is still recalled, up to recall_k, each sentence once (a fact
    # left out of the block, or its passage), and the backup passage
    assert len(recalled.facts) == min(recall_k, facts - len(shown) + 1)


def test_the_middleware_recall_leaves_out_the_injected_facts() -> None:
    from langchain.agents import create_agent

    from ctxfs.memory import MemoryMiddleware

    workspace = Workspace("memory://mw-repeat")
    memory = LongTermMemory(workspace, ("alice",))
    memory.apply(update(fact("Alice's ledger runs on port 7001.")), thread_id="t0")
    _archive(workspace, "t0", [HumanMessage("Alice's ledger runs on port 7001.")])
    model = ScriptedChatModel(responses=["ok"])
    agent = create_agent(model, [], middleware=[MemoryMiddleware(memory)])
    state = agent.invoke({"messages": [("user", "which port does the ledger use?")]})
    assert "port 7001" in state["memory_prompt"]
    assert state.get("memory_recalled", "") == ""


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["same words", "other words", "same words"]), max_size=12))
def test_a_semantic_store_syncs_any_repetition_of_texts(texts: list[str]) -> None:
    from ctxfs.testing import HashingEmbeddings

    workspace = Workspace("memory://repeated-texts")
    for index, text in enumerate(texts):
        _archive(workspace, f"t{index % 3}", [HumanMessage(text)])
    store = InMemoryStore(index={"dims": 64, "embed": HashingEmbeddings(64), "fields": ["text"]})
    retriever = StoreRetriever(store)
    assert retriever.sync(workspace) == len(collect_entries(workspace))
    assert len(retriever.search("words", k=50)) == len(collect_entries(workspace))


# -- fact ids -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["x\n## Forged heading", "a`b", "a b", "</memory>", "x]y", "\u2028", "z\x00"]
)
def test_a_fact_id_that_could_start_a_line_or_a_section_is_refused(
    bad: str, tmp_path: Path
) -> None:
    """An id is printed as it is in the memory's Markdown and in the consolidation prompt:
    one an application chose with a line break forged lines there."""
    from datetime import UTC, datetime

    from pydantic import ValidationError

    from ctxfs.memory import Fact

    now = datetime.now(UTC)
    with pytest.raises(ValidationError, match="id"):
        Fact(id=bad, content="c", category="knowledge", confidence=0.5, created_at=now)
    assert Fact(id="pref_1.a:b@c+d", content="c", category="knowledge", confidence=0.5,
                created_at=now).id == "pref_1.a:b@c+d"  # fmt: skip
    # read back from a file edited by hand: a format error naming the file and the field
    workspace = Workspace(tmp_path)
    memory = LongTermMemory(workspace, ("alice",))
    memory.apply(update(fact("Alice likes tea.")), thread_id="t")
    path = "/memories/alice/memory.json"
    text = workspace.read_text(path)
    (known,) = (f.id for f in memory.load().facts)
    workspace.write_text(path, text.replace(known, json.dumps(bad)[1:-1]))
    with pytest.raises(MemoryFormatError, match=r"memory\.json.*facts\.0\.id"):
        memory.load()
    status, _, err = _cli("memory", "show", str(tmp_path), "-n", "alice")
    assert status == 2 and "facts.0.id" in err and "internal error" not in err
