"""A store that fails its k-th call, whatever the call: the sweeps that fail every storage
call of an operation in turn (tests/sdk/test_fault_every_call.py and the agent run's)."""

from __future__ import annotations

from typing import Any

from ctxfs.testing import RecordingStore


class FailingAt(RecordingStore):
    """Records every call, and raises at the ``at``-th (1-based) if ``at`` is set."""

    def __init__(
        self, inner: Any, at: int | None = None, error: type[BaseException] = OSError
    ) -> None:
        super().__init__(inner)
        self.at = at
        self.error = error

    def _record(self, method: str, path: str) -> None:
        super()._record(method, path)
        if len(self.calls) == self.at:
            raise self.error(f"injected at call {self.at}: {method} {path}")
