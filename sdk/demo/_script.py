"""What the offline demo's scripted agent does, turn by turn.

A realistic investigation: look around, run the tests (a long output, offloaded), search the
offloaded output and the multi-MB log, read pages, write notes, fix the bug, write a
regression test, re-run the tests, read on. Then the user asks for a detail from the very
beginning, long since archived: the agent finds it with ``grep`` in ``/transcripts`` and
reads it back with ``read_file``.

Some replies are functions of the conversation: they read what a tool just returned (the
path of an offloaded result, a line number from ``grep``), as a model would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxfs._pointers._resolve import pointer_of
from ctxfs.demo._data import BUGGY_LINE, FIXED_LINE, LOG_PATH, ROUNDING_PATH
from ctxfs.testing import Reply, tool_call

__all__ = ["FOLLOW_UP", "TASK", "script"]

TASK = (
    "The nightly payments settlement job reports amounts one cent short. Investigate using "
    "the logs in /logs and the code in /src, find the root cause, fix it, add a regression "
    "test, and keep notes in /notes."
)

FOLLOW_UP = (
    "Before I close the incident: what was the request id of the very first failed "
    "settlement, exactly as the log reported it?"
)

_GREP_HIT = re.compile(r"^(/\S+?):(\d+):", re.MULTILINE)
_REQUEST = re.compile(r"request_id=(req-[0-9a-f]+)")
_TXN = re.compile(r"txn=(TX-\d+)")


def _last_text(messages: Sequence[BaseMessage]) -> str:
    last = messages[-1]
    return last.text if isinstance(last, ToolMessage) else ""


def _grep_offloaded(pattern: str, say: str) -> Reply:
    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        pointer = pointer_of(messages[-1]) if messages else None
        path = pointer.path if pointer is not None else "/tool_results"
        args = {"pattern": pattern, "path": path, "output_mode": "content", "-C": 1}
        return tool_call("grep", args, content=say)

    return reply


def _read_around_first_hit(before: int, limit: int, say: str) -> Reply:
    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        hit = _GREP_HIT.search(_last_text(messages))
        path, line = (hit.group(1), int(hit.group(2))) if hit else (LOG_PATH, 1)
        args = {"file_path": path, "offset": max(0, line - 1 - before), "limit": limit}
        return tool_call("read_file", args, content=say)

    return reply


def _answer_from_archive(messages: Sequence[BaseMessage]) -> str:
    text = _last_text(messages)
    request = _REQUEST.search(text)
    txn = _TXN.search(text)
    if request is None:
        return "I could not find the first failure in the archive."
    where = ""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            where = str(message.tool_calls[0]["args"].get("file_path", ""))
            break
    return (
        f"The first failed settlement was {txn.group(1) if txn else 'a transaction'} with "
        f"request_id={request.group(1)}. That part of our conversation had left my context, "
        f"so I found it with grep in what ctxfs saved (/transcripts, /tool_results) and read "
        f"it back from {where}."
    )


_NOTES = """# Incident: settlements one cent short (2024-06-01)

## Symptom
- The nightly job logs `rounding mismatch` errors from 11:51 on: the settled amount is one
  cent below the expected amount, always for amounts with a fraction of a cent (x.xx5).
- The test suite has one failure: tests/test_rounding.py::test_fractional_cents_round_half_up
  (to_cents(0.105) returns 10 instead of 11).

## Root cause
`payments.rounding.to_cents` converts with `int(amount * 100)`. `int` truncates toward zero,
and binary floating point cannot represent 0.105 exactly (it is 0.10499999...), so every
amount with a half cent loses it. Currency conversion (`payments.currency.convert`) produces
such amounts for USD, GBP and CHF transactions, which is why the errors start once the first
converted batches are settled.

## Fix
Round half up on the decimal value of the amount:

    int((Decimal(str(amount)) * 100).quantize(Decimal("1"), ROUND_HALF_UP))

