"""Parity of backends: one sequence of operations gives the same answers on every store.

Each scenario runs on local disk, ``memory://`` and S3 (the moto server) and records what
each step returned (or the type and message of what it raised), with the workspace's URL
replaced by a placeholder; the three records must be equal, byte for byte.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxfs import FileInfo, Workspace
from ctxfs.tools import tool_functions
from tests.conftest import s3_options

_fresh = itertools.count()
Record = list[tuple[str, str]]
Scenario = Callable[[Workspace], Record]


@pytest.fixture
def backends(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, aio_session: Any
) -> Callable[..., dict[str, Workspace]]:
    """Makes one fresh, empty workspace on each backend, with the same options."""

    def make(**kwargs: Any) -> dict[str, Workspace]:
        n = next(_fresh)
        options = s3_options(s3_endpoint, aio_session)
        return {
            "local": Workspace(tmp_path / f"parity{n}", **kwargs),
            "memory": Workspace(f"memory://parity{n}", **kwargs),
            "s3": Workspace(f"s3://{s3_bucket}/parity{n}", storage_options=options, **kwargs),
        }

    return make


def outcome(ws: Workspace, call: Callable[[], object]) -> str:
    """What ``call`` returned, or the type and message of what it raised; URL-free."""
    try:
        text = repr(call())
    except Exception as exc:  # the record compares errors too
        text = f"{type(exc).__name__}: {exc}"
    return text.replace(ws.url, "<URL>")


def run_everywhere(workspaces: dict[str, Workspace], scenario: Scenario) -> dict[str, Record]:
    return {name: scenario(ws) for name, ws in workspaces.items()}


def assert_same(records: dict[str, Record]) -> None:
    reference = records["local"]
    differences = [
        f"{name} at {step!r}:\n  {got}\n  local: {want}"
        for name, record in records.items()
        for (step, got), (_, want) in zip(record, reference, strict=True)
        if got != want
    ]
    assert not differences, "\n".join(differences)


# -- names ---------------------------------------------------------------------------------

NAMES = [
    "plain.txt",
    "with space.txt",
    "hash#1.txt",
    "q?.txt",
    "pct%20.txt",
    "caf\u00e9.txt",  # NFC
    "cafe\u0301.txt",  # NFD: another name
    "\u65e5\u672c\u8a9e.md",
    "[ab].txt",
    "star*.txt",
    "tilde~.txt",
    "semi;colon.txt",
    "plus+amp&.txt",
    "quote'dq\".txt",
    "report..final.md",
    "trailing.",
    "emoji\U0001f600.txt",
]
DEEP = "/" + "/".join(f"d{i}" for i in range(40)) + "/deep.txt"


def names_scenario(ws: Workspace) -> Record:
    record: Record = []

    def step(label: str, call: Callable[[], object]) -> None:
        record.append((label, outcome(ws, call)))

    for name in NAMES:
        step(f"write {name}", lambda name=name: ws.write_text(f"/n/{name}", f"body of {name}\n"))
    step("write empty", lambda: ws.write_bytes("/n/empty", b""))
    step("write deep", lambda: ws.write_text(DEEP, "deep\n"))
    for bad in ["/n/back\\slash.txt", "/n/ctl\x01.txt", "/../x", "s3://x/y", "~/x"]:
        step(f"write {bad!r}", lambda bad=bad: ws.write_text(bad, "x"))
    step("ls /", lambda: ws.ls("/"))
    step("ls /n", lambda: ws.ls("/n"))
    step("ls /n/", lambda: ws.ls("/n/"))
    step("ls deep parent", lambda: ws.ls(DEEP.rsplit("/", 1)[0]))
    for name in [*NAMES, "empty"]:
        step(f"info {name}", lambda name=name: ws.info(f"/n/{name}"))
        step(f"read {name}", lambda name=name: ws.read_bytes(f"/n/{name}"))
    step("read deep", lambda: ws.read_text(DEEP))
    step("read empty lines", lambda: ws.read_lines("/n/empty"))
    step("exists NFC", lambda: ws.exists("/n/caf\u00e9.txt"))
    step("exists other", lambda: ws.exists("/n/cafe.txt"))
    for pattern in GLOBS:
        step(f"glob {pattern!r}", lambda pattern=pattern: ws.glob(pattern))
        step(f"glob {pattern!r} in /n", lambda pattern=pattern: ws.glob(pattern, "/n"))
    for pattern, kwargs in GREPS:
        step(f"grep {pattern!r} {kwargs}", lambda p=pattern, k=kwargs: ws.grep(p, "/", **k))
    return record


GLOBS = [
    "*",
    "**",
    "**/*",
    "*.txt",
    "**/*.md",
    "caf*",
    "cafe\u0301*",
    "q?.txt",
    "[[]ab].txt",
    "[!p]*",
    "[",
    "]",
    "*[",
    "**/**/**",
    "***",
    "{a,b}*",
    "../*",
    "/n/*",
    "n/**/x",
    "\\*",
    "*/",
    "",
    "//",
    "d0/**/deep.txt",
    "**/d39/*",
    "*#*",
    "* *",
    "%*",
]
GREPS: list[tuple[str, dict[str, Any]]] = [
    ("body", {}),
    ("body", {"output_mode": "content"}),
    ("BODY OF CAF", {"ignore_case": True, "output_mode": "content"}),
    ("caf\u00e9", {"output_mode": "count"}),
    ("of .*\\.txt$", {"output_mode": "content"}),
    ("[", {}),
    ("(", {"fixed_strings": True}),
    ("?", {"fixed_strings": True, "output_mode": "content"}),
    ("deep", {"glob": "**/deep.txt", "output_mode": "content"}),
    ("", {"output_mode": "count"}),
]


def test_names_paths_glob_and_grep_are_the_same_on_every_backend(
    backends: Callable[..., dict[str, Workspace]],
) -> None:
    assert_same(run_everywhere(backends(), names_scenario))


# -- errors and edits ------------------------------------------------------------------------


def errors_scenario(ws: Workspace) -> Record:
    record: Record = []

    def step(label: str, call: Callable[[], object]) -> None:
        record.append((label, outcome(ws, call)))

    step("write", lambda: ws.write_text("/a/b.txt", "one\ntwo\nthree\ntwo\n"))
    step("read missing", lambda: ws.read_bytes("/a/missing.txt"))
    step("read folder", lambda: ws.read_bytes("/a"))
    step("read lines folder", lambda: ws.read_lines("/a"))
    step("read under file", lambda: ws.read_bytes("/a/b.txt/c"))
    step("info missing", lambda: ws.info("/nope"))
    step("info under file", lambda: ws.info("/a/b.txt/c"))
    step("ls file", lambda: ws.ls("/a/b.txt"))
    step("ls missing", lambda: ws.ls("/nope"))
    step("ls under file", lambda: ws.ls("/a/b.txt/c"))
    step("write onto folder", lambda: ws.write_text("/a", "x"))
    step("write under file", lambda: ws.write_text("/a/b.txt/c", "x"))
    step("write deep under file", lambda: ws.write_text("/a/b.txt/c/d/e", "x"))
    step("create-only twice", lambda: ws.write_text("/a/b.txt", "x", create_only=True))
    step("edit not unique", lambda: ws.edit("/a/b.txt", "two", "2"))
    step("edit absent", lambda: ws.edit("/a/b.txt", "four", "4"))
    step("edit all", lambda: ws.edit("/a/b.txt", "two", "2", replace_all=True))
    step("edit missing file", lambda: ws.edit("/a/none.txt", "a", "b"))
    step("read after edit", lambda: ws.read_text("/a/b.txt"))
    step("lines offset", lambda: ws.read_lines("/a/b.txt", offset=2, limit=1))
    step("lines past end", lambda: ws.read_lines("/a/b.txt", offset=10))
    step("rm folder plain", lambda: ws.rm("/a"))
    step("rm missing", lambda: ws.rm("/a/missing"))
    step("grep bad regex", lambda: ws.grep("(", "/"))
    step("grep missing path", lambda: ws.grep("x", "/nope"))
    step("grep a file", lambda: ws.grep("one", "/a/b.txt"))
    step("glob missing path", lambda: ws.glob("*", "/nope"))
    step("glob a file", lambda: ws.glob("*", "/a/b.txt"))
    step("write again", lambda: ws.write_text("/a/c/d.txt", "x"))
    step("rm recursive", lambda: ws.rm("/a", recursive=True))
    step("ls / after rm -r", lambda: ws.ls("/"))
    step("glob after rm -r", lambda: ws.glob("**"))
    return record


def test_errors_and_edits_are_the_same_on_every_backend(
    backends: Callable[..., dict[str, Workspace]],
) -> None:
    assert_same(run_everywhere(backends(), errors_scenario))


def test_a_folder_emptied_by_rm_stays_on_local_disk_only(
    backends: Callable[..., dict[str, Workspace]],
) -> None:
    """The one documented difference (docs/storage.md): object stores have no folders of
    their own, so a folder goes with its last file; local disk keeps it, empty."""
    for name, ws in backends().items():
        ws.write_text("/a/b.txt", "x")
        ws.rm("/a/b.txt")
        assert ws.glob("**").paths == ()
        if name == "local":
            assert ws.ls("/") == [FileInfo("/a", "directory")]
            assert ws.ls("/a") == []
        else:
            assert ws.ls("/") == []
            assert not ws.exists("/a")


# -- large files -----------------------------------------------------------------------------


def large_scenario(ws: Workspace) -> Record:
    record: Record = []

    def step(label: str, call: Callable[[], object]) -> None:
        record.append((label, outcome(ws, call)))

    lines = [f"line {i:07d} {'x' * (i % 50)}" for i in range(60_000)]
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 2 * 2**20
    step("write big", lambda: ws.write_bytes("/big/log.txt", data))
    step("info big", lambda: ws.info("/big/log.txt"))
    step("same bytes", lambda: ws.read_bytes("/big/log.txt") == data)
    step("lines near end", lambda: ws.read_lines("/big/log.txt", offset=59_990, limit=20))
    step("lines middle", lambda: ws.read_lines("/big/log.txt", offset=30_000, limit=3))
    step("grep big", lambda: ws.grep("line 0059999", "/big", output_mode="content"))
    step("grep big count", lambda: ws.grep("x{49}$", "/big", output_mode="count"))
    return record


def test_large_files_are_the_same_on_every_backend(
    backends: Callable[..., dict[str, Workspace]],
) -> None:
    assert_same(run_everywhere(backends(), large_scenario))


# -- the agent's tools -----------------------------------------------------------------------


def tools_scenario(ws: Workspace) -> Record:
    tools = {f.name: f for f in tool_functions(ws)}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"file_path": "/w/notes.md", "content": "alpha\nBeta\ngamma\n"}),
        ("write_file", {"file_path": "/w/sp ace#?%.md", "content": "alpha two\n"}),
        ("write_file", {"file_path": "/w/caf\u00e9.md", "content": "NFC alpha\n"}),
        ("write_file", {"file_path": "/w/cafe\u0301.md", "content": "NFD alpha\n"}),
        ("write_file", {"file_path": "/w/empty.md", "content": ""}),
        ("write_file", {"file_path": "/w/notes.md/x", "content": "under a file"}),
        ("write_file", {"file_path": "/w/b\\s.md", "content": "backslash"}),
        ("edit_file", {"file_path": "/w/notes.md", "old_string": "Beta", "new_string": "beta"}),
        ("edit_file", {"file_path": "/w/notes.md", "old_string": "zzz", "new_string": "y"}),
        ("edit_file", {"file_path": "/w/none.md", "old_string": "a", "new_string": "b"}),
        ("read_file", {"file_path": "/w/notes.md"}),
        ("read_file", {"file_path": "/w/notes.md", "offset": 1, "limit": 1}),
        ("read_file", {"file_path": "/w/notes.md", "offset": 99}),
        ("read_file", {"file_path": "/w/empty.md"}),
        ("read_file", {"file_path": "/w"}),
        ("read_file", {"file_path": "/w/missing.md"}),
        ("ls", {"path": "/"}),
        ("ls", {"path": "/w"}),
        ("ls", {"path": "/w/notes.md"}),
        ("ls", {"path": "/nope"}),
        ("glob", {"pattern": "**"}),
        ("glob", {"pattern": "*.md", "path": "/w"}),
        ("glob", {"pattern": "[", "path": "/w"}),
        ("glob", {"pattern": "../../**"}),
        ("glob", {"pattern": "**/caf*"}),
        ("grep", {"pattern": "alpha"}),
        ("grep", {"pattern": "alpha", "output_mode": "content"}),
        ("grep", {"pattern": "BETA", "-i": True, "output_mode": "content"}),
        ("grep", {"pattern": "a.p", "output_mode": "count"}),
        ("grep", {"pattern": "(", "output_mode": "content"}),
        ("grep", {"pattern": "alpha", "glob": "*.md", "path": "/w", "output_mode": "content"}),
        ("grep", {"pattern": "alpha", "path": "/missing"}),
    ]
    record: Record = []
    for name, arguments in calls:
        out = outcome(ws, lambda name=name, arguments=arguments: tools[name](**arguments))
        record.append((f"{name} {arguments}", out))
    return record


def test_agent_tools_answer_the_same_on_every_backend(
    backends: Callable[..., dict[str, Workspace]],
) -> None:
    assert_same(run_everywhere(backends(), tools_scenario))


def tree(ws: Workspace) -> Iterator[tuple[str, bytes]]:
    """Every file of the workspace and its bytes, in path order."""
    for path in sorted(ws.glob("**").paths):
        yield path, ws.read_bytes(path)


# -- what the context layers write -----------------------------------------------------------


def agent_scenario(ws: Workspace) -> Record:
    """An agent whose large tool results are offloaded and whose old turns are archived and
    summarized, then its recovery tools, and a long-term memory in the same workspace."""
    from datetime import UTC, datetime

    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from ctxfs import ContextPolicy
    from ctxfs.integrations.langchain import ContextMiddleware
    from ctxfs.memory import LongTermMemory, MemoryUpdate
    from ctxfs.testing import ScriptedChatModel, tool_call

    @tool
    def fetch_page(n: int) -> str:
        """Returns page n of the manual."""
        lines = 400 if n < 3 else 60  # the first are offloaded, the rest fill the window
        return "\n".join(f"page {n} line {i}: caf\u00e9 #{i} ? % {'x' * n}" for i in range(lines))

    policy = ContextPolicy(
        max_input_tokens=8_000,
        clearing={"enabled": False},
        summarization={"trigger": {"fraction": 0.8}, "keep": {"fraction": 0.3}},
    )
    model = ScriptedChatModel(
        responses=[*(tool_call("fetch_page", {"n": n}) for n in range(14)), "done"]
    )
    middleware = ContextMiddleware(ws, policy)
    agent = create_agent(model, [fetch_page], middleware=[middleware], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    out = agent.invoke({"messages": [("user", "read the manual")]}, config)
    record: Record = [("messages", repr([(m.type, m.text) for m in out["messages"]]))]
    memory = LongTermMemory(ws, ("alice",), now=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    update = {
        "new_facts": [
            {"content": "Alice reads caf\u00e9 pages.", "category": "behavior", "confidence": 0.9}
        ]
    }
    memory.apply(MemoryUpdate.model_validate(update), thread_id="t1")
    record.append(("memory prompt", memory.prompt().text))
    record += [(f"file {path}", repr(data)) for path, data in tree(ws)]
    tools = {t.name: t for t in middleware.own_tools}
    segments = [path for path, _ in tree(ws) if path.endswith("segment-0001.jsonl")]
    segment = segments[0] if segments else "/none"
    record.append(("tools", repr(sorted(tools))))
    for name, arguments in [
        ("ls", {"path": "/"}),
        ("glob", {"pattern": "**"}),
        ("grep", {"pattern": "page 3 line 7\\b", "output_mode": "content"}),
        ("history_search", {"query": "manual"}),
        ("history_search", {"query": "caf\u00e9 #7"}),
        ("history_read", {"segment": segment, "message": 1}),
    ]:
        call = tools[name].invoke
        record.append((f"{name} {arguments}", outcome(ws, lambda c=call, a=arguments: c(a))))
    return record


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_RUN_VARIES = re.compile(r"\b[0-9a-f]{64}\b|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^\"']*")


def _same_run(record: Record) -> Record:
    """The record without what differs from run to run on any backend: the random ids of
    messages (numbered by first appearance), the times, and the digests that cover them."""
    ids: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return ids.setdefault(match[0], f"<id{len(ids)}>")

    return [
        (_UUID.sub(number, step), _RUN_VARIES.sub("<varies>", _UUID.sub(number, out)))
        for step, out in record
    ]


def test_offloads_archives_summaries_and_memory_are_the_same_on_every_backend(
    backends: Callable[..., dict[str, Workspace]],
) -> None:
    records = {
        name: _same_run(record)
        for name, record in run_everywhere(backends(), agent_scenario).items()
    }
    assert any(step.startswith("file /transcripts") for step, _ in records["local"])
    assert_same(records)
