"""ctxfs: keep long-running LLM agents inside their context window without losing anything."""

from __future__ import annotations

from ctxfs.archive import ArchiveSegment, TranscriptArchive
from ctxfs.engine import ContextEngine
from ctxfs.errors import WorkspaceError
from ctxfs.events import (
    ArchiveFailed,
    CompactionResult,
    ContextEvent,
    OffloadFailed,
    OffloadResult,
    Summarized,
    ToolInputOffloaded,
    ToolResultCleared,
    ToolResultOffloaded,
    ToolResultOutcome,
)
from ctxfs.policy import (
    ContextPolicy,
    KeepRecent,
    KeepToolResults,
    Summarization,
    SummaryTrigger,
    Threshold,
    ToolInputOffload,
    ToolResultClearing,
    ToolResultOffload,
)
from ctxfs.results import EditResult, FileInfo, GlobResult, GrepResult, ReadResult
from ctxfs.sandbox import Limits
from ctxfs.summary import is_summary
from ctxfs.tokens import TiktokenCounter, TokenCounter, as_token_counter
from ctxfs.workspace import Workspace

__all__ = [
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
