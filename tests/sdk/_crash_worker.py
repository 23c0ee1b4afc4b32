"""Runs compaction in forked children killed with SIGKILL after their Nth workspace write.

Usage: ``python _crash_worker.py <scratch dir>``. Prints one JSON line:
``{"writes": W, "kills": K, "failures": [...]}``. For every N in 1..W a fresh local workspace
is compacted in a child that SIGKILLs itself right after its Nth write; then the whole run is
repeated, without kills, on the same workspace, and must end exactly as a clean run does
(same messages, same files), with every index entry pointing at complete, verified files.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxfs import ContextEngine, ContextPolicy, TranscriptArchive, Workspace

sys.path.insert(0, os.path.dirname(__file__))
from _runs import fixed_clock

POLICY = ContextPolicy(
    max_input_tokens=1_500,
    tool_results={"threshold": {"tokens": 200}},
    tool_inputs={"trigger": {"fraction": 0.5}, "keep_messages": 2, "min_chars": 50},
    summarization={"trigger": {"fraction": 0.6}, "keep": {"messages": 4}},
)


def history() -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    for turn in range(12):
        messages.append(HumanMessage(f"step {turn}: do the next thing", id=f"h{turn}"))
        calls: list[Any] = [
            {
                "name": "write_file",
                "args": {"file_path": f"/src/m{turn}.py", "content": f"x = {turn}\n" * 30},
                "id": f"w{turn}",
            },
            {"name": "bash", "args": {"command": "pytest"}, "id": f"b{turn}"},
        ]
        messages.append(AIMessage(f"turn {turn}", tool_calls=calls, id=f"a{turn}"))
        messages.append(ToolMessage("written", tool_call_id=f"w{turn}", id=f"tw{turn}"))
        size = 400 if turn % 3 == 0 else 20
        out = "\n".join(f"line {i} of run {turn}: ok" for i in range(size))
        messages.append(ToolMessage(out, tool_call_id=f"b{turn}", name="bash", id=f"tb{turn}"))
    return messages


class KillingWorkspace(Workspace):
    """A local workspace that SIGKILLs its process right after its Nth write."""

    kill_after = 0
    writes = 0

    def write_bytes(self, path: str, data: bytes, **options: Any) -> Any:
        info = super().write_bytes(path, data, **options)
        type(self).writes += 1
        if type(self).writes == type(self).kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        return info


def run(root: Path, kill_after: int = 0) -> list[dict[str, Any]]:
    KillingWorkspace.kill_after, KillingWorkspace.writes = kill_after, 0
    engine = ContextEngine(KillingWorkspace(root), POLICY, clock=fixed_clock)
    state: list[BaseMessage] = []
    for message in history():
        if isinstance(message, AIMessage) and state:
            state = engine.compact(state, thread_id="t").messages
        if isinstance(message, ToolMessage):
            message = engine.offload_tool_result(message, thread_id="t")
        state = [*state, message]
    state = engine.compact(state, thread_id="t").messages
    return [m.model_dump() for m in state]


def files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def index_consistent(root: Path) -> str | None:
    archive = TranscriptArchive(Workspace(root), "t")
    for segment in archive.segments():
        try:
            archive.read_segment(segment)  # checks the SHA-256
        except Exception as exc:
            return f"index entry {segment.number} is broken: {exc}"
    return None


def main(scratch: Path) -> None:
    clean_root = scratch / "clean"
    clean = run(clean_root)
    writes = KillingWorkspace.writes
    clean_files = files(clean_root)
    failures: list[str] = []
    kills = 0
    for n in range(1, writes + 1):
        root = scratch / f"kill{n}"
        pid = os.fork()
        if pid == 0:
            try:
                run(root, kill_after=n)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
            failures.append(f"kill {n}: the child was not killed (status {status})")
            continue
        kills += 1
        broken = index_consistent(root)
        if broken:
            failures.append(f"kill {n}: {broken}")
        if run(root) != clean:
            failures.append(f"kill {n}: the re-run ended with different messages")
        if files(root) != clean_files:
            failures.append(f"kill {n}: the re-run left different files")
    print(json.dumps({"writes": writes, "kills": kills, "failures": failures}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
