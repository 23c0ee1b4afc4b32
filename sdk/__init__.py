"""ctxfs: keep long-running LLM agents inside their context window without losing anything."""

from ctxfs._archive import ArchiveSegment, TranscriptArchive
from ctxfs._engine import ContextEngine
from ctxfs._errors import (
    ArchiveError,
    BackendError,
    EditError,
    IsADirectoryPathError,
    NotADirectoryPathError,
    NotTextError,
    PathExistsError,
    PathNotFoundError,
    PatternError,
    ReadOnlyPathError,
    SearchTimeoutError,
    TraceError,
    UnsafePathError,
    WorkspaceError,
)
from ctxfs._events import (
    ArchiveFailed,
    ArchiveRepaired,
    CompactionResult,
    ContextEvent,
    ContextOverBudget,
    OffloadFailed,
    OffloadResult,
    PrefixChanged,
    Summarized,
    ToolInputOffloaded,
    ToolResultCleared,
    ToolResultOffloaded,
    ToolResultOutcome,
)
from ctxfs._pointers import Pointer
from ctxfs._policy import (
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
from ctxfs._recovery import Recovery, check_recovery, restore_messages
from ctxfs._replay import ModelCall, ReplayResult, replay
from ctxfs._resolve import pointer_of, resolve_pointers
from ctxfs._results import EditResult, FileInfo, GlobResult, GrepResult, ReadResult
from ctxfs._summary import is_summary
from ctxfs._tokens import TiktokenCounter, TokenCounter, as_token_counter
from ctxfs._trace import parse_trace, read_trace
from ctxfs._workspace import Workspace
from ctxfs.sandbox import Limits
from ctxfs.tools import ToolFunction, tool_functions, workspace_tools

__all__ = [
    "ArchiveError",
    "ArchiveFailed",
    "ArchiveRepaired",
    "ArchiveSegment",
    "BackendError",
    "CompactionResult",
    "ContextEngine",
    "ContextEvent",
    "ContextOverBudget",
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
    "PrefixChanged",
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
