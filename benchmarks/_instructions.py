"""Instructions executed, counted by valgrind's callgrind: a measure a loaded machine leaves alone.

Timings on a machine shared with other work move with the load; the number of instructions
a piece of code executes does not (within a few tenths of a percent from run to run). A
benchmark given ``--instructions`` runs itself again under callgrind
(:func:`rerun_under_callgrind`) and reads :func:`instructions` where it would read a clock:
the count of instructions executed since the process started measuring. Memory stalls and
parallelism are not in it, so an instruction ratio says how much work each side does, and
a time ratio from a quiet machine how long it takes; the docs give both where they can.

Needs ``valgrind`` and a C compiler (``apt-get install valgrind gcc``): a 10-line library,
built on first use in a temporary folder, makes callgrind's client requests (zero the
counters, dump them), which Python cannot make by itself.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

_SOURCE = """
#include <valgrind/callgrind.h>
int ctxfs_on_valgrind(void) { return RUNNING_ON_VALGRIND; }
void ctxfs_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void ctxfs_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""
_OUT = "CTXFS_CALLGRIND_OUT"  # the folder callgrind writes its dumps in


class _Counter:
    """Callgrind's counters, read by dumping them (a dump also zeroes them)."""

    def __init__(self, folder: Path) -> None:
        source = folder / "requests.c"
        source.write_text(_SOURCE)
        library = folder / "librequests.so"
        subprocess.run(
            ["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True
        )
        self._lib = ctypes.CDLL(str(library))
        self._folder = folder
        self._dumps = 0
        self._total = 0
        self._lib.ctxfs_start()
        self.read()  # what ran before measuring started is not counted

    def read(self) -> int:
        self._lib.ctxfs_dump(b"read")
        self._dumps += 1
        dump = self._folder / f"callgrind.out.{os.getpid()}.{self._dumps}"
        for line in dump.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                self._total += int(line.split()[1])
                break
        dump.unlink()
        return self._total


_counter: _Counter | None = None


def instructions() -> float:
    """Instructions executed since measuring started (under :func:`rerun_under_callgrind`)."""
    global _counter
    if _counter is None:
        folder = os.environ.get(_OUT)
        if folder is None:
            raise RuntimeError("instructions() needs the process to run under callgrind")
        _counter = _Counter(Path(folder))
    return float(_counter.read())


def under_callgrind() -> bool:
    """Whether this process was started by :func:`rerun_under_callgrind`."""
    return _OUT in os.environ


def rerun_under_callgrind() -> NoReturn:
    """Runs this script again, with the same arguments, under callgrind; never returns.

    Instrumentation starts at the first :func:`instructions` call, so building the inputs
    runs at valgrind's plain speed (several times slower than native, far from callgrind's).
    """
    if shutil.which("valgrind") is None or shutil.which("cc") is None:
        sys.exit("--instructions needs valgrind and a C compiler (apt-get install valgrind gcc)")
    folder = tempfile.mkdtemp(prefix="ctxfs-callgrind-")
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--dump-instr=no",
        "--dump-line=no",
        f"--callgrind-out-file={folder}/callgrind.out.%p",
        "--log-file=" + os.path.join(folder, "valgrind.log"),
        sys.executable,
        *sys.argv,
    ]
    sys.stdout.flush()
    completed = subprocess.run(command, env={**os.environ, _OUT: folder}, check=False)
    shutil.rmtree(folder, ignore_errors=True)
    sys.exit(completed.returncode)
