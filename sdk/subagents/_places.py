"""How many sub-agents run at once: a fixed number of places, taken first come first served.

One :class:`Places` is shared by blocking callers (``SubAgents.run`` in the threads of a
graph's tool node) and by coroutines (``SubAgents.arun`` on one or several event loops): a
caller that finds no free place waits in line, a coroutine without holding a thread (the
running sub-agents need the worker threads for their own work), and a place given back goes
to the first in line. A waiter that gives up (its task is cancelled) leaves the line, or
passes on the place it had just been given; no place is ever lost.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

__all__ = ["Places"]


@dataclass(slots=True, eq=False)
class _Waiter:
    wake: Callable[[], None]  # may raise RuntimeError: its event loop is closed
    given: bool = False


class Places:
    """``limit`` places; :meth:`held` and :meth:`aheld` hold one while their block runs.

    Example:
        >>> places = Places(1)
        >>> with places.held():
        ...     places.free
        0
        >>> places.free
        1
    """

    def __init__(self, limit: int) -> None:
        self._lock = threading.Lock()
        self._free = limit
        self._line: deque[_Waiter] = deque()

    @property
    def free(self) -> int:
        """Places nobody holds."""
        return self._free

    @contextmanager
    def held(self, on_wait: Callable[[], None] = lambda: None) -> Iterator[None]:
        """Holds a place while the block runs, waiting (blocking the thread) for one first.

        Args:
            on_wait: Called when there is no free place, before waiting.
        """
        event = threading.Event()
        waiter = self._take(event.set)
        if waiter is not None:
            try:
                on_wait()
                event.wait()
            except BaseException:
                self._leave(waiter)
                raise
        try:
            yield
        finally:
            self._give_back()

    @asynccontextmanager
    async def aheld(self, on_wait: Callable[[], None] = lambda: None) -> AsyncIterator[None]:
        """Holds a place while the block runs, awaiting one first (no thread held)."""
        loop = asyncio.get_running_loop()
        given: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            loop.call_soon_threadsafe(_settle, given)

        waiter = self._take(wake)
        if waiter is not None:
            try:
                on_wait()
                await given
            except BaseException:
                self._leave(waiter)
                raise
        try:
            yield
        finally:
            self._give_back()

    def _take(self, wake: Callable[[], None]) -> _Waiter | None:
        """Takes a free place (``None``), or joins the line (the waiter to wait on)."""
        with self._lock:
            if self._free > 0 and not self._line:
                self._free -= 1
                return None
            waiter = _Waiter(wake)
            self._line.append(waiter)
            return waiter

    def _give_back(self) -> None:
        with self._lock:
            while self._line:
                waiter = self._line.popleft()
                waiter.given = True
                try:
                    waiter.wake()
                except RuntimeError:  # its event loop is closed: nobody waits there any more
                    continue
                return
            self._free += 1

    def _leave(self, waiter: _Waiter) -> None:
        with self._lock:
            if not waiter.given:
                self._line.remove(waiter)
                return
        self._give_back()  # it was given a place it will not use: the next in line takes it


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
