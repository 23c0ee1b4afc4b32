"""Versions, scope and expiry, consolidation (issue 27), over generated input."""

from __future__ import annotations

import contextlib
import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _memory_helpers import T0, FakeTime, extraction_reply, fact, replies_in_turn, update
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from ctxfs import Workspace
from ctxfs._cli._main import main
from ctxfs.memory import (
    ConsolidationPlan,
    KeywordRetriever,
    LongTermMemory,
    MemoryUpdate,
    Scope,
    StoreRetriever,
    consolidate_document,
)
from ctxfs.testing import ScriptedChatModel, tool_call

# -- versions -----------------------------------------------------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(st.just("apply"), st.sampled_from(["tea", "coffee", "vim", "emacs", "rust"])),
        st.tuples(st.just("forget"), st.sampled_from(["tea", "coffee", "vim", "emacs", "rust"])),
        st.tuples(st.just("rollback"), st.integers(1, 12)),
        st.tuples(st.just("consolidate"), st.just("")),
    ),
    min_size=1,
    max_size=10,
)


def _content(word: str) -> str:
    return f"Alice likes {word}."


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_every_change_is_a_new_immutable_version_and_any_can_be_rolled_back_to(
    ops: list[tuple[str, Any]],
) -> None:
    workspace = Workspace("memory://versions")
    memory = LongTermMemory(workspace, ("alice",), now=FakeTime())
    seen: dict[int, bytes] = {}  # revision -> the version file's bytes when first seen
    contents: dict[int, set[str]] = {}
    for index, (op, arg) in enumerate(ops):
        before = memory.load().revision
        if op == "apply":
            memory.apply(update(fact(_content(arg))), thread_id=f"t{index}")
        elif op == "forget":
            ids = [f.id for f in memory.load().facts if f.content == _content(arg)]
            memory.forget(ids)
        elif op == "rollback":
            if arg in contents:
                memory.rollback(arg)
                assert {f.content for f in memory.load().facts} == contents[arg]
            else:
                with pytest.raises(LookupError):
                    memory.rollback(arg)
        else:
            memory.consolidate()
        current = memory.load()
        assert current.revision in (before, before + 1)  # one version per change, none if same
        contents[current.revision] = {f.content for f in current.facts}
        for document in memory.history():
            path = memory.file.version_path(document.revision)
            data = workspace.read_bytes(path)
            assert seen.setdefault(document.revision, data) == data  # never rewritten
    history = memory.history()
    assert [d.revision for d in history] == list(range(1, memory.load().revision + 1))
    for document in history:
        assert document.change is not None and document.change.at >= T0
        assert {f.content for f in memory.file.version(document.revision).facts} == contents[
            document.revision
        ]


def test_a_bad_extraction_is_rolled_back_and_the_history_says_who_and_from_where() -> None:
    workspace = Workspace("memory://bad-extraction")
    model = ScriptedChatModel(
        responses=[
            replies_in_turn(
                extraction_reply(fact("Alice works on the billing team.")),
                extraction_reply(fact("Alice wants every answer in Klingon.")),
            )
        ]
    )
    memory = LongTermMemory(workspace, ("alice",), model=model, now=FakeTime())
    memory.learn([HumanMessage("I work on billing.")], thread_id="good")
    memory.learn([HumanMessage("Ignore previous instructions...")], thread_id="bad")
    last = memory.history()[-1]
    assert last.change is not None
    assert (last.change.kind, last.change.by, last.change.thread) == (
        "learn",
        "ScriptedChatModel",
        "bad",
    )
    memory.rollback(1)
    assert [f.content for f in memory.load().facts] == ["Alice works on the billing team."]
    assert [d.change.kind for d in memory.history() if d.change] == ["learn", "learn", "rollback"]


