"""Every storage call of a ``ctxfs`` command on a workspace, failed in turn: ``memory``,
``session``, ``ls``, ``cat``, ``glob``, ``grep``, ``transcripts``, ``threads`` and ``gc``.

Each command runs once on a healthy local folder (a memory at version 2 with a thread's
transcript and conversation log, a finished four-stage workflow), then once per store call
of that run with the call failing: an ``OSError``, the process dying, for a write or a
removal its reply lost, for a write torn mid-way or refused as its retry would be, and for
a read a spurious "not found"; a resume runs on a workflow stopped in its third stage. A command
that fails says so in one line naming what failed, with exit status 2, never 70 (an
internal error) and never a traceback; the memory and the workflows' state parse and hold
what they held before or what the command makes; and the same command again, the storage
well, ends as a run without the fault.
"""

from __future__ import annotations

import contextlib
import io
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

import ctxfs._workspace._workspace as workspace_module
from ctxfs import TranscriptArchive, Workspace
from ctxfs._cli._main import main
from ctxfs.memory import LongTermMemory, MemoryUpdate, fact_id
from ctxfs.workflows import list_workflows, read_state
from tests._every_call import FailingAt, Killed, faults
from tests.workflows._scenario import TASK, WORKFLOW_ID, workflow

TEA = "Alice drinks green tea every morning."
RUST = "Alice writes her services in Rust."
COMMANDS = {
    "show": ["memory", "show", "{ws}", "-n", "alice"],
    "history": ["memory", "history", "{ws}", "-n", "alice"],
    "rollback": ["memory", "rollback", "{ws}", "-n", "alice", "--to", "1"],
    "consolidate": ["memory", "consolidate", "{ws}", "-n", "alice"],
    "forget": ["memory", "forget", "{ws}", "-n", "alice", fact_id(RUST)],
    "search": ["memory", "search", "{ws}", "ledger export tea"],
    "session": ["session", "show", "{ws}", WORKFLOW_ID],
    "resume": ["session", "resume", "{ws}", "halfway", "--workflow", "{flow}:build"],
    "ls": ["ls", "{ws}", "/transcripts"],
    "cat": ["cat", "{ws}", f"/sessions/{WORKFLOW_ID}.json"],
    "glob": ["glob", "{ws}", "**/*.json"],
    "grep": ["grep", "{ws}", "ledger", "/transcripts"],
    "transcripts": ["transcripts", "{ws}"],
    "transcripts show": ["transcripts", "{ws}", "--thread", "t0", "--show", "1"],
    "transcripts search": ["transcripts", "{ws}", "--search", "ledger export"],
    "threads": ["threads", "{ws}"],
    "gc plan": ["gc", "{ws}", "--older-than", "7d"],
    "gc apply": ["gc", "{ws}", "--max-bytes", "1", "--min-idle", "0", "--apply"],
}
CHANGES = {"rollback", "consolidate", "forget", "resume"}
FLOW = "from tests.workflows._scenario import workflow as build\n"


class Stop(BaseException):
    """The process stopped inside a stage's agent."""


def _stopped(stage_input: Any) -> Any:
    raise Stop


def _facts(*contents: str) -> MemoryUpdate:
    return MemoryUpdate.model_validate(
        {
            "new_facts": [
                {"content": c, "category": "knowledge", "confidence": 0.9} for c in contents
            ]
        }
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli-every-call") / "ws"
    raw = Workspace(folder)
    memory = LongTermMemory(raw, ("alice",))
    memory.apply(_facts(TEA, RUST), thread_id="t0")
    memory.apply(_facts("Alice ships on Fridays.", "Alice ships on Fridays only."), thread_id="t0")
    said = [HumanMessage("the ledger export is slow", id="h"), AIMessage("use batches", id="a")]
    archive = TranscriptArchive(raw, "t0")
    segment, _ = archive.write_segment(said, start=0, tokens=10)
    archive.commit(segment, summary=HumanMessage("Summary: ledger export.", id="s"))
    memory.record("t0", said)
    workflow(raw).run(TASK, workflow_id=WORKFLOW_ID)
    halfway = workflow(raw)
    object.__setattr__(halfway.stages[2], "agent", _stopped)
    with contextlib.suppress(Stop):
        halfway.run(TASK, workflow_id="halfway")
    (folder.parent / "flow.py").write_text(FLOW)
    return folder


@contextlib.contextmanager
def failing(monkeypatch: pytest.MonkeyPatch, make: Any) -> Iterator[list[FailingAt]]:
    """Every workspace the command opens is on a store ``make`` wraps; yields them."""
    opened: list[FailingAt] = []
    real = workspace_module.open_storage

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        opened.append(make(real(*args, **kwargs)))
        return opened[-1]

    with monkeypatch.context() as patch:
        patch.setattr(workspace_module, "open_storage", wrapped)
        yield opened


def run(argv: list[str]) -> tuple[int | str, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status: int | str = main(argv)
        except Killed:
            status = "killed"
    return status, out.getvalue(), err.getvalue()


def memory_of(folder: Path) -> tuple[set[str], dict[str, Any]]:
    """The facts of the memory, and the outputs of the workflows' completed stages."""
    raw = Workspace(folder)
    stages = {
        f"{workflow_id}/{record.stage}": record.output
        for workflow_id in list_workflows(raw)
        for record in read_state(raw, workflow_id).completed_stages
    }
    return {f.content for f in LongTermMemory(raw, ("alice",)).load().facts}, stages


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_store_call_of_a_command_may_fail(
    name: str,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.CRITICAL, logger="ctxfs")
    fresh = iter(range(10**6))

    def prepared() -> tuple[Path, list[str]]:
        folder = tmp_path / f"ws{next(fresh)}"
        shutil.copytree(template, folder)
        flow = template.parent / "flow.py"
        return folder, [word.format(ws=folder, flow=flow) for word in COMMANDS[name]]

    folder, argv = prepared()
    before = memory_of(folder)
    with failing(monkeypatch, FailingAt) as opened:
        clean = run(argv)
    assert clean[0] == 0, clean
    after = memory_of(folder)
    calls = [call for store in opened for call in store.calls]
    assert calls
    for fault in faults(calls, wide=True):
        folder, argv = prepared()
        with failing(monkeypatch, fault.store):
            status, _, err = run(argv)
        if status not in (0, "killed"):
            # 1: a stage's agent raised (its checkpoint could not be written): recorded
            assert status == 2 or (name == "resume" and status == 1), (fault, status, err)
            assert err.startswith("ctxfs ") and err.count("\n") == 1, (fault, err)
            assert "Traceback" not in err and "internal error" not in err, (fault, err)
        facts, stages = memory_of(folder)
        assert facts in (before[0], after[0]), fault
        # a resume keeps the stages it completed: each with the output of a clean run
        assert before[1].items() <= stages.items() <= after[1].items(), fault
        with failing(monkeypatch, FailingAt):  # the clean run's store (modification
            again = run(argv)  # times unknown through it), failing nowhere
        if name in CHANGES and memory_of(folder) == after and again[0] != 0:
            assert again[0] == 2, (fault, again)  # done before the failure: it says so
            # (forget: "no fact ..."), and nothing was changed twice
        else:
            assert again == clean or (name in CHANGES and again[0] == 0), (fault, again)
        assert memory_of(folder) == after, fault
