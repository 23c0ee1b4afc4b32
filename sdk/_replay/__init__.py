"""Replay: a recorded agent run read, run through the engine, and checked for loss.

- :mod:`~ctxfs._replay._trace`: reading a trace file into messages, line by line;
- :mod:`~ctxfs._replay._run`: replaying it as the agent would have lived it;
- :mod:`~ctxfs._replay._recovery`: checking that everything that left the context reads back.
"""

from ctxfs._replay._recovery import Recovery, check_recovery, restore_history, restore_messages
from ctxfs._replay._run import ModelCall, ReplayResult, replay
from ctxfs._replay._trace import parse_trace, read_trace

__all__ = [
    "ModelCall",
    "Recovery",
    "ReplayResult",
    "check_recovery",
    "parse_trace",
    "read_trace",
    "replay",
    "restore_history",
    "restore_messages",
]