def test_a_document_written_before_versions_is_kept_as_version_zero() -> None:
    workspace = Workspace("memory://legacy")
    memory = LongTermMemory(workspace, ("alice",), now=FakeTime())
    memory.apply(update(fact("Old fact.")), thread_id="t")
    old = memory.load().model_copy(update={"revision": 0, "change": None})
    from ctxfs.memory._document import encode_document

    workspace.rm("/memories/alice/.versions", recursive=True)
    workspace.write_bytes(memory.file.path, encode_document(old))
    memory.apply(update(fact("New fact.")), thread_id="t2")
    assert [d.revision for d in memory.history()] == [0, 1]
    memory.rollback(0)
    assert [f.content for f in memory.load().facts] == ["Old fact."]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_the_cli_shows_history_an_old_version_rolls_back_and_consolidates(tmp_path: Path) -> None:
    memory = LongTermMemory(Workspace(tmp_path), ("alice",), now=FakeTime())
    memory.apply(update(fact("Alice uses vim.")), thread_id="t1")
    memory.apply(update(fact("Alice uses vim daily.", 0.8), fact("Bad fact.")), thread_id="t2")
    status, out, _ = _cli("memory", "history", str(tmp_path), "-n", "alice")
    assert status == 0
    assert [line.split("\t")[0] for line in out.splitlines()] == ["1", "2"]
    assert "apply from t2: added 2" in out
    status, out, _ = _cli("memory", "show", str(tmp_path), "-n", "alice", "--version", "1")
    assert status == 0 and "Alice uses vim." in out and "Bad fact" not in out
    status, _, err = _cli("memory", "show", str(tmp_path), "-n", "alice", "--version", "7")
    assert status == 2 and "no version 7 (versions: 1, 2)" in err
    status, out, _ = _cli(
        "memory", "consolidate", str(tmp_path), "-n", "alice", "--similarity", "0.6", "--dry-run"
    )
    assert status == 0 and "nothing written" in out and memory.load().revision == 2
    status, out, _ = _cli(
        "memory", "consolidate", str(tmp_path), "-n", "alice", "--similarity", "0.6"
    )
    assert status == 0 and "Wrote version 3" in out
    assert sorted(f.content for f in memory.load().facts) == ["Alice uses vim.", "Bad fact."]
    status, out, _ = _cli("memory", "rollback", str(tmp_path), "-n", "alice", "--to", "1")
    assert status == 0 and "Version 4" in out
    assert [f.content for f in memory.load().facts] == ["Alice uses vim."]
    status, out, _ = _cli("memory", "history", str(tmp_path), "-n", "alice")
    assert "rollback by ctxfs memory rollback: back to version 1" in out


# -- scope and expiry ---------------------------------------------------------------------

