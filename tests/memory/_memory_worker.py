"""Memory updates in a child process, for the two-process and SIGKILL tests.

Usage:
    python _memory_worker.py add <folder> <writer> <count>
        Adds ``count`` facts ("Writer <writer> fact <i>.") to ``("alice",)``, one update each.
    python _memory_worker.py kill <folder> - <count>
        Counts the kill points of ``count`` updates as writer ``k`` (just before a temporary
        file is renamed, or linked, into place, and just after), then for each point P forks
        a child that makes the same updates in ``<folder>/kill-P`` and SIGKILLs itself at
        point P, and checks what the child left. Prints one JSON line: ``{"points": N,
        "failures": [...]}``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from ctxfs import Workspace
from ctxfs.memory import LongTermMemory, MemoryUpdate


def add(folder: str, writer: str, count: int) -> None:
    memory = LongTermMemory(Workspace(folder), ("alice",))
    for i in range(count):
        update = {
            "content": f"Writer {writer} fact {i}.",
            "category": "knowledge",
            "confidence": 0.9,
        }
        memory.apply(MemoryUpdate.model_validate({"new_facts": [update]}), thread_id=f"w{writer}")


def killing(point: int) -> Callable[[], int]:
    passed = 0

    def tick() -> None:
        nonlocal passed
        passed += 1
        if passed == point:
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(name: str) -> None:
        real = getattr(os, name)

        def patched(*args: Any, **kwargs: Any) -> Any:
            tick()
            result = real(*args, **kwargs)
            tick()
            return result

        setattr(os, name, patched)

    wrap("replace")
    wrap("link")
    return lambda: passed


def check(folder: str, point: int) -> str | None:
    """What is wrong with the memory a child killed at ``point`` left, or ``None``."""
    memory = LongTermMemory(Workspace(folder), ("alice",))
    try:
        stored = [f.content for f in memory.load().facts]
    except Exception as exc:
        return f"point {point}: the memory does not load: {exc}"
    if stored != [f"Writer k fact {i}." for i in range(len(stored))]:
        return f"point {point}: neither the old nor the new document: {stored}"
    after = {"content": "After the crash.", "category": "context", "confidence": 1}
    memory.apply(MemoryUpdate.model_validate({"new_facts": [after]}), thread_id="after")
    if [f.content for f in memory.load().facts][-1:] != ["After the crash."]:
        return f"point {point}: an update after the crash was lost"
    if "After the crash." not in Workspace(folder).read_text(memory.file.markdown_path):
        return f"point {point}: the rendering was not rewritten after the crash"
    return None


def kill_at_every_point(folder: str, count: int) -> dict[str, Any]:
    clean = os.fork()
    if clean == 0:  # count the points in a child, so the patches stay there
        passed = killing(0)
        add(os.path.join(folder, "clean"), "k", count)
        os._exit(min(passed(), 255))
    _, status = os.waitpid(clean, 0)
    points = os.waitstatus_to_exitcode(status)
    failures = []
    for point in range(1, points + 1):
        target = os.path.join(folder, f"kill-{point}")
        child = os.fork()
        if child == 0:
            killing(point)
            add(target, "k", count)
            os._exit(0)
        _, status = os.waitpid(child, 0)
        if os.waitstatus_to_exitcode(status) != -signal.SIGKILL:
            failures.append(f"point {point}: the child was not killed ({status})")
            continue
        failure = check(target, point)
        if failure:
            failures.append(failure)
    return {"points": points, "failures": failures}


if __name__ == "__main__":
    mode, folder, arg, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if mode == "add":
        add(folder, arg, count)
    else:
        print(json.dumps(kill_at_every_point(folder, count)))
