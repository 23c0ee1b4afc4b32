"""ctxfs: keep long-running LLM agents inside their context window without losing anything."""

from __future__ import annotations

from ctxfs.engine import ContextEngine
from ctxfs.errors import WorkspaceError
from ctxfs.events import (
    ContextEvent,
    OffloadFailed,
    OffloadResult,
    ToolInputOffloaded,
    ToolResultOffloaded,
    ToolResultOutcome,
)
from ctxfs.policy import ContextPolicy, Threshold, ToolInputOffload, ToolResultOffload
from ctxfs.results import EditResult, FileInfo, GlobResult, GrepResult, ReadResult
from ctxfs.sandbox import Limits
from ctxfs.tokens import TiktokenCounter, TokenCounter, as_token_counter
from ctxfs.workspace import Workspace

__all__ = [
    "ContextEngine",
    "ContextEvent",
    "ContextPolicy",
    "EditResult",
    "FileInfo",
    "GlobResult",
    "GrepResult",
    "Limits",
    "OffloadFailed",
    "OffloadResult",
    "ReadResult",
    "Threshold",
    "TiktokenCounter",
    "TokenCounter",
    "ToolInputOffload",
    "ToolInputOffloaded",
    "ToolResultOffload",
    "ToolResultOffloaded",
    "ToolResultOutcome",
    "Workspace",
    "WorkspaceError",
    "as_token_counter",
]
