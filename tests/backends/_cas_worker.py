"""One of several processes changing one workspace file at once (test_cas_processes.py).

Usage: ``python _cas_worker.py '<json config>'``. The config names the workspace (``target``,
``storage_options``), the ``mode``, the worker's name ``who`` and a ``count``. The worker
prints ``ready``, waits for a line on stdin (so that every worker starts at once), then:

- ``update``: appends the line ``<who>-<i>`` ``count`` times with ``Workspace.update``;
- ``edit``: marks its own ``count`` slots done with the agent's ``edit_file`` tool.

It prints one JSON line: what each call answered, and how often a change was computed
(more than ``count`` when writers collided and a change was redone on newer content).
"""

from __future__ import annotations

import json
import sys

from ctxfs import Workspace
from ctxfs.tools import tool_functions


def main() -> None:
    config = json.loads(sys.argv[1])
    workspace = Workspace(config["target"], storage_options=config.get("storage_options"))
    who, count, path = config["who"], config["count"], config["path"]
    print("ready", flush=True)
    sys.stdin.readline()
    computed = 0
    answers: list[str] = []
    if config["mode"] == "update":
        for i in range(count):
            line = f"{who}-{i}\n".encode()

            def append(data: bytes | None, line: bytes = line) -> bytes:
                nonlocal computed
                computed += 1
                return (data or b"") + line

            workspace.update(path, append, attempts=10_000)
            answers.append("updated")
    else:
        edit = {tool.name: tool for tool in tool_functions(workspace)}["edit_file"]
        for i in range(count):
            answers.append(
                edit(
                    file_path=path,
                    old_string=f"slot {who}-{i}: todo",
                    new_string=f"slot {who}-{i}: done",
                )
            )
    print(json.dumps({"computed": computed, "answers": answers}), flush=True)


if __name__ == "__main__":
    main()
