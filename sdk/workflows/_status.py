"""Whether a workflow recorded as ``running`` still has a runner, as a person should read it.

A runner killed outright (``SIGKILL``, a power cut) cannot write that it stopped, so its
state file still says ``running``. The state names the runner's machine and process
(``host``, ``pid``) and when it last wrote (``updated_at``; a running stage's start and
checkpoints are writes). On the same machine, a process that is gone means the run was
interrupted; elsewhere, the time since the last write is all there is to go on.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime

from ctxfs.workflows._state import WorkflowState

__all__ = ["runner_status"]


def runner_status(state: WorkflowState, *, now: datetime | None = None) -> str:
    """The workflow's status, with what is known of its runner when it is ``running``.

    Example:
        ``interrupted (its runner, process 4242 on this machine, is gone; resume it)``, or
        ``running (runner 0f3a..., process 4242 on build-7, last wrote 12 s ago)``.

    Args:
        state: The state file.
        now: The current time (default: the clock), timezone-aware.
    """
    if state.status != "running":
        return state.status
    if state.pid is not None and state.host == socket.gethostname() and not _alive(state.pid):
        return f"interrupted (its runner, process {state.pid} on this machine, is gone; resume it)"
    updated = state.updated_at
    if updated.tzinfo is None:  # a hand edit without a timezone: read as UTC
        updated = updated.replace(tzinfo=UTC)
    ago = ((now or datetime.now(UTC)) - updated).total_seconds()
    where = f", process {state.pid} on {state.host}" if state.pid is not None else ""
    return f"running (runner {state.runner}{where}, last wrote {_duration(ago)} ago)"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:  # pragma: no cover - a platform without signal 0 (cannot tell)
        return True
    return True


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
