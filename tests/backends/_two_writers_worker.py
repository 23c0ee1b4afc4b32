"""One of two processes compacting one thread (test_cas_processes.py).

Usage: ``python _two_writers_worker.py '<json config>'``. The config names the workspace
(``target``, ``storage_options``) and the writer (``who``). For each line read on stdin the
worker adds a turn to its own conversation, compacts it on the shared thread ``shared`` and
prints one JSON line: the segments it summarized into, the archive failures it was told
about, and whether the history came back unchanged on a failure. On ``end`` it prints
whether its whole conversation can be rebuilt from its own segments and its context.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ctxfs import (
    ArchiveFailed,
    ContextEngine,
    ContextPolicy,
    Summarized,
    TranscriptArchive,
    Workspace,
    is_pinned,
    is_summary,
)

POLICY = ContextPolicy(
    max_input_tokens=4_000,
    summarization={"trigger": {"tokens": 700}, "keep": {"messages": 2}},
    clearing={"enabled": False},
)


def main() -> None:
    config = json.loads(sys.argv[1])
    who = config["who"]
    workspace = Workspace(config["target"], storage_options=config.get("storage_options"))
    engine = ContextEngine(workspace, POLICY, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    everything: list[BaseMessage] = [SystemMessage("agent", id="sys")]
    context = list(everything)
    mine: list[str] = []
    for turn, line in enumerate(sys.stdin):
        if line.strip() == "end":
            break
        new = [
            HumanMessage(f"{who} asks {turn}: " + "word " * 60, id=f"{who}-h{turn}"),
            AIMessage(f"{who} answers {turn}: " + "word " * 60, id=f"{who}-a{turn}"),
        ]
        everything += new
        before = [*context, *new]
        result = engine.compact(before, thread_id="shared")
        context = result.messages
        summarized = [e.segment_paths[1] for e in result.events if isinstance(e, Summarized)]
        failed = [e.reason for e in result.events if isinstance(e, ArchiveFailed)]
        mine += summarized
        report = {"summarized": summarized, "failed": failed, "unchanged": context == before}
        print(json.dumps(report), flush=True)
    archive = TranscriptArchive(workspace, "shared")
    segments = [s for s in archive.segments() if s.markdown_path in mine]
    archived = [m for s in segments for m in archive.read_segment(s)]
    kept = [m for m in context if not (is_summary(m) or is_pinned(m)) and m.id != "sys"]
    rebuilt = [m.id for m in [*archived, *kept]]
    print(json.dumps({"lossless": rebuilt == [m.id for m in everything[1:]]}), flush=True)


if __name__ == "__main__":
    main()
