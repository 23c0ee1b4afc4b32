"""The public namespace is pinned: a change to it is a deliberate change to this list."""

from __future__ import annotations

import ctxfs

PUBLIC = [
    "ArchiveError",
    "ArchiveFailed",
    "ArchiveSegment",
    "BackendError",
    "CompactionResult",
    "ContextEngine",
    "ContextEvent",
    "ContextPolicy",
    "EditError",
    "EditResult",
    "FileInfo",
    "GlobResult",
    "GrepResult",
    "IsADirectoryPathError",
    "KeepRecent",
    "KeepToolResults",
    "Limits",
    "ModelCall",
    "NotADirectoryPathError",
    "NotTextError",
    "OffloadFailed",
    "OffloadResult",
    "PathExistsError",
    "PathNotFoundError",
    "PatternError",
    "Pointer",
    "ReadOnlyPathError",
    "ReadResult",
    "Recovery",
    "ReplayResult",
    "SearchTimeoutError",
    "Summarization",
    "Summarized",
    "SummaryTrigger",
    "Threshold",
    "TiktokenCounter",
    "TokenCounter",
    "ToolFunction",
    "ToolInputOffload",
    "ToolInputOffloaded",
    "ToolResultCleared",
    "ToolResultClearing",
    "ToolResultOffload",
    "ToolResultOffloaded",
    "ToolResultOutcome",
    "TraceError",
    "TranscriptArchive",
    "UnsafePathError",
    "Workspace",
    "WorkspaceError",
    "as_token_counter",
    "check_recovery",
    "is_summary",
    "parse_trace",
    "pointer_of",
    "read_trace",
    "replay",
    "resolve_pointers",
    "restore_messages",
    "tool_functions",
    "workspace_tools",
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