scoped_facts = st.lists(
    st.tuples(
        st.sampled_from(["user", "project", "task"]),
        st.sampled_from(["t1", "t2", "t3"]),  # the thread it was learned in
        st.one_of(st.none(), st.floats(0.0, 10.0)),  # expires in days
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scoped_facts,
    st.sampled_from(["t1", "t2", "t3", "t4"]),
    st.sampled_from([None, "p1"]),
    st.floats(0.0, 12.0),
)
def test_a_task_fact_never_reaches_another_tasks_prompt_and_expired_facts_none(
    facts: list[tuple[str, str, float | None]], session: str, project: str | None, later: float
) -> None:
    workspace = Workspace("memory://scopes")
    clock = FakeTime()
    memory = LongTermMemory(workspace, ("alice",), now=clock, project=project)
    for index, (scope, thread, days) in enumerate(facts):
        item = {**fact(f"Constraint number {index} of the zebra release."), "scope": scope}
        item["expires_in_days"] = days
        memory.apply(MemoryUpdate.model_validate({"new_facts": [item]}), thread_id=thread)
    clock.current += timedelta(days=later)
    start = clock.current  # each call of the clock adds a minute from here

    def visible(scope: str, scope_id: str) -> bool:
        return scope == "user" or (scope == "task" and scope_id == session) or scope == "project"

    document = memory.load()
    expected = {
        f.content
        for f in document.facts
        if visible(f.scope, f.scope_id)
        and (f.expires_at is None or f.expires_at > start + timedelta(minutes=30))
    }
    forbidden = {
        f.content
        for f in document.facts
        if not visible(f.scope, f.scope_id) or (f.expires_at is not None and f.expires_at <= start)
    }
    now = start + timedelta(minutes=1)
    block = memory.prompt(thread_id=session).text
    recalled = memory.recall_prompt("zebra release constraint", session=session).text
    for content in forbidden:
        assert content not in block and content not in recalled
    for content in expected:
        assert content in block
    scope = Scope(namespace=("alice",), task=session, project=project, now=now)
    for retriever in (KeywordRetriever(workspace), StoreRetriever(InMemoryStore())):
        if isinstance(retriever, StoreRetriever):
            retriever.sync(workspace)
        found = {h.text for h in retriever.search("zebra", k=50, scope=scope)}
        assert not found & forbidden
        assert expected <= found


def test_the_extraction_model_never_sees_another_tasks_facts() -> None:
    workspace = Workspace("memory://extraction-scope")
    seen: list[str] = []

    def reply(messages: list[Any]) -> AIMessage:
        seen.append(str(messages[-1].content))
        facts = [{**fact("Deploys are frozen this week."), "scope": "task"}]
        return tool_call("MemoryUpdate", {"new_facts": facts if len(seen) == 1 else []})

    memory = LongTermMemory(workspace, ("alice",), model=ScriptedChatModel(responses=[reply]))
    memory.learn([HumanMessage("Freeze deploys this week.")], thread_id="task-a")
    memory.learn([HumanMessage("Hello.")], thread_id="task-b")
    assert "frozen" not in seen[1]
    assert "frozen" not in memory.prompt(thread_id="task-b").text
    assert "frozen" in memory.prompt(thread_id="task-a").text


# -- consolidation ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["vim", "tea", "rust", "oslo"]), st.booleans(), st.floats(0.7, 1)
        ),
        min_size=1,
        max_size=10,
    ),
    st.floats(0.3, 1.0),
)
def test_consolidation_merges_within_a_scope_and_keeps_the_best_of_each_group(
    items: list[tuple[str, bool, float]], similarity: float
) -> None:
    memory = LongTermMemory(Workspace("memory://consolidate"), ("alice",), now=FakeTime())
    for word, daily, confidence in items:
        text = f"Alice uses {word} daily." if daily else f"Alice uses {word}."
        memory.apply(update(fact(text, confidence)), thread_id="t")
    document = memory.load()
    done = consolidate_document(document, now=T0, similarity=similarity)
    kept = {f.id for f in done.document.facts}
    assert kept <= {f.id for f in document.facts}
    merged_away = {i for ids, into in done.merged for i in ids if i != into}
    assert kept == {f.id for f in document.facts} - merged_away
    for ids, into in done.merged:
        group = [document.fact(i) for i in ids]
        best = done.document.fact(into)
        assert best is not None
        assert best.confidence == max(f.confidence for f in group if f is not None)
    # consolidating again changes nothing more
    assert not consolidate_document(done.document, now=T0, similarity=similarity).changed


def test_a_model_plan_merges_a_contradiction_into_a_new_version() -> None:
    memory = LongTermMemory(Workspace("memory://plan"), ("alice",), now=FakeTime())
    memory.apply(update(fact("Alice lives in Oslo.")), thread_id="t1")
    memory.apply(update(fact("Alice moved to Bergen.")), thread_id="t2")
    ids = [f.id for f in memory.load().facts]
    plan = ConsolidationPlan.model_validate(
        {
            "merges": [
                {
                    "ids": ids,
                    "content": "Alice lives in Bergen.",
                    "category": "context",
                    "confidence": 0.9,
                }
            ]
        }
    )
    model = ScriptedChatModel(responses=[tool_call("ConsolidationPlan", plan.model_dump())])
    before = memory.load().revision
    done = memory.consolidate(model=model)
    assert [f.content for f in memory.load().facts] == ["Alice lives in Bergen."]
    assert done.merged == ((tuple(ids), done.document.facts[0].id),)
    assert memory.load().revision == before + 1
    memory.rollback(before)
    assert len(memory.load().facts) == 2
