"""The public namespace is pinned: a change to it is a deliberate change to this list."""

from __future__ import annotations

import ctxfs

PUBLIC = [
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


PUBLIC_PACKAGES = {"backends", "sandbox", "tools"}
ON_DEMAND = {"demo", "integrations", "memory", "subagents", "testing", "workflows"}
ON_DEMAND |= {"lifecycle"}
"""Subpackages a user may import that ``import ctxfs`` does not load."""

LIFECYCLE = [
    "DEFAULT_RULES",
    "Collection",
    "FileLister",
    "GarbageCollector",
    "GcPlan",
    "GcReport",
    "Kept",
    "Reference",
    "Retention",
    "RetentionRule",
    "RuleContext",
    "StampedFile",
    "ThreadInfo",
    "collect_garbage",
    "format_duration",
    "list_files",
    "list_threads",
    "memory_rule",
    "messages_rule",
    "parse_duration",
    "pointer_rule",
]
"""``ctxfs.lifecycle``: the workspace's threads and their garbage collection."""


def test_the_lifecycle_api_is_pinned() -> None:
    import inspect

    import ctxfs.lifecycle

    assert ctxfs.lifecycle.__all__ == LIFECYCLE
    for name in LIFECYCLE:  # the classes and functions (not the aliases and constants)
        obj = getattr(ctxfs.lifecycle, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, f"ctxfs.lifecycle.{name} has no docstring"


def test_all_is_pinned_and_sorted() -> None:
    assert ctxfs.__all__ == PUBLIC
    assert sorted(ctxfs.__all__, key=lambda n: (n[0].islower(), n)) == ctxfs.__all__


def test_nothing_else_is_public_at_the_top_level() -> None:
    # Implementation modules are private (_name.py): importing the package leaves no
    # public module name behind, only what __all__ lists and the public subpackages.
    for name in ctxfs.__all__:  # the names are imported on first use (PEP 562)
        getattr(ctxfs, name)
    public = {name for name in vars(ctxfs) if not name.startswith("_")}
    assert public <= {name for name in dir(ctxfs) if not name.startswith("_")}
    # the on-demand subpackages are attributes once something imported them
    assert set(PUBLIC) | PUBLIC_PACKAGES <= public <= set(PUBLIC) | PUBLIC_PACKAGES | ON_DEMAND


def test_implementation_modules_are_private() -> None:
    import pkgutil

    for package in (ctxfs, ctxfs.backends, ctxfs.sandbox, ctxfs.tools):
        for info in pkgutil.iter_modules(package.__path__):
            if package is ctxfs:
                allowed = ON_DEMAND | PUBLIC_PACKAGES
                assert info.name.startswith("_") or info.name in allowed, info.name
            else:
                assert info.name.startswith("_"), f"{package.__name__}.{info.name}"


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in ctxfs.__all__:
        obj = getattr(ctxfs, name)
        assert getattr(obj, "__doc__", None), f"{name} has no docstring"


def test_error_tree_inherits_builtins() -> None:
    from ctxfs import _errors as errors

    assert issubclass(errors.PathNotFoundError, FileNotFoundError)
    assert issubclass(errors.ReadOnlyPathError, PermissionError)
    assert issubclass(errors.BackendError, OSError)
    assert issubclass(errors.SearchTimeoutError, TimeoutError)
    assert issubclass(errors.ArchiveError, errors.WorkspaceError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.WorkspaceError)


def test_the_lazy_names_are_the_ones_type_checkers_see() -> None:
    # Every public name is imported on first use from the module the TYPE_CHECKING block
    # names, so a type checker and a running program agree on what each name is.
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(ctxfs))
    block = next(node for node in tree.body if isinstance(node, ast.If))
    seen = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == ctxfs._LAZY
    assert set(seen) == set(ctxfs.__all__)
    assert set(ctxfs.__all__) <= set(dir(ctxfs))


def test_import_ctxfs_loads_none_of_the_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, ctxfs; print(ctxfs.__version__); "
        "print(sorted(m for m in sys.modules if m.startswith(('ctxfs.', 'langchain', "
        "'langgraph', 'pydantic'))))"
    )
    lines = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert lines == [ctxfs.__version__, "[]"]
