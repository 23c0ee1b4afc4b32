"""``ctxfs memory show | search | forget`` on a workspace folder."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from ctxfs import TranscriptArchive, Workspace
from ctxfs._cli._main import main
from ctxfs.memory import LongTermMemory, MemoryUpdate, fact_id


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    workspace = Workspace(tmp_path / "ws")
    facts = [
        {
            "content": "Alice's database listens on port 6543.",
            "category": "knowledge",
            "confidence": 0.9,
            "tags": ["infra"],
        },
        {"content": "Alice prefers tabs.", "category": "preference", "confidence": 0.8},
    ]
    LongTermMemory(workspace, ("alice",)).apply(
        MemoryUpdate.model_validate({"new_facts": facts}), thread_id="t1"
    )
    archive = TranscriptArchive(workspace, "t1")
    segment, _ = archive.write_segment(
        [HumanMessage("The backup bucket is s3://ops-backups.", id="h")], start=0, tokens=1
    )
    archive.commit(segment, summary=AIMessage("summary"))
    return tmp_path / "ws"


def run(*argv: str) -> tuple[int, str, str]:
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_show_lists_the_memories_and_prints_one(folder: Path) -> None:
    status, out, _ = run("memory", "show", str(folder))
    assert (status, out) == (0, "alice\t2 facts\t/memories/alice/memory.json\n")
    status, out, _ = run("memory", "show", str(folder), "--namespace", "alice")
    assert status == 0 and out.startswith("# Memory: alice\n")
    assert "Alice's database listens on port 6543. (knowledge, confidence 0.90" in out
    status, out, _ = run("memory", "show", str(folder), "-n", "alice", "--json")
    assert json.loads(out)["facts"][0]["id"] == fact_id("Alice's database listens on port 6543.")


def test_search_finds_facts_and_transcripts(folder: Path) -> None:
    status, out, _ = run("memory", "search", str(folder), "database port")
    assert status == 0 and out.splitlines()[1] == "\tAlice's database listens on port 6543."
    status, out, _ = run(
        "memory", "search", str(folder), "backup bucket", "--json", "--transcripts"
    )
    (hit,) = [json.loads(line) for line in out.splitlines()]
    assert hit["kind"] == "transcript" and "s3://ops-backups" in hit["text"]
    status, out, _ = run("memory", "search", str(folder), "port", "--tag", "nothing")
    assert (status, out) == (1, "")


def test_forget_removes_facts_and_refuses_unknown_ids(folder: Path) -> None:
    tabs = fact_id("Alice prefers tabs.")
    status, _, err = run("memory", "forget", str(folder), "-n", "alice", tabs, "fact-000000000000")
    assert status == 2 and "no fact fact-000000000000" in err and "nothing was removed" in err
    status, out, _ = run("memory", "forget", str(folder), "-n", "alice", tabs)
    assert (status, out) == (0, "Forgot 1 fact in /memories/alice/memory.json\n")
    assert [f.content for f in LongTermMemory(Workspace(folder), ("alice",)).load().facts] == [
        "Alice's database listens on port 6543."
    ]


def test_a_malformed_memory_is_one_line_naming_file_and_field(folder: Path) -> None:
    path = folder / "memories" / "alice" / "memory.json"
    data = json.loads(path.read_text())
    data["facts"][0]["confidence"] = "high"
    path.write_text(json.dumps(data))
    status, _, err = run("memory", "show", str(folder), "-n", "alice")
    assert status == 2
    assert err.startswith("ctxfs memory: /memories/alice/memory.json: field facts.0.confidence: ")
    assert err.count("\n") == 1
    before = path.read_bytes()
    status, _, err = run("memory", "forget", str(folder), "-n", "alice", "fact-x")
    assert status == 2 and path.read_bytes() == before


def test_bad_namespaces_and_missing_memories_are_errors(folder: Path) -> None:
    assert run("memory", "show", str(folder), "-n", "../etc")[0] == 2
    status, _, err = run("memory", "show", str(folder), "-n", "bob")
    assert status == 2 and "no memory for 'bob'" in err


@pytest.mark.parametrize(
    "damage",
    ["[" * 5_000 + "]" * 5_000, "{not json", '{"namespace": ["bob"], "facts": "many"}', "\udcff"],
    ids=["nested", "not-json", "bad-field", "not-utf8"],
)
def test_the_listing_names_a_memory_it_cannot_read(folder: Path, damage: str) -> None:
    # a damaged memory was left out of the listing without a word ("No memories" when it
    # was the only one): it is named on stderr, the others are listed, the status is 2
    bob = folder / "memories" / "bob"
    bob.mkdir(parents=True)
    (bob / "memory.json").write_bytes(damage.encode("utf-8", "surrogateescape"))
    status, out, err = run("memory", "show", str(folder))
    assert status == 2
    assert out == "alice\t2 facts\t/memories/alice/memory.json\n"
    (line,) = err.splitlines()
    assert line.startswith("ctxfs memory: /memories/bob/memory.json cannot be read: "), line
    (folder / "memories" / "alice" / "memory.json").unlink()
    status, out, err = run("memory", "show", str(folder))
    assert (status, out) == (2, "") and "/memories/bob/memory.json" in err


def test_search_says_when_nothing_matches_and_refuses_a_query_of_no_word(folder: Path) -> None:
    # both printed nothing at all and exited 1, the query of no word as 'no match'
    assert run("memory", "search", str(folder), "zebra") == (
        1,
        "",
        "No match for 'zebra' in the facts or the archived transcripts\n",
    )
    assert run("memory", "search", str(folder), "zebra", "--facts", "--json") == (
        1,
        "",
        "No match for 'zebra' in the facts\n",
    )
    for query in ("", "   ", "((( ?"):
        assert run("memory", "search", str(folder), query) == (
            2,
            "",
            "ctxfs memory: the query holds no word to search for; give some words\n",
        )


def test_a_folder_where_a_memory_file_belongs_is_reported_like_a_damaged_file(
    folder: Path,
) -> None:
    """Listing every memory used to skip it silently (only files were looked for)."""
    squatter = folder / "memories" / "bob" / "memory.json"
    squatter.mkdir(parents=True)
    (squatter / "notes.txt").write_text("not a memory\n")
    status, out, err = run("memory", "show", str(folder))
    assert status == 2 and "alice\t" in out
    assert (
        err
        == "ctxfs memory: /memories/bob/memory.json cannot be read: a folder, not a memory file\n"
    )
