"""Runs the scripted workflow and waits, inside its analyst stage, for a line on stdin.

Usage: ``python _second_runner.py URL [S3_ENDPOINT]``. Prints ``analyst started`` when it
reaches the analyst stage, then blocks until a line arrives on stdin (the test resumes the
workflow from another process meanwhile), then goes on. Exits 3 with ``conflict: <message>``
when it finds that another runner wrote the workflow's files.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ctxfs import Workspace
from ctxfs._errors import WorkflowConflictError
from ctxfs.backends import open_storage
from ctxfs.workflows import StageInput

sys.path.insert(0, os.path.dirname(__file__))
from _scenario import TASK, WORKFLOW_ID, workflow


def main(argv: list[str]) -> int:
    options = None
    if len(argv) > 1:
        options = {
            "endpoint_url": argv[1],
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"region_name": "us-east-1"},
        }
    flow = workflow(Workspace(open_storage(argv[0], storage_options=options), check=False))
    analyst = next(stage for stage in flow.stages if stage.name == "analyst")
    inner = analyst.agent

    def waiting(stage_input: StageInput) -> Any:
        print("analyst started", flush=True)
        sys.stdin.readline()
        return inner(stage_input)

    object.__setattr__(analyst, "agent", waiting)
    try:
        flow.run(TASK, workflow_id=WORKFLOW_ID)
    except WorkflowConflictError as exc:
        print(f"conflict: {exc}", flush=True)
        return 3
    print("finished", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
