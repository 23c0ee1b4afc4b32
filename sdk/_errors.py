"""Every error ctxfs raises, in one tree.

::

    WorkspaceError (Exception)
    ├── UnsafePathError (+ ValueError)         path refused by the sandbox
    ├── PathNotFoundError (+ FileNotFoundError) nothing at that path
    ├── PathExistsError (+ FileExistsError)    create-only write onto an existing file
    ├── ConflictError                          the file changed since it was read (a
    │                                          conditional write lost a race)
    ├── IsADirectoryPathError (+ IsADirectoryError)
    ├── NotADirectoryPathError (+ NotADirectoryError)
    ├── ReadOnlyPathError (+ PermissionError)  write into a read-only area
    ├── NotTextError (+ ValueError)            binary or invalid UTF-8 where text is needed
    ├── FileTooLargeError (+ ValueError)       a file over the byte cap of a bounded read
    ├── EditError (+ ValueError)               old_string absent or ambiguous
    ├── PatternError (+ ValueError)            invalid regex or glob pattern
    ├── SearchTimeoutError (+ TimeoutError)    a regex match ran past its time limit
    ├── ArchiveError                           a transcript segment or index could not be
    │                                          written, verified or read
    ├── TraceError (+ ValueError)              a recorded agent trace is malformed (names
    │                                          the file and line)
    ├── MemoryFormatError (+ ValueError)       a long-term memory file is malformed (names
    │                                          the file and the field)
    ├── WorkflowError                          a staged workflow cannot start or go on
    │   ├── WorkflowStateError (+ ValueError)  its state file is missing a field or malformed
    │   │                                      (names the file and the field)
    │   └── WorkflowConflictError              another runner wrote its state file meanwhile
    │                                          (+ ConflictError)
    ├── UnknownSubAgentError (+ LookupError)   no sub-agent of that name is registered
    │                                          (names the registered ones)
    ├── TaskLimitError (+ RuntimeError)        a thread started as many sub-tasks as the
    │                                          registry's max_tasks allows
    ├── TaskRecordError (+ ValueError)         a sub-task's record is damaged or of a newer
    │                                          format (names the file)
    └── BackendError (+ OSError)               the storage could not be asked
                                               (network, permission, server error)

Three kinds are kept apart: misuse raises at construction (plain ``ValueError``/``TypeError``
from pydantic or the constructor), runtime failures raise one of the classes above, and the
agent's tools turn these into ``Error: ...`` strings instead of raising.
"""

from __future__ import annotations

__all__ = [
    "ArchiveError",
    "BackendError",
    "ConflictError",
    "EditError",
    "FileTooLargeError",
    "IsADirectoryPathError",
    "MemoryFormatError",
    "NotADirectoryPathError",
    "NotTextError",
    "PathExistsError",
    "PathNotFoundError",
    "PatternError",
    "ReadOnlyPathError",
    "SearchTimeoutError",
    "TaskLimitError",
    "TaskRecordError",
    "TraceError",
    "UnknownSubAgentError",
    "UnsafePathError",
    "WorkflowConflictError",
    "WorkflowError",
    "WorkflowStateError",
    "WorkspaceError",
]


