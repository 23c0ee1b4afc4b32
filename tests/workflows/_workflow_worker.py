"""Kills the scripted workflow with SIGKILL right after each of its writes, then resumes it.

Usage: ``python _workflow_worker.py URL_PREFIX FIRST LAST STEP [S3_ENDPOINT]``. Prints one JSON
object: ``{"writes": W, "expected": {...}, "runs": [...]}``. A forked child first runs the
workflow uninterrupted on ``URL_PREFIX/reference`` (W storage writes, the expected outputs).
Then for every STEP-th N in FIRST..LAST (``LAST`` may be ``end``: W), a child runs it on
``URL_PREFIX/killed-N`` and SIGKILLs itself right after its Nth write lands; a second child
opens that workspace, reads the state file as the kill left it, and resumes the workflow to
the end. Each ``runs`` entry says how the first child
ended, whether the state file was valid JSON, which stages it recorded as completed, which
stages the resume ran, and the final outputs.

The parent never touches the storage itself, so every child starts from a process without
storage threads or connections (safe to fork, S3 included); it warms up (tokenizer, schemas)
on a memory workspace first, and imports the S3 client's modules (no client is made), so
the children do not each pay for it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from ctxfs import Workspace
from ctxfs.backends import Store, open_storage
from ctxfs.workflows import list_workflows, read_state, state_path

sys.path.insert(0, os.path.dirname(__file__))
from _scenario import TASK, WORKFLOW_ID, WriteHookStore, outputs_json, record_calls, workflow


def _killing(inner: Store, kill_after: int) -> WriteHookStore:
    """A store that SIGKILLs the process right after its ``kill_after``-th write lands."""

    def after_write(count: int) -> None:
        if count == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    return WriteHookStore(inner, after_write)


def _store(url: str, endpoint: str | None) -> Store:
    options = None
    if endpoint:
        options = {
            "endpoint_url": endpoint,
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"region_name": "us-east-1"},
        }
    return open_storage(url, storage_options=options)


def _in_child(work: Callable[[], Any]) -> tuple[int, Any]:
    """Runs ``work`` in a forked child; returns its wait status and what it returned."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        code = 0
        try:
            payload = json.dumps(work()).encode()
        except BaseException as exc:  # report it to the parent, whatever it is
            payload, code = json.dumps({"error": repr(exc)}).encode(), 1
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    return status, json.loads(data) if data else None


def _clean_run(url: str, endpoint: str | None) -> dict[str, Any]:
    store = _killing(_store(url, endpoint), kill_after=0)
    run = workflow(Workspace(store, check=False)).run(TASK, workflow_id=WORKFLOW_ID)
    return {"writes": store.writes, "outputs": outputs_json(run.outputs)}


def _killed_run(url: str, endpoint: str | None, kill_after: int) -> None:
    store = _killing(_store(url, endpoint), kill_after)
    workflow(Workspace(store, check=False)).run(TASK, workflow_id=WORKFLOW_ID)


def _resume(url: str, endpoint: str | None) -> dict[str, Any]:
    workspace = Workspace(_store(url, endpoint), check=False)
    report: dict[str, Any] = {"state_valid": None, "done_before": []}
    if WORKFLOW_ID in list_workflows(workspace):
        raw = workspace.read_bytes(state_path(WORKFLOW_ID))
        json.loads(raw)  # raises, and the child reports it, if the file is not JSON
        state = read_state(workspace, WORKFLOW_ID)
        report["state_valid"] = True
        report["done_before"] = [record.stage for record in state.completed_stages]
    calls: list[str] = []
    flow = record_calls(workflow(workspace), calls)
    if report["state_valid"]:
        run = flow.resume(WORKFLOW_ID)
    else:
        run = flow.run(TASK, workflow_id=WORKFLOW_ID)
    report |= {"status": run.status, "calls": calls, "outputs": outputs_json(run.outputs)}
    return report


def main(argv: list[str]) -> None:
    prefix, first, last, step = argv[0].rstrip("/"), int(argv[1]), argv[2], int(argv[3])
    endpoint = argv[4] if len(argv) > 4 else None
    workflow(Workspace("memory://warm-up")).run(TASK, workflow_id=WORKFLOW_ID)
    if endpoint:
        import s3fs  # noqa: F401  (a second or more per child otherwise)
    status, clean = _in_child(lambda: _clean_run(f"{prefix}/reference", endpoint))
    if status != 0:
        raise SystemExit(f"the uninterrupted run failed: {clean}")
    runs = []
    for n in range(first, (clean["writes"] if last == "end" else int(last)) + 1, step):
        url = f"{prefix}/killed-{n}"
        killed, _ = _in_child(lambda url=url, n=n: _killed_run(url, endpoint, n))
        resumed_status, resumed = _in_child(lambda url=url: _resume(url, endpoint))
        runs.append(
            {
                "kill_after": n,
                "killed_by": os.WTERMSIG(killed) if os.WIFSIGNALED(killed) else None,
                "resume_exit": os.waitstatus_to_exitcode(resumed_status),
                **resumed,
            }
        )
    print(json.dumps({"writes": clean["writes"], "expected": clean["outputs"], "runs": runs}))


if __name__ == "__main__":
    main(sys.argv[1:])
