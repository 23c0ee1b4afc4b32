"""A summary's commit costs the same store calls at any thread length (issue 28).

The summary step reads the transcript index with ``recent()``, writes the segment and commits
it. Counted here, commit by commit up to ten index pages: how many times the store is asked
to read, write or list, and how many full index pages are read. No timing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from ctxfs import TranscriptArchive, Workspace
from ctxfs._archive._transcripts import PAGE_SIZE

_STORE_CALLS = ("read_bytes", "read_versioned", "write_bytes", "ls", "exists", "info")
_COMMITS = 10 * PAGE_SIZE + 5


def _spied(ws: Workspace, calls: Counter[str], pages: list[str]) -> None:
    """Counts the store calls made through ``ws`` (and the index pages read)."""
    for name in _STORE_CALLS:
        original: Callable[..., Any] = getattr(ws, name)

        def spy(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            calls[_name] += 1
            if _name == "read_bytes" and "/index-" in str(args[0]):
                pages.append(str(args[0]))
            return _original(*args, **kw)

        setattr(ws, name, spy)


def test_a_summary_commit_reads_a_bounded_number_of_pages_whatever_the_length() -> None:
    ws = Workspace("memory://summary-commit-cost")
    calls: Counter[str] = Counter()
    pages: list[str] = []
    _spied(ws, calls, pages)
    per_commit: list[tuple[int, dict[str, int], int]] = []
    start = 0
    for n in range(_COMMITS):
        archive = TranscriptArchive(ws, "long-thread")  # a new compaction, a new archive
        messages = [HumanMessage(f"question {n}"), AIMessage(f"answer {n}")]
        calls.clear()
        pages.clear()
        index = archive.recent()
        segment, _ = archive.write_segment(messages, start=start, tokens=20, committed=index)
        archive.commit(segment, summary=HumanMessage(f"summary {n}"), committed=index)
        start += len(messages)
        per_commit.append((n, dict(calls), len(pages)))
    # at most one full page is read, whatever the length
    assert max(read for _, _, read in per_commit) <= 1
    # and the store calls depend only on where the commit falls within a page, not on how
    # many pages came before: the same at the 10th page as at the 2nd
    by_position: dict[int, set[tuple[tuple[str, int], ...]]] = {}
    for n, counted, _ in per_commit[2 * PAGE_SIZE :]:
        by_position.setdefault(n % PAGE_SIZE, set()).add(tuple(sorted(counted.items())))
    assert all(len(shapes) == 1 for shapes in by_position.values()), by_position
    most = max(sum(counted.values()) for _, counted, _ in per_commit)
    assert most <= 16, per_commit[-1]
