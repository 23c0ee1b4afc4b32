"""The public namespace is pinned: a change to it is a deliberate change to this list."""

from __future__ import annotations

import ctxfs

PUBLIC = [
    "ArchiveFailed",
    "ArchiveSegment",
    "CompactionResult",
    "ContextEngine",
    "ContextEvent",
    "ContextPolicy",
    "EditResult",
    "FileInfo",
    "GlobResult",
    "GrepResult",
    "KeepRecent",
    "KeepToolResults",
    "Limits",
    "OffloadFailed",
    "OffloadResult",
    "ReadResult",
    "Summarization",
    "Summarized",
    "SummaryTrigger",
    "Threshold",
    "TiktokenCounter",
    "TokenCounter",
    "ToolInputOffload",
    "ToolInputOffloaded",
    "ToolResultCleared",
    "ToolResultClearing",
    "ToolResultOffload",
    "ToolResultOffloaded",
    "ToolResultOutcome",
    "TranscriptArchive",
    "Workspace",
    "WorkspaceError",
    "as_token_counter",
    "is_summary",
]


def test_all_is_pinned_and_sorted() -> None:
    assert ctxfs.__all__ == PUBLIC
    assert sorted(ctxfs.__all__, key=lambda n: (n[0].islower(), n)) == ctxfs.__all__


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in ctxfs.__all__:
        obj = getattr(ctxfs, name)
        assert getattr(obj, "__doc__", None), f"{name} has no docstring"


def test_error_tree_inherits_builtins() -> None:
    from ctxfs import errors

    assert issubclass(errors.PathNotFoundError, FileNotFoundError)
    assert issubclass(errors.ReadOnlyPathError, PermissionError)
    assert issubclass(errors.BackendError, OSError)
    assert issubclass(errors.SearchTimeoutError, TimeoutError)
    assert issubclass(errors.ArchiveError, errors.WorkspaceError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.WorkspaceError)