`Decimal(str(amount))` takes the shortest repr of the float (0.105), so the half cent is kept,
and `ROUND_HALF_UP` matches what finance expects (bankers' rounding would not).

## Follow-ups
- Regression test for amounts ending in 5 after conversion: tests/test_rounding_regression.py
- Re-settle the batches that logged `rounding mismatch` (903 transactions, see the log).
- Consider storing amounts as integer cents end to end instead of floats.
"""

_REGRESSION = '''"""Regression tests: amounts with a half cent round half up, never truncated."""

import pytest

from payments.rounding import from_cents, to_cents


@pytest.mark.parametrize(
    ("amount", "cents"),
    [
        (0.005, 1),
        (0.015, 2),
        (0.105, 11),
        (1.005, 101),
        (2.675, 268),
        (10.125, 1013),
        (99.995, 10000),
        (123.455, 12346),
        (0.0, 0),
        (0.01, 1),
        (0.1, 10),
        (12.34, 1234),
    ],
)
def test_to_cents_rounds_half_up(amount, cents):
    assert to_cents(amount) == cents


@pytest.mark.parametrize("cents", [0, 1, 99, 100, 1234, 999_999])
def test_round_trip_is_exact(cents):
    assert to_cents(float(from_cents(cents))) == cents


def test_converted_amounts_keep_their_half_cent():
    from payments.currency import convert

    assert to_cents(convert(0.105, "EUR", "EUR")) == 11
'''


def script() -> list[Reply]:
    """The replies of the scripted agent, for :data:`TASK` and then :data:`FOLLOW_UP`."""
    return [
        tool_call("ls", {"path": "/"}, content="First, what is in the workspace?"),
        tool_call("glob", {"pattern": "**/*.py"}, content="The code base is small; its files:"),
        tool_call("run_tests", content="Let me run the test suite to see what fails."),
        _grep_offloaded("FAILED|Error", "The output was long; searching it for the failure."),
        tool_call(
            "grep",
            {"pattern": "ERROR", "path": "/logs", "output_mode": "count"},
            content="How many errors did the job log?",
        ),
        tool_call(
            "grep",
            {"pattern": "ERROR", "path": "/logs", "output_mode": "content", "head_limit": 25},
            content="The first errors, in order:",
        ),
        _read_around_first_hit(30, 60, "Reading the log around the first error."),
        tool_call("read_file", {"file_path": ROUNDING_PATH}, content="Now the rounding code."),
        tool_call("read_file", {"file_path": "/src/payments/settle.py"}),
        tool_call("read_file", {"file_path": "/src/payments/currency.py"}),
        tool_call(
            "write_file",
            {"file_path": "/notes/investigation.md", "content": _NOTES},
            content="Found it: to_cents truncates. Writing down what I know before fixing.",
        ),
        tool_call(
            "edit_file",
            {"file_path": ROUNDING_PATH, "old_string": BUGGY_LINE, "new_string": FIXED_LINE},
            content="Fixing to_cents to round half up on the decimal value.",
        ),
        tool_call(
            "write_file",
            {"file_path": "/tests/test_rounding_regression.py", "content": _REGRESSION},
            content="Adding a regression test.",
        ),
        tool_call("run_tests", content="Re-running the tests."),
        _grep_offloaded("passed|failed", "Checking the summary line of the new run."),
        tool_call(
            "grep",
            {"pattern": "WARN", "path": "/logs", "output_mode": "content", "head_limit": 40},
            content="Are the ledger-write warnings related?",
        ),
        _read_around_first_hit(5, 80, "Reading around the first warning."),
        tool_call(
            "read_file",
            {"file_path": LOG_PATH, "offset": 30_000, "limit": 80},
            content="And a page from late in the run, to see the errors continue until the end.",
        ),
        "Root cause: `payments.rounding.to_cents` truncated (`int(amount * 100)`), so amounts "
        "with a half cent lost it after currency conversion. Fixed it to round half up on the "
        "decimal value, added tests/test_rounding_regression.py, and all 412 tests pass. The "
        "ledger-write warnings are unrelated timeouts. Notes: /notes/investigation.md.",
        tool_call(
            "grep",
            {
                "pattern": "rounding mismatch",
                "path": "/",
                # Where ctxfs keeps what left the context: the archived conversation, and
                # the saved copies of tool results it cleared before archiving them.
                "glob": "{transcripts/**/*.md,tool_results/**}",
                "output_mode": "content",
                "head_limit": 1,
            },
            content="That was early on and is no longer in my context; searching the archive.",
        ),
        _read_around_first_hit(2, 6, "Reading that part of the archived transcript."),
        _answer_from_archive,
    ]
