"""The memory document in the workspace: parsing, errors, safe updates, faults, every backend."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest
from _memory_helpers import FakeTime, fact, update
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs import BackendError, ReadOnlyPathError, Workspace
from ctxfs._layout import SDK_AREAS
from ctxfs.memory import (
    LongTermMemory,
    MemoryDocument,
    MemoryFile,
    MemoryFormatError,
    MemorySettings,
    parse_document,
)
from ctxfs.memory._document import encode_document
from ctxfs.testing import Fault, FaultyStore
from ctxfs.tools import tool_functions


def _memory(workspace: Workspace, **settings: object) -> LongTermMemory:
    return LongTermMemory(
        workspace, ("alice",), settings=MemorySettings.model_validate(settings), now=FakeTime()
    )


def test_an_update_writes_the_document_and_its_markdown(workspace: Workspace) -> None:
    memory = _memory(workspace)
    memory.apply(update(fact("Alice runs the billing service.", tags=["billing"])), thread_id="t1")
    document = parse_document(workspace.read_bytes("/memories/alice/memory.json"), "m")
    assert [f.content for f in document.facts] == ["Alice runs the billing service."]
    assert document.threads == ("t1",)
    markdown = workspace.read_text("/memories/alice/memory.md")
    assert "Alice runs the billing service. (knowledge, confidence 0.90" in markdown
    assert memory.load() == document


def test_a_namespace_has_its_own_folder(workspace: Workspace) -> None:
    LongTermMemory(workspace, ("alice", "coder")).apply(update(fact("Uses vim.")), thread_id="t")
    assert workspace.exists("/memories/alice/coder/memory.json")
    assert LongTermMemory(workspace, ("alice",)).load().facts == ()


@pytest.mark.parametrize("bad", [(), ("..",), ("a/b",), (".hidden",), ("x" * 65,), ("",)])
def test_a_namespace_must_be_plain_names(bad: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="namespace"):
        MemoryFile(Workspace("memory://ns"), bad)


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (
            lambda d: d["facts"][0].update(confidence=1.5),
            "facts.0.confidence",
            "less than or equal to 1",
        ),
        (lambda d: d["facts"][0].pop("content"), "facts.0.content", "Field required"),
        (lambda d: d["facts"][0].update(category="gossip"), "facts.0.category", "Input should be"),
        (lambda d: d["facts"][0].update(created_at="yesterday"), "facts.0.created_at", "datetime"),
        (lambda d: d.update(format="other"), "format", "expected 'ctxfs-memory'"),
        (lambda d: d.update(namespace=["bob"]), "namespace", "expected ['alice']"),
        (lambda d: d.update(colour="blue"), "colour", "Extra inputs are not permitted"),
    ],
)
def test_a_hand_edited_file_is_reported_by_file_and_field_and_never_overwritten(
    edit: object, field: str, message: str
) -> None:
    workspace = Workspace("memory://hand-edited")
    memory = _memory(workspace)
    memory.apply(update(fact("Alice runs the billing service.")), thread_id="t1")
    data = json.loads(workspace.read_bytes(memory.file.path))
    edit(data)  # type: ignore[operator]
    broken = json.dumps(data).encode()
    workspace.write_bytes(memory.file.path, broken)
    with pytest.raises(MemoryFormatError) as caught:
        memory.load()
    assert caught.value.field == field
    assert str(caught.value).startswith(f"/memories/alice/memory.json: field {field}: ")
    assert message in str(caught.value)
    with pytest.raises(MemoryFormatError):
        memory.apply(update(fact("Alice likes tea.")), thread_id="t2")
    with pytest.raises(MemoryFormatError):
        memory.forget(["anything"])
    assert workspace.read_bytes(memory.file.path) == broken


def test_a_malformed_file_is_left_as_it_is_on_every_backend(workspace: Workspace) -> None:
    memory = _memory(workspace)
    workspace.write_bytes(memory.file.path, b'{"format": "ctxfs-memory", "namespace": ["alice"], ')
    with pytest.raises(MemoryFormatError, match="not valid JSON"):
        memory.apply(update(fact("Alice likes tea.")), thread_id="t")
    assert workspace.read_bytes(memory.file.path).endswith(b'["alice"], ')


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_file_that_is_not_a_json_object_is_reported_by_file(data: bytes, reason: str) -> None:
    with pytest.raises(MemoryFormatError, match=f"^/m/memory.json: {reason}") as caught:
        parse_document(data, "/m/memory.json")
    assert caught.value.field is None


def test_a_storage_failure_during_the_write_leaves_the_previous_version(
    make_workspace: object,
) -> None:
    base = make_workspace()  # type: ignore[operator]
    store = FaultyStore(base.store)
    workspace = Workspace(store)
    memory = _memory(workspace)
    memory.apply(update(fact("First fact.")), thread_id="t1")
    before = workspace.read_bytes(memory.file.path)
    for kind in ("error", "torn_write"):
        store.add(Fault(method="write", kind=kind, path=memory.file.path))  # type: ignore[arg-type]
        with pytest.raises(BackendError):
            memory.apply(update(fact("Second fact.")), thread_id="t2")
        assert workspace.read_bytes(memory.file.path) == before
        assert [f.content for f in memory.load().facts] == ["First fact."]
    memory.apply(update(fact("Second fact.")), thread_id="t2")
    assert len(memory.load().facts) == 2


def test_a_version_copy_torn_mid_write_is_kept_whole_at_the_next_update() -> None:
    # it stayed torn for good ("versions are immutable: the first copy stays"): the history
    # skipped it with a warning and `ctxfs memory show --version 2` found no version 2
    raw = Workspace("memory://memory-torn-version")
    store = FaultyStore(raw.store)
    memory = _memory(Workspace(store, check=False))
    memory.apply(update(fact("First fact.")), thread_id="t1")
    version = memory.file.version_path(2)
    store.add(Fault(method="write", kind="torn_write", path=version))
    memory.apply(update(fact("Second fact.")), thread_id="t2")
    raw.write_bytes(version, raw.read_bytes(memory.file.path)[:40])  # and one left so by hand
    memory.apply(update(fact("Third fact.")), thread_id="t3")
    assert [d.revision for d in memory.history()] == [1, 2, 3]
    assert {f.content for f in memory.file.version(2).facts} == {"First fact.", "Second fact."}
    assert raw.read_bytes(version) == encode_document(memory.file.version(2))


def test_a_lost_response_is_recognised_as_the_write_it_was(workspace: Workspace) -> None:
    # the document was written whole, only the answer was lost: the update is done
    store = FaultyStore(workspace.store)
    memory = _memory(Workspace(store))
    store.add(Fault(method="write", kind="lost_response"))
    written = memory.apply(update(fact("Written all the same.")), thread_id="t")
    assert [f.content for f in written.document.facts] == ["Written all the same."]
    assert [f.content for f in memory.load().facts] == ["Written all the same."]
    assert [hit.method for hit in store.fired] == ["write"]
    assert [d.revision for d in memory.history()] == [1]


def test_the_markdown_failing_does_not_fail_the_update(workspace: Workspace) -> None:
    store = FaultyStore(workspace.store)
    memory = _memory(Workspace(store))
    store.add(Fault(method="write", kind="error", path=memory.file.markdown_path))
    memory.apply(update(fact("Kept.")), thread_id="t")
    assert [f.content for f in memory.load().facts] == ["Kept."]
    assert memory.file.render() is True
    assert "Kept." in workspace.read_text(memory.file.markdown_path)


def test_memories_are_read_only_to_the_agent_tools_unless_opted_in(workspace: Workspace) -> None:
    assert "/memories" in SDK_AREAS
    _memory(workspace).apply(update(fact("Alice likes tea.")), thread_id="t")
    tools = {t.name: t for t in tool_functions(workspace)}
    assert "Alice likes tea." in tools["read_file"](file_path="/memories/alice/memory.md")
    refused = tools["write_file"](file_path="/memories/alice/memory.md", content="x")
    assert refused.startswith("Error:") and "read-only" in refused
    opted_in = {
        t.name: t
        for t in tool_functions(
            workspace, read_only_areas=[a for a in SDK_AREAS if a != "/memories"]
        )
    }
    assert not opted_in["write_file"](file_path="/memories/alice/notes.md", content="x").startswith(
        "Error:"
    )
    with pytest.raises(ReadOnlyPathError):
        _memory(workspace.view(read_only=SDK_AREAS)).apply(update(fact("x")), thread_id="t")


def test_concurrent_writers_lose_no_fact(workspace: Workspace) -> None:
    writers = 3
    per_writer = 4
    errors: list[BaseException] = []

    def work(n: int) -> None:
        memory = LongTermMemory(Workspace(workspace.store), ("alice",))
        try:
            for i in range(per_writer):
                memory.apply(update(fact(f"Writer {n} learned thing {i}.")), thread_id=f"t{n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    document = LongTermMemory(workspace, ("alice",)).load()
    assert len(document.facts) == writers * per_writer
    assert set(document.threads) == {f"t{n}" for n in range(writers)}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(
            st.text(alphabet="abcdefgh ", min_size=1, max_size=12).filter(str.strip),
            min_size=1,
            max_size=4,
        ),
        min_size=2,
        max_size=3,
    )
)
def test_concurrent_updates_keep_the_union_of_their_facts(batches: list[list[str]]) -> None:
    workspace = Workspace("memory://concurrent")
    start = threading.Barrier(len(batches))

    def work(contents: list[str]) -> None:
        memory = LongTermMemory(workspace, ("alice",))
        start.wait()
        for content in contents:
            memory.apply(update(fact(content)), thread_id="t")

    threads = [threading.Thread(target=work, args=(b,)) for b in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    from ctxfs.memory import fact_id

    stored = {f.id for f in LongTermMemory(workspace, ("alice",)).load().facts}
    assert stored == {fact_id(c) for batch in batches for c in batch}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=30).filter(str.strip), st.floats(0, 1)),
        max_size=30,
    ),
    st.integers(1, 10),
)
def test_the_document_round_trips_and_applying_keeps_threshold_dedup_and_cap(
    proposed: list[tuple[str, float]], cap: int
) -> None:
    from ctxfs.memory import apply_update, fact_id

    document = MemoryDocument(namespace=("alice",))
    settings_ = MemorySettings(max_facts=cap)
    applied = apply_update(
        document,
        update(*(fact(c, p) for c, p in proposed)),
        settings=settings_,
        now=datetime(2026, 1, 1, tzinfo=UTC),
        source="t",
    )
    new = applied.document
    assert parse_document(encode_document(new), "m") == new
    assert len(new.facts) <= cap
    assert all(f.confidence >= 0.7 for f in new.facts)
    assert len({f.id for f in new.facts}) == len(new.facts)
    eligible: dict[str, float] = {}
    for content, confidence in proposed:
        if confidence >= 0.7:
            key = fact_id(content)
            eligible[key] = max(confidence, eligible.get(key, 0.0))
    assert {f.id: f.confidence for f in new.facts}.items() <= eligible.items()
    kept = {f.id for f in new.facts}
    if len(eligible) > cap:
        lowest_kept = min(f.confidence for f in new.facts)
        assert all(c <= lowest_kept for k, c in eligible.items() if k not in kept)
    else:
        assert kept == set(eligible)
