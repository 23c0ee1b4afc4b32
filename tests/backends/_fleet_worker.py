"""One process of the archive fleet (test_archive_fleet.py): 4 threads on one S3 bucket.

Usage: ``python _fleet_worker.py '<json config>'``. The config names the workspace
(``target``, ``storage_options``), the worker (``who``, a seed), how many turns it runs
(``steps``), where it keeps its own state between runs (``state``: a JSON file, replaced
atomically after each turn, as a checkpointer with ``durability="exit"`` would), which
storage writes lose their reply (``lost``) and, optionally, the write under ``/transcripts``
after which it SIGKILLs itself (``kill``). Each turn goes to one of the four threads, on the
worker's latest line of it or on a fork from an earlier point of that line. A worker run
again resumes from its state file and re-runs the turn it was killed in. At the end it
prints one JSON line: the failure events it saw and its largest request.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    messages_from_dict,
    messages_to_dict,
)

from ctxfs import ArchiveFailed, ContextEngine, ContextOverBudget, ContextPolicy, Workspace
from ctxfs.testing import Fault, FaultyStore

THREADS = ("t0", "t1", "t2", "t3")
WINDOW = 8_000
POLICY = ContextPolicy(
    max_input_tokens=WINDOW,
    clearing={"enabled": False},
    summarization={"trigger": {"tokens": 1_500}, "keep": {"messages": 2}},
)


def _kill_after(folder: str, count: int) -> None:
    remaining = [count]
    original = Workspace.write_bytes

    def write_bytes(self: Workspace, path: str, data: bytes, **kwargs: Any) -> Any:
        info = original(self, path, data, **kwargs)
        if path.startswith(folder + "/"):
            remaining[0] -= 1
            if remaining[0] == 0:
                os.kill(os.getpid(), signal.SIGKILL)
        return info

    Workspace.write_bytes = write_bytes  # type: ignore[method-assign]


def _load(path: str) -> dict[str, Any]:
    if not os.path.exists(path):
        return {"step": 0, "lines": []}
    with open(path, encoding="utf-8") as file:
        return dict(json.load(file))


def _save(path: str, state: dict[str, Any]) -> None:
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        json.dump(state, file)
    os.replace(path + ".tmp", path)


def main() -> None:
    config = json.loads(sys.argv[1])
    who = config["who"]
    if config.get("kill"):
        _kill_after("/transcripts", int(config["kill"]))
    raw = Workspace(config["target"], storage_options=config.get("storage_options"))
    faults = [Fault(method="write", kind="lost_response", nth=n) for n in config["lost"]]
    engine = ContextEngine(Workspace(FaultyStore(raw.store, faults), check=False), POLICY)
    state = _load(config["state"])
    # each line: thread, what its agent saw, the context the engine left it
    lines: list[dict[str, Any]] = state["lines"]
    points: dict[int, list[tuple[Any, Any]]] = {}
    failures: list[str] = []
    largest = 0
    for step in range(state["step"], config["steps"]):
        rng = random.Random(f"{who}-{step}")  # the same choices when a killed turn re-runs
        thread = rng.choice(THREADS)
        mine = [i for i, line in enumerate(lines) if line["thread"] == thread]
        if not mine or rng.random() < 0.2:  # a new line: from scratch, or a fork
            earlier = [p for i in mine for p in points.get(i, [])]
            seen, context = rng.choice(earlier) if earlier and rng.random() < 0.8 else ([], [])
            lines.append({"thread": thread, "everything": seen, "context": context})
            mine.append(len(lines) - 1)
        index = mine[-1]
        line = lines[index]
        words = " ".join(f"{who}s{step}w{i}" for i in range(rng.randint(30, 120)))
        new: list[BaseMessage] = [
            HumanMessage(f"{who} asks {step}: {words}", id=f"{who}-h{step}"),
            AIMessage(f"{who} answers {step}: {words}", id=f"{who}-a{step}"),
        ]
        context = [*messages_from_dict(line["context"]), *new]
        result = engine.compact(context, thread_id=thread)
        failures += [
            f"{type(e).__name__}: {e}"
            for e in result.events
            if isinstance(e, ArchiveFailed | ContextOverBudget)
        ]
        largest = max(largest, result.request_tokens)
        line["everything"] = [*line["everything"], *messages_to_dict(new)]
        line["context"] = messages_to_dict(result.messages)
        points.setdefault(index, []).append((line["everything"], line["context"]))
        _save(config["state"], {"step": step + 1, "lines": lines})
    print(json.dumps({"failures": failures, "largest": largest}), flush=True)


if __name__ == "__main__":
    main()
