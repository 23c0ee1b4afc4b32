"""How fast the ``ctxfs`` command starts, and what it imports (a script, not a test).

Usage::

    python benchmarks/bench_startup.py [--runs 15]

Runs each command as a whole process ``--runs`` times, interleaved with a bare interpreter
start (``python -c pass``) so that both see the same machine load, and prints the median
wall time of each, its ratio to the bare start, and whether it loaded LangChain, LangGraph
or the compaction engine. Every command runs once first, uncounted, with bytecode writing on
(``PYTHONDONTWRITEBYTECODE`` unset), so that the counted runs load compiled modules as an
installed package does, not the source compiled anew at every start. The goal (issue 26):
``--version`` and ``--help`` within 5x a bare start.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_PROBE = (
    "import runpy, sys; sys.argv = ['ctxfs', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('ctxfs', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "heavy = sorted({m.split('.')[0] for m in sys.modules if m.startswith(('langchain', "
    "'langgraph'))} | {m for m in sys.modules if m == 'ctxfs._compaction._engine'})\n"
    "sys.stderr.write('LOADED ' + ' '.join(heavy) + '\\n')\n"
)


_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=_ENV
    )
    return time.perf_counter() - started


def _loaded(words: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *words],
        capture_output=True,
        text=True,
        check=False,
        env=_ENV,
    )
    line = next((x for x in done.stderr.splitlines() if x.startswith("LOADED")), "LOADED ?")
    return line.removeprefix("LOADED").strip() or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per command")
    runs = parser.parse_args().runs
    script = Path(sys.executable).with_name("ctxfs")
    ctxfs = [str(script)] if script.exists() else [shutil.which("ctxfs") or "ctxfs"]
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "notes.md").write_text("alpha\nbeta\n" * 100)
        commands = {
            "ctxfs --version": ["--version"],
            "ctxfs --help": ["--help"],
            "ctxfs ls": ["ls", folder],
            "ctxfs cat": ["cat", folder, "/notes.md"],
            "ctxfs grep": ["grep", folder, "beta"],
        }
        bare: list[float] = []
        times: dict[str, list[float]] = {name: [] for name in commands}
        for words in commands.values():  # compile and cache the bytecode, uncounted
            _time([*ctxfs, *words])
        for _ in range(runs):
            for name, words in commands.items():
                bare.append(_time([sys.executable, "-c", "pass"]))
                times[name].append(_time([*ctxfs, *words]))
        base = statistics.median(bare)
        print(f"bare interpreter start (python -c pass): {base * 1000:.0f} ms (median)")
        print(f"{'command':<18} {'median':>8} {'ratio':>6}  loads")
        for name, words in commands.items():
            median = statistics.median(times[name])
            print(f"{name:<18} {median * 1000:>6.0f}ms {median / base:>5.1f}x  {_loaded(words)}")


if __name__ == "__main__":
    main()
