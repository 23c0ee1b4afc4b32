"""A workflow killed at any write resumes from its first incomplete stage and ends the same.

Two ways to die at every storage write of the scripted four-stage run (the state file, each
stage's output file, the researcher's raw material and its checkpoints):

- in-process, on memory and local disk: the store raises a ``BaseException`` right after
  the Nth write lands, and checks after every write that the state file is valid;
- for real, on local disk and S3: a subprocess SIGKILLs itself right after its Nth write.

Then a new runner resumes: the final outputs must equal an uninterrupted run's (every stage's
agent got exactly the same input, see ``_scenario.py``), and no stage recorded as completed
when the process died runs again.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _scenario import TASK, WORKFLOW_ID, WriteHookStore, outputs_json, run_to_end, workflow

from ctxfs import Workspace
from ctxfs.backends import Store
from ctxfs.workflows import list_workflows, read_state, state_path
from ctxfs.workflows._state import load_state
from tests._zygote import PIPE, Zygote

WORKER = Path(__file__).with_name("_workflow_worker.py")
STATE = state_path(WORKFLOW_ID)


class Crash(BaseException):
    """The process 'dies': nothing may catch it."""


def _crashing(inner: Store, crash_after: int) -> WriteHookStore:
    """A store that checks the state file after each write, then dies at the Nth."""

    def after_write(count: int) -> None:
        _check_state_file(inner)
        if count == crash_after:
            raise Crash(count)

    return WriteHookStore(inner, after_write)


def _check_state_file(store: Store) -> None:
    """The state file is absent or valid JSON in the documented format."""
    try:
        data = store.read_bytes(STATE)
    except FileNotFoundError:
        return
    json.loads(data)
    load_state(data, STATE)


def _resume(workspace: Workspace) -> tuple[dict[str, Any], list[str]]:
    """Resumes (or starts, when the state file was never written) and finishes the run."""
    run, calls = run_to_end(workspace)
    return outputs_json(run.outputs), calls


def _completed(workspace: Workspace) -> set[str]:
    if WORKFLOW_ID not in list_workflows(workspace):
        return set()
    return {record.stage for record in read_state(workspace, WORKFLOW_ID).completed_stages}


@pytest.fixture(params=["memory", "local"])
def make_workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Workspace]:
    """Fresh workspaces on one backend. S3 dies at every write for real, below."""
    names = iter(range(10**6))

    def make() -> Workspace:
        name = f"ws{next(names)}"
        return Workspace(f"memory://{name}" if request.param == "memory" else tmp_path / name)

    return make


def test_a_crash_at_every_write_resumes_to_the_same_outputs(
    make_workspace: Callable[[], Workspace],
) -> None:
    reference = make_workspace()
    counting = _crashing(reference.store, crash_after=0)
    expected = outputs_json(
        workflow(Workspace(counting, check=False)).run(TASK, workflow_id=WORKFLOW_ID).outputs
    )
    total = counting.writes
    assert total >= 15  # state x9, outputs x4, raw material, checkpoints

    for crash_after in range(1, total + 1):
        workspace = make_workspace()
        crashing = Workspace(_crashing(workspace.store, crash_after), check=False)
        with pytest.raises(Crash):
            workflow(crashing).run(TASK, workflow_id=WORKFLOW_ID)
        done_before = _completed(workspace)
        outputs, calls = _resume(workspace)
        assert outputs == expected, crash_after
        assert not done_before & set(calls), crash_after  # no completed stage runs again
        assert len(calls) == len(set(calls))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "first", "step"),
    [
        ("local", 1, 1),
        # On S3 every other write, in two processes side by side: every write is killed at
        # for real on local disk above and in-process on memory and local disk, and an S3
        # write is one PUT, whole or absent, whichever write it is.
        ("s3", 1, 2),
        ("s3", 2, 2),
    ],
)
def test_sigkill_at_every_write_then_resume(
    backend: str,
    first: int,
    step: int,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    zygote: Zygote,
) -> None:
    if backend == "s3":
        endpoint = request.getfixturevalue("s3_endpoint")
        prefix = f"s3://{request.getfixturevalue('s3_bucket')}/runs"
        args = [prefix, str(first), "end", str(step), endpoint]
    else:
        args = [str(tmp_path), str(first), "end", str(step)]
    done = zygote.run([sys.executable, str(WORKER), *args], timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["writes"] >= 15
    stop = report["writes"]
    assert [run["kill_after"] for run in report["runs"]] == list(range(first, stop + 1, step))
    for run in report["runs"]:
        n = run["kill_after"]
        assert run["killed_by"] == signal.SIGKILL, n
        assert run["resume_exit"] == 0, run
        assert run["state_valid"] is True, n  # the first write creates it
        assert run["status"] == "completed", n
        assert run["outputs"] == report["expected"], n
        assert not set(run["done_before"]) & set(run["calls"]), n  # none runs twice
        assert len(run["done_before"]) + len(run["calls"]) <= 5, n


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "s3"])
def test_a_second_runner_in_another_process_is_detected(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, zygote: Zygote
) -> None:
    options: dict[str, Any] | None = None
    if backend == "s3":
        from tests.conftest import s3_options

        endpoint = request.getfixturevalue("s3_endpoint")
        url = f"s3://{request.getfixturevalue('s3_bucket')}/second"
        args, options = [url, endpoint], s3_options(endpoint)
    else:
        url = str(tmp_path / "ws")
        args = [url]
    first = zygote.popen(
        [sys.executable, str(Path(__file__).with_name("_second_runner.py")), *args], stdin=PIPE
    )
    try:
        assert first.stdout is not None and first.stdin is not None
        assert first.stdout.readline() == "analyst started\n"  # blocks until it is there
        workspace = Workspace(url, storage_options=options)
        second = workflow(workspace).resume(WORKFLOW_ID)  # this process takes over
        assert second.status == "completed"
        out, err = first.communicate("go on\n", timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 3, err[-3000:]
    # Its analyst's checkpoint is its next write: the state file's version gave it away.
    assert re.match(
        r"conflict: another runner wrote /sessions/settlement\.json \(version \d+, runner "
        r"[0-9a-f]{12}\) since this one wrote version 10",
        out,
    ), out
    clean = workflow(Workspace("memory://clean-second")).run(TASK, workflow_id=WORKFLOW_ID)
    assert read_state(workspace, WORKFLOW_ID).outputs() == outputs_json(clean.outputs)
