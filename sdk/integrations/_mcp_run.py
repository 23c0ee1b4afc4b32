"""Running the MCP server's calls side by side, and ending cleanly when the client goes away.

- Tool calls run in worker threads, at most ``max_concurrent_calls`` at a time, so a slow
  ``grep`` does not hold up a ``list_directory``; what is not thread-safe (the token counter's
  caches) is guarded by itself, not by a lock around the whole call.
- A client that disconnects (stdin closes) or dies mid-call ends the server: calls in flight
  are abandoned (their answers have no one to go to), and a closed stdout is the end of the
  session, not an error.
- A request the transport could not read (not JSON it takes) is answered with an error for
  its id (:mod:`._mcp_wire`), so the client does not wait for it forever.
- A server whose client died without closing its stdin (the server was re-parented: it is
  orphaned) notices within a second and ends its process.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ctxfs._tokens import TokenCounter
from ctxfs.integrations._mcp_wire import AnsweringStream

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from mcp.server import Server

__all__ = [
    "DEFAULT_MAX_CONCURRENT_CALLS",
    "SerializedCounter",
    "client_gone",
    "in_worker",
    "run_until_client_leaves",
]

DEFAULT_MAX_CONCURRENT_CALLS: Final = 4
"""Tool calls a server runs at the same time; more wait for a free slot."""

ORPHAN_CHECK_SECONDS: Final = 1.0
"""How often the server checks that the process that started it is still there."""

_T = TypeVar("_T")


class SerializedCounter:
    """A token counter that several threads may share: each count runs under one lock (the
    counters cache per message, and the caches are not thread-safe). Counting is short; the
    tools' reads and searches run outside the lock."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._lock = threading.Lock()
        bound = getattr(counter, "upper_bound", None)
        if bound is not None:
            self.upper_bound = self._guarded(bound)

    def _guarded(self, function: Callable[..., _T]) -> Callable[..., _T]:
        def guarded(*args: Any) -> _T:
            with self._lock:
                return function(*args)

        return guarded

    def count_text(self, text: str) -> int:
        with self._lock:
            return self._counter.count_text(text)

    def count_message(self, message: BaseMessage) -> int:
        with self._lock:
            return self._counter.count_message(message)

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        with self._lock:
            return self._counter.count_messages(messages)


def client_gone(group: BaseException) -> bool:
    """Whether ``group`` (an exception, or a group of them) only says that the client went
    away: a broken or closed pipe, a reset connection, a stream closed under a write."""
    import anyio

    gone = (
        BrokenPipeError,
        ConnectionResetError,
        EOFError,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        anyio.EndOfStream,
    )
    if isinstance(group, BaseExceptionGroup):
        return all(client_gone(inner) for inner in group.exceptions)
    return isinstance(group, gone)


async def run_until_client_leaves(
    server: Server[Any],
    streams: Callable[[], Any],
    *,
    parent: int | None = None,
) -> None:
    """Runs ``server`` on the streams ``streams()`` opens until the client leaves.

    Args:
        server: The server.
        streams: An async context manager factory giving ``(read_stream, write_stream)``.
        parent: The process id of the client that started this one: when this process's
            parent changes (the client died and the server was re-parented), the process
            ends. ``None``: not watched.
    """
    import anyio

    try:
        async with streams() as (read_stream, write_stream), anyio.create_task_group() as tg:
            if parent is not None:
                tg.start_soon(_stop_when_orphaned, parent)
            # a request the transport could not read is answered, not dropped
            requests = AnsweringStream(read_stream, write_stream)
            await server.run(requests, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()  # the session ended: stop watching
    except BaseExceptionGroup as group:
        if not client_gone(group):
            raise
    except (BrokenPipeError, ConnectionResetError):
        pass


async def _stop_when_orphaned(parent: int) -> None:
    """Ends the process once its parent is gone. Cancelling would not do: the thread that
    reads stdin waits for input that never comes (the pipe is still open elsewhere), and the
    abandoned calls would keep their threads busy."""
    import anyio

    while os.getppid() == parent:
        await anyio.sleep(ORPHAN_CHECK_SECONDS)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(0)


async def in_worker(function: Callable[[], _T], limiter: Any) -> _T:
    """Runs ``function`` in a worker thread under ``limiter``; when the call is cancelled (the
    client left or cancelled it) the thread is abandoned rather than waited for."""
    import anyio

    return await anyio.to_thread.run_sync(function, abandon_on_cancel=True, limiter=limiter)
