"""ctxfs: keep long-running LLM agents inside their context window without losing anything.

The names below are imported on first use (PEP 562), so ``import ctxfs`` and the ``ctxfs``
command start without loading the library or LangChain; ``dir(ctxfs)`` lists them all and
type checkers read them from the ``TYPE_CHECKING`` block.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ctxfs._archive._branches import TranscriptBranch
    from ctxfs._archive._transcripts import ArchiveSegment, TranscriptArchive
    from ctxfs._compaction._engine import ContextEngine
    from ctxfs._compaction._escalation import NothingToCompact
    from ctxfs._errors import (
        ArchiveError,
        BackendError,
        ConflictError,
        EditError,
        FileTooLargeError,
        IsADirectoryPathError,
        MemoryFormatError,
        NotADirectoryPathError,
        NotTextError,
        PathExistsError,
        PathNotFoundError,
        PatternError,
        ReadOnlyPathError,
        SearchTimeoutError,
        TaskLimitError,
        TaskRecordError,
        TraceError,
        UnknownSubAgentError,
        UnsafePathError,
        WorkflowConflictError,
        WorkflowError,
        WorkflowStateError,
        WorkspaceError,
    )
    from ctxfs._events import (
        ArchiveFailed,
        ArchiveRepaired,
        CompactionResult,
        ContextEvent,
        ContextOverBudget,
        MediaOffloaded,
        MessageOffloaded,
        OffloadFailed,
        OffloadResult,
        PrefixChanged,
        Summarized,
        ToolInputOffloaded,
        ToolResultCleared,
        ToolResultOffloaded,
        ToolResultOutcome,
    )
    from ctxfs._pointers._pointer import Pointer
    from ctxfs._pointers._resolve import pointer_of, resolve_pointers
    from ctxfs._policy._settings import (
        ContextPolicy,
        ContextPolicyDict,
        KeepRecent,
        KeepRecentDict,
        KeepToolResults,
        KeepToolResultsDict,
        Pinning,
        PinningDict,
        Summarization,
        SummarizationDict,
        SummaryTrigger,
        SummaryTriggerDict,
        Threshold,
        ThresholdDict,
        ToolInputOffload,
        ToolInputOffloadDict,
        ToolResultClearing,
        ToolResultClearingDict,
        ToolResultOffload,
        ToolResultOffloadDict,
    )
    from ctxfs._replay._recovery import (
        Recovery,
        check_recovery,
        restore_history,
        restore_messages,
    )
    from ctxfs._replay._run import ModelCall, ReplayResult, replay
    from ctxfs._replay._trace import parse_trace, read_trace
    from ctxfs._summary._message import is_summary
    from ctxfs._summary._pins import is_pinned
    from ctxfs._tokens import TiktokenCounter, TokenCounter, as_token_counter
    from ctxfs._workspace._results import EditResult, FileInfo, GlobResult, GrepResult, ReadResult
    from ctxfs._workspace._workspace import Workspace
    from ctxfs.sandbox import Limits
    from ctxfs.tools import ToolFunction, tool_functions, workspace_tools

_LAZY: dict[str, str] = {
    "ArchiveSegment": "ctxfs._archive._transcripts",
    "TranscriptArchive": "ctxfs._archive._transcripts",
    "TranscriptBranch": "ctxfs._archive._branches",
    "ContextEngine": "ctxfs._compaction._engine",
    "NothingToCompact": "ctxfs._compaction._escalation",
    "ArchiveError": "ctxfs._errors",
    "BackendError": "ctxfs._errors",
    "ConflictError": "ctxfs._errors",
    "EditError": "ctxfs._errors",
    "FileTooLargeError": "ctxfs._errors",
    "IsADirectoryPathError": "ctxfs._errors",
    "MemoryFormatError": "ctxfs._errors",
    "NotADirectoryPathError": "ctxfs._errors",
    "NotTextError": "ctxfs._errors",
    "PathExistsError": "ctxfs._errors",
    "PathNotFoundError": "ctxfs._errors",
    "PatternError": "ctxfs._errors",
    "ReadOnlyPathError": "ctxfs._errors",
    "SearchTimeoutError": "ctxfs._errors",
    "TaskLimitError": "ctxfs._errors",
    "TaskRecordError": "ctxfs._errors",
    "TraceError": "ctxfs._errors",
    "UnknownSubAgentError": "ctxfs._errors",
    "UnsafePathError": "ctxfs._errors",
    "WorkflowConflictError": "ctxfs._errors",
    "WorkflowError": "ctxfs._errors",
    "WorkflowStateError": "ctxfs._errors",
    "WorkspaceError": "ctxfs._errors",
    "ArchiveFailed": "ctxfs._events",
    "ArchiveRepaired": "ctxfs._events",
    "CompactionResult": "ctxfs._events",
    "ContextEvent": "ctxfs._events",
    "ContextOverBudget": "ctxfs._events",
    "MediaOffloaded": "ctxfs._events",
    "MessageOffloaded": "ctxfs._events",
    "OffloadFailed": "ctxfs._events",
    "OffloadResult": "ctxfs._events",
    "PrefixChanged": "ctxfs._events",
    "Summarized": "ctxfs._events",
    "ToolInputOffloaded": "ctxfs._events",
    "ToolResultCleared": "ctxfs._events",
    "ToolResultOffloaded": "ctxfs._events",
    "ToolResultOutcome": "ctxfs._events",
    "Pointer": "ctxfs._pointers._pointer",
    "pointer_of": "ctxfs._pointers._resolve",
    "resolve_pointers": "ctxfs._pointers._resolve",
    "ContextPolicy": "ctxfs._policy._settings",
    "ContextPolicyDict": "ctxfs._policy._settings",
    "KeepRecent": "ctxfs._policy._settings",
    "KeepRecentDict": "ctxfs._policy._settings",
    "KeepToolResults": "ctxfs._policy._settings",
    "KeepToolResultsDict": "ctxfs._policy._settings",
    "Pinning": "ctxfs._policy._settings",
    "PinningDict": "ctxfs._policy._settings",
    "Summarization": "ctxfs._policy._settings",
    "SummarizationDict": "ctxfs._policy._settings",
    "SummaryTrigger": "ctxfs._policy._settings",
    "SummaryTriggerDict": "ctxfs._policy._settings",
    "Threshold": "ctxfs._policy._settings",
    "ThresholdDict": "ctxfs._policy._settings",
    "ToolInputOffload": "ctxfs._policy._settings",
    "ToolInputOffloadDict": "ctxfs._policy._settings",
    "ToolResultClearing": "ctxfs._policy._settings",
    "ToolResultClearingDict": "ctxfs._policy._settings",
    "ToolResultOffload": "ctxfs._policy._settings",
    "ToolResultOffloadDict": "ctxfs._policy._settings",
    "Recovery": "ctxfs._replay._recovery",
    "check_recovery": "ctxfs._replay._recovery",
    "restore_history": "ctxfs._replay._recovery",
    "restore_messages": "ctxfs._replay._recovery",
    "ModelCall": "ctxfs._replay._run",
    "ReplayResult": "ctxfs._replay._run",
    "replay": "ctxfs._replay._run",
    "parse_trace": "ctxfs._replay._trace",
    "read_trace": "ctxfs._replay._trace",
    "is_summary": "ctxfs._summary._message",
    "is_pinned": "ctxfs._summary._pins",
    "TiktokenCounter": "ctxfs._tokens",
    "TokenCounter": "ctxfs._tokens",
    "as_token_counter": "ctxfs._tokens",
    "EditResult": "ctxfs._workspace._results",
    "FileInfo": "ctxfs._workspace._results",
    "GlobResult": "ctxfs._workspace._results",
    "GrepResult": "ctxfs._workspace._results",
    "ReadResult": "ctxfs._workspace._results",
    "Workspace": "ctxfs._workspace._workspace",
    "Limits": "ctxfs.sandbox",
    "ToolFunction": "ctxfs.tools",
    "tool_functions": "ctxfs.tools",
    "workspace_tools": "ctxfs.tools",
}
"""Where each public name lives: :func:`__getattr__` imports it from there on first use."""

_PACKAGES = frozenset({"backends", "sandbox", "tools"})
"""The public subpackages, imported on first use like the names."""


def __getattr__(name: str) -> object:
    """Imports a public name (or public subpackage) on first use, then keeps it here."""
    if name in _PACKAGES:
        return _importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_PACKAGES})


__version__ = "0.2.0"
"""The version of ctxfs (the one place it is written: pyproject.toml reads it from here)."""

__all__ = [
    "ArchiveError",
    "ArchiveFailed",
    "ArchiveRepaired",
    "ArchiveSegment",
    "BackendError",
    "CompactionResult",
    "ConflictError",
    "ContextEngine",
    "ContextEvent",
    "ContextOverBudget",
    "ContextPolicy",
    "ContextPolicyDict",
    "EditError",
    "EditResult",
    "FileInfo",
    "FileTooLargeError",
    "GlobResult",
    "GrepResult",
    "IsADirectoryPathError",
    "KeepRecent",
    "KeepRecentDict",
    "KeepToolResults",
    "KeepToolResultsDict",
    "Limits",
    "MediaOffloaded",
    "MemoryFormatError",
    "MessageOffloaded",
    "ModelCall",
    "NotADirectoryPathError",
    "NotTextError",
    "NothingToCompact",
    "OffloadFailed",
    "OffloadResult",
    "PathExistsError",
    "PathNotFoundError",
    "PatternError",
    "Pinning",
    "PinningDict",
    "Pointer",
    "PrefixChanged",
    "ReadOnlyPathError",
    "ReadResult",
    "Recovery",
    "ReplayResult",
    "SearchTimeoutError",
    "Summarization",
    "SummarizationDict",
    "Summarized",
    "SummaryTrigger",
    "SummaryTriggerDict",
    "TaskLimitError",
    "TaskRecordError",
    "Threshold",
    "ThresholdDict",
    "TiktokenCounter",
    "TokenCounter",
    "ToolFunction",
    "ToolInputOffload",
    "ToolInputOffloadDict",
    "ToolInputOffloaded",
    "ToolResultCleared",
    "ToolResultClearing",
    "ToolResultClearingDict",
    "ToolResultOffload",
    "ToolResultOffloadDict",
    "ToolResultOffloaded",
    "ToolResultOutcome",
    "TraceError",
    "TranscriptArchive",
    "TranscriptBranch",
    "UnknownSubAgentError",
    "UnsafePathError",
    "WorkflowConflictError",
    "WorkflowError",
    "WorkflowStateError",
    "Workspace",
    "WorkspaceError",
    "as_token_counter",
    "check_recovery",
    "is_pinned",
    "is_summary",
    "parse_trace",
    "pointer_of",
    "read_trace",
    "replay",
    "resolve_pointers",
    "restore_history",
    "restore_messages",
    "tool_functions",
    "workspace_tools",
]
