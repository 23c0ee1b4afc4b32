"""ctxfs: keep long-running LLM agents inside their context window without losing anything."""

from __future__ import annotations

from ctxfs.errors import WorkspaceError
from ctxfs.results import EditResult, FileInfo, GlobResult, GrepResult, ReadResult
from ctxfs.sandbox import Limits
from ctxfs.workspace import Workspace

__all__ = [
    "EditResult",
    "FileInfo",
    "GlobResult",
    "GrepResult",
    "Limits",
    "ReadResult",
    "Workspace",
    "WorkspaceError",
]
