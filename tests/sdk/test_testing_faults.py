"""FaultyStore: each kind of fault, through a Workspace, on every backend.

What a caller sees is checked through the Workspace (and the agent's tools); what really
happened is checked on the wrapped store, never through the faulty one.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ctxfs import BackendError, PathNotFoundError, Workspace
from ctxfs.testing import Fault, FaultyStore, FiredFault
from ctxfs.tools import tool_functions

WorkspaceFactory = Callable[..., Workspace]


@pytest.fixture
def faulty(workspace: Workspace) -> tuple[FaultyStore, Workspace, Workspace]:
    """The faulty store, a workspace on it, and one on the wrapped store (the truth)."""
    store = FaultyStore(workspace.store)
    return store, Workspace(store), workspace


def test_an_error_fault_fails_the_nth_call_and_leaves_the_storage_alone(
    faulty: tuple[FaultyStore, Workspace, Workspace],
) -> None:
    store, ws, truth = faulty
    truth.write_text("/a.txt", "alpha")
    store.add(Fault(method="read_bytes", nth=2))
    assert ws.read_text("/a.txt") == "alpha"
    with pytest.raises(BackendError) as caught:
        ws.read_text("/a.txt")
    assert str(caught.value) == (
        "/a.txt: storage failed (injected error fault on read_bytes call 2)"
    )
    assert not isinstance(caught.value, PathNotFoundError)
    assert ws.read_text("/a.txt") == "alpha"  # times=1: the third call goes through
    assert store.fired == [FiredFault(store.faults[0], "read_bytes", "/a.txt", 2)]


def test_times_and_path_choose_which_calls_fail(
    faulty: tuple[FaultyStore, Workspace, Workspace],
) -> None:
    store, ws, truth = faulty
    truth.write_text("/logs/a.log", "a")
    truth.write_text("/notes/b.md", "b")
    store.add(Fault(method="read", path="/logs", times=None))
    assert ws.read_text("/notes/b.md") == "b"
    for _ in range(3):
        with pytest.raises(BackendError):
            ws.read_text("/logs/a.log")
    store.heal()
    assert ws.read_text("/logs/a.log") == "a"
    assert [(hit.method, hit.call) for hit in store.fired] == [("read_bytes", n) for n in (1, 2, 3)]


def test_not_found_answers_missing_for_an_existing_object(
    faulty: tuple[FaultyStore, Workspace, Workspace],
) -> None:
    store, ws, truth = faulty
    truth.write_text("/kept.txt", "still here")
    store.add(Fault(method="info", kind="not_found"))
    assert not ws.exists("/kept.txt")
    assert ws.exists("/kept.txt")
    store.add(Fault(method="read_bytes", kind="not_found"))
    with pytest.raises(PathNotFoundError):
        ws.read_text("/kept.txt")
    assert truth.read_text("/kept.txt") == "still here"


def test_a_torn_write_leaves_a_prefix_and_raises(
    faulty: tuple[FaultyStore, Workspace, Workspace],
) -> None:
    store, ws, truth = faulty
    store.add(Fault(method="write", kind="torn_write", keep=4))
    with pytest.raises(BackendError, match="injected torn_write fault on write call 1"):
        ws.write_text("/segment.jsonl", '{"role": "user"}\n')
    assert truth.read_text("/segment.jsonl") == '{"ro'
    store.add(Fault(method="write", kind="torn_write"))
    with pytest.raises(BackendError):
        ws.write_text("/half.txt", "12345678")
    assert truth.read_text("/half.txt") == "1234"  # half by default


def test_a_lost_response_writes_everything_but_raises(
    faulty: tuple[FaultyStore, Workspace, Workspace],
) -> None:
    store, ws, truth = faulty
    store.add(Fault(method="write", kind="lost_response"))
    with pytest.raises(BackendError, match="injected lost_response fault on write call 1"):
        ws.write_text("/done.txt", "complete")
    assert truth.read_text("/done.txt") == "complete"
    store.add(Fault(method="remove", kind="lost_response"))
    with pytest.raises(BackendError):
        ws.rm("/done.txt")
    assert not truth.exists("/done.txt")


def test_listing_and_search_faults(faulty: tuple[FaultyStore, Workspace, Workspace]) -> None:
    store, ws, truth = faulty
    for name in ("a", "b", "c"):
        truth.write_text(f"/d/{name}.txt", "needle\n")
    store.add(Fault(method="fetch", kind="not_found", nth=2))
    assert [f.path for f in ws.grep("needle").files] == ["/d/a.txt", "/d/c.txt"]
    store.add(Fault(method="fetch", nth=3))
    with pytest.raises(BackendError, match=r"/d/c\.txt: storage failed"):
        ws.grep("needle")
    store.add(Fault(method="walk", kind="not_found"))
    assert ws.glob("*.txt").paths == ()
    store.add(Fault(method="ls"))
    with pytest.raises(BackendError):
        ws.ls("/d")


def test_the_tools_answer_a_fault_with_error_text(
    faulty: tuple[FaultyStore, Workspace, Workspace],
) -> None:
    store, ws, truth = faulty
    truth.write_text("/a.txt", "alpha\n")
    tools = {f.name: f for f in tool_functions(ws)}
    store.add(Fault(method="open_read"))
    assert tools["read_file"](file_path="/a.txt") == (
        "Error: /a.txt: storage failed (injected error fault on open_read call 1); the storage "
        "could not be asked, try again, and if it keeps failing, stop"
    )
    assert tools["read_file"](file_path="/a.txt") == "     1\talpha"


def test_opening_a_workspace_on_a_failing_store_fails_at_once(workspace: Workspace) -> None:
    store = FaultyStore(workspace.store, [Fault(method="info")])
    with pytest.raises(BackendError, match="injected error fault on info call 1"):
        Workspace(store)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "wirte"}, "unknown Store method 'wirte'"),
        ({"method": "info", "kind": "torn_write"}, "a 'torn_write' fault applies to write, not"),
        ({"method": "read_bytes", "kind": "lost_response"}, "applies to remove, write, not"),
        ({"method": "info", "nth": 0}, "nth and times must be at least 1"),
        ({"method": "info", "keep": 3}, "keep is a byte count (0 or more) for 'torn_write'"),
    ],
)
def test_faults_are_checked_when_made(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Fault(**kwargs)  # type: ignore[arg-type]
