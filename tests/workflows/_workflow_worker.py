"""Runs (or resumes) the scripted workflow and SIGKILLs itself right after its Nth write.

Usage: ``python _crash_worker.py URL KILL_AFTER [ENDPOINT]``. ``KILL_AFTER`` 0 never kills.
Without a kill it prints one JSON line: ``{"writes": W, "outputs": {...}}``, the number of
storage writes this process made and the workflow's final outputs.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from ctxfs import Workspace
from ctxfs.backends import Store, open_storage
from ctxfs.testing import RecordingStore
from ctxfs.workflows import list_workflows

sys.path.insert(0, os.path.dirname(__file__))
from _scenario import TASK, WORKFLOW_ID, outputs_json, workflow


class KillingStore(RecordingStore):
    """Forwards every call; SIGKILLs the process right after the Nth write lands."""

    def __init__(self, inner: Store, kill_after: int) -> None:
        super().__init__(inner)
        self.kill_after = kill_after
        self.writes = 0

    def write(self, path: str, data: bytes, **options: Any) -> None:
        super().write(path, data, **options)
        self.writes += 1
        if self.writes == self.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> None:
    url, kill_after = argv[0], int(argv[1])
    options = None
    if len(argv) > 2:
        options = {
            "endpoint_url": argv[2],
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"region_name": "us-east-1"},
        }
    store = KillingStore(open_storage(url, storage_options=options), kill_after)
    workspace = Workspace(store, check=False)
    flow = workflow(workspace)
    if WORKFLOW_ID in list_workflows(workspace):
        run = flow.resume(WORKFLOW_ID)
    else:
        run = flow.run(TASK, workflow_id=WORKFLOW_ID)
    print(
        json.dumps(
            {"writes": store.writes, "status": run.status, "outputs": outputs_json(run.outputs)}
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