class WorkspaceError(Exception):
    """Base class of every error raised by ctxfs.

    Attributes:
        path: The virtual path the error is about, when there is one.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return self.message


class UnsafePathError(WorkspaceError, ValueError):
    """The sandbox refused an agent-supplied path (climbs out, scheme, control chars...)."""


class PathNotFoundError(WorkspaceError, FileNotFoundError):
    """Nothing exists at the path. Never raised when the storage could not be asked."""


class PathExistsError(WorkspaceError, FileExistsError):
    """A create-only write found the file already there."""


class ConflictError(WorkspaceError):
    """The file changed since it was read, so a conditional write did not happen.

    Raised by a write given ``if_version`` (see :meth:`ctxfs.Workspace.read_versioned`) when
    the stored file no longer has that version (another writer changed or deleted it), and by
    :meth:`ctxfs.Workspace.update` and :meth:`ctxfs.Workspace.edit` when other writers kept
    changing the file through every attempt. Nothing was written: read the file again and
    redo the change on what it holds now.
    """


class IsADirectoryPathError(WorkspaceError, IsADirectoryError):
    """A file operation was given a directory."""


class NotADirectoryPathError(WorkspaceError, NotADirectoryError):
    """A directory operation was given a file."""


class ReadOnlyPathError(WorkspaceError, PermissionError):
    """A write, edit or delete aimed at a read-only area of the workspace."""


class NotTextError(WorkspaceError, ValueError):
    """The file is binary or not valid UTF-8, so it cannot be read as text."""


class FileTooLargeError(WorkspaceError, ValueError):
    """A bounded read of a whole file met more bytes than its cap (nothing past the cap is
    read)."""


class EditError(WorkspaceError, ValueError):
    """An exact-replacement edit found its old text zero times, or more than once."""


class PatternError(WorkspaceError, ValueError):
    """A regular expression or glob pattern is invalid."""


class SearchTimeoutError(WorkspaceError, TimeoutError):
    """A regular expression ran past its time limit (catastrophic backtracking)."""


class BackendError(WorkspaceError, OSError):
    """The storage could not be asked: network, permission or server failure.

    Distinct from :class:`PathNotFoundError` on purpose: a failure to ask must never read as
    "missing".
    """


class ArchiveError(WorkspaceError):
    """A transcript segment or the index could not be written, verified or read."""


class TraceError(WorkspaceError, ValueError):
    """A recorded agent trace (see :mod:`ctxfs.replay`) cannot be read or is malformed.

    Attributes:
        source: The trace file (or another name for where the lines came from).
        line: The 1-based line at fault, or ``None`` when the whole file is.
    """

    def __init__(self, message: str, *, source: str, line: int | None = None) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.source = source
        self.line = line


class WorkflowError(WorkspaceError):
    """A staged workflow (:mod:`ctxfs.workflows`) cannot start or go on.

    Raised for a workflow id that is taken (``run``) or unknown (``resume``), and for a state
    file whose stages do not match the workflow resuming it.
    """


class WorkflowStateError(WorkflowError, ValueError):
    """A workflow's state file is not valid JSON or does not match the state format.

    The message names the file and, when one is at fault, the field (``halt.raw_output``...).
    """


class WorkflowConflictError(WorkflowError, ConflictError):
    """Another runner wrote the workflow's state file since this one last did.

    Two runners on one workflow would repeat or interleave stages; the second to write stops
    with this error and the state file keeps the other's progress.
    """


class MemoryFormatError(WorkspaceError, ValueError):
    """A long-term memory file (``/memories/.../memory.json``) is malformed.

    Such a file is never overwritten: fix it (or delete it) first.

    Attributes:
        field: The field at fault, dotted (``facts.3.confidence``), or ``None`` when the
            whole file is (not JSON, not an object).
    """

    def __init__(self, message: str, *, path: str, field: str | None = None) -> None:
        where = f"{path}: field {field}" if field else path
        super().__init__(f"{where}: {message}", path=path)
        self.field = field


class UnknownSubAgentError(WorkspaceError, LookupError):
    """No sub-agent of that name is registered (:mod:`ctxfs.subagents`).

    The message lists the registered names; :attr:`registered` holds them.

    Attributes:
        name: The name asked for.
        registered: The names that are registered, in registration order.
    """

    def __init__(self, name: str, registered: tuple[str, ...]) -> None:
        known = ", ".join(repr(n) for n in registered) or "none"
        super().__init__(f"no sub-agent named {name!r}; registered: {known}")
        self.name = name
        self.registered = registered


class TaskLimitError(WorkspaceError, RuntimeError):
    """A thread started as many sub-tasks as the registry allows (:mod:`ctxfs.subagents`).

    Raised before anything runs or is recorded. A task that already ran (its recorded result
    is returned) is never refused.

    Attributes:
        parent_thread_id: The thread whose tasks reached the limit.
        max_tasks: The limit (``SubAgents(max_tasks=...)``).
    """

    def __init__(self, parent_thread_id: str, max_tasks: int) -> None:
        super().__init__(
            f"thread {parent_thread_id!r} has started {max_tasks} sub-task(s), the most this "
            f"registry allows (max_tasks={max_tasks})"
        )
        self.parent_thread_id = parent_thread_id
        self.max_tasks = max_tasks


class TaskRecordError(WorkspaceError, ValueError):
    """A sub-task's record (``/transcripts/<thread>/task.json``) cannot be read: torn, not
    JSON, a key named twice, not a record, or written by a newer ctxfs.

    The task is not run again on such a record (it may have ended, and its result would be
    lost or its work done twice), and the record is never overwritten: read it, then delete
    it to run the task again (a newer ctxfs's record: upgrade ctxfs).
    """
