"""The demo's world: a payments service with a rounding bug, its logs, and its test runner.

Everything is generated from a fixed seed, so every run (and every test) sees the same bytes.
The log is a few MB of settlement lines; from one point on, amounts with a fraction of a cent
are settled one cent short (the code truncates instead of rounding) and the log says so.
The very first failure carries a request id, :data:`FIRST_REQUEST_ID`, that the agent is asked
to quote at the end, long after that part of the conversation was archived.
"""

from __future__ import annotations

import random

from ctxfs._workspace._workspace import Workspace

__all__ = [
    "BUGGY_LINE",
    "FIRST_ERROR_TXN",
    "FIRST_REQUEST_ID",
    "FIXED_LINE",
    "LOG_PATH",
    "ROUNDING_PATH",
    "populate",
    "suite_output",
]

LOG_PATH = "/logs/payments-2024-06-01.log"
ROUNDING_PATH = "/src/payments/rounding.py"
FIRST_REQUEST_ID = "req-7c1e5a90"
FIRST_ERROR_TXN = "TX-480117"
BUGGY_LINE = "    return int(amount * 100)"
FIXED_LINE = '    return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), ROUND_HALF_UP))'

_SEED = 20240601
_LOG_LINES = 36_000
_FIRST_ERROR_AT = 21_337

_ROUNDING = f'''"""Conversions between decimal amounts and integer cents."""

from decimal import ROUND_HALF_UP, Decimal


def to_cents(amount: float) -> int:
    """Amount in cents, e.g. 12.34 -> 1234."""
{BUGGY_LINE}


def from_cents(cents: int) -> Decimal:
    """Cents back to an amount, e.g. 1234 -> Decimal("12.34")."""
    return Decimal(cents) / 100
'''

_SETTLE = '''"""Settlement of a batch of card transactions."""

from payments.currency import convert
from payments.rounding import to_cents


def settle(batch):
    """Settles every transaction of a batch; returns the total in cents per currency."""
    totals = {}
    for txn in batch:
        amount = convert(txn.amount, txn.currency, "EUR")
        totals[txn.currency] = totals.get(txn.currency, 0) + to_cents(amount)
    return totals
'''

_CURRENCY = '''"""Currency conversion with the daily reference rates."""

RATES = {"EUR": 1.0, "USD": 0.9213, "GBP": 1.1721, "CHF": 1.0384}


def convert(amount, source, target):
    """Converts an amount between currencies through EUR."""
    return amount * RATES[source] / RATES[target]
'''

_TESTS = '''"""Tests of the cents conversions."""

from payments.rounding import from_cents, to_cents


def test_round_trip():
    assert from_cents(to_cents(12.34)) == 12.34


def test_fractional_cents_round_half_up():
    assert to_cents(0.105) == 11
    assert to_cents(2.675) == 268
'''

_README = """# payments

Nightly settlement job: reads the day's card transactions, converts them to EUR and settles
them per batch. Logs go to /logs, code is in /src/payments, tests in /tests.
"""


def populate(workspace: Workspace) -> None:
    """Writes the service's code, tests and log into ``workspace`` (overwriting them)."""
    workspace.write_text("/README.md", _README)
    workspace.write_text("/src/payments/__init__.py", "")
    workspace.write_text(ROUNDING_PATH, _ROUNDING)
    workspace.write_text("/src/payments/settle.py", _SETTLE)
    workspace.write_text("/src/payments/currency.py", _CURRENCY)
    workspace.write_text("/tests/test_rounding.py", _TESTS)
    workspace.write_text(LOG_PATH, _log())


def _log() -> str:
    rng = random.Random(_SEED)
    lines: list[str] = []
    failures = 0
    for n in range(_LOG_LINES):
        second = n * 2
        stamp = f"2024-06-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"
        worker = rng.randrange(8)
        batch = 4000 + n // 50
        txn = f"TX-{rng.randrange(100_000, 999_999)}"
        cents = rng.randrange(100, 50_000)
        fraction = rng.random() < 0.2
        amount = f"{cents / 100:.2f}" + ("5" if fraction else "")
        failing = n >= _FIRST_ERROR_AT and fraction and rng.random() < 0.3
        if n == _FIRST_ERROR_AT:
            txn, amount, failing = FIRST_ERROR_TXN, "0.105", True
        if failing:
            request = FIRST_REQUEST_ID if failures == 0 else f"req-{rng.getrandbits(32):08x}"
            expected = int(float(amount) * 100 + 0.5 + 1e-9)
            lines.append(
                f"{stamp} ERROR worker-{worker} settle batch={batch} txn={txn} amount={amount} "
                f"EUR rounding mismatch: expected {expected} cents, settled {expected - 1} "
                f"(request_id={request})"
            )
            failures += 1
        elif rng.random() < 0.01:
            lines.append(
                f"{stamp} WARN  worker-{worker} settle batch={batch} retrying ledger write "
                f"after timeout ({rng.randrange(200, 900)} ms)"
            )
        else:
            lines.append(
                f"{stamp} INFO  worker-{worker} settle batch={batch} txn={txn} amount={amount} "
                f"EUR ok in {rng.randrange(3, 80)} ms"
            )
    return "\n".join(lines) + "\n"


def suite_output(workspace: Workspace) -> str:
    """What running the test suite prints: long and failing until the bug is fixed."""
    fixed = FIXED_LINE in workspace.read_text(ROUNDING_PATH)
    rng = random.Random(_SEED + 1)
    out = ["============================= test session starts =============================="]
    out.append("collected 412 items")
    for n in range(410):
        module = ("settle", "currency", "ledger", "batch", "report")[n % 5]
        out.append(f"tests/test_{module}.py::test_case_{n:03d} PASSED [{(n + 1) * 100 // 412}%]")
        if rng.random() < 0.3:
            out.append(f"    log: fixture db_{n % 9} ready in {rng.randrange(1, 40)} ms")
    if fixed:
        out.append("tests/test_rounding.py::test_round_trip PASSED [99%]")
        out.append("tests/test_rounding.py::test_fractional_cents_round_half_up PASSED [100%]")
        out.append(
            "============================= 412 passed in 8.31s =============================="
        )
        return "\n".join(out)
    out.append("tests/test_rounding.py::test_round_trip PASSED [99%]")
    out.append("tests/test_rounding.py::test_fractional_cents_round_half_up FAILED [100%]")
    out.append("=================================== FAILURES ===================================")
    out.append("____________________ test_fractional_cents_round_half_up _____________________")
    out.append("    def test_fractional_cents_round_half_up():")
    out.append(">       assert to_cents(0.105) == 11")
    out.append("E       assert 10 == 11")
    out.append("E        +  where 10 = to_cents(0.105)")
    out.append("src/payments/rounding.py:8: AssertionError")
    out.append("=========================== short test summary info ============================")
    out.append(
        "FAILED tests/test_rounding.py::test_fractional_cents_round_half_up - assert 10 == 11"
    )
    out.append("======================== 1 failed, 411 passed in 8.27s =========================")
    return "\n".join(out)
