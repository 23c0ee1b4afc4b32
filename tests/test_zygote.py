"""The tests' zygote (tests/_zygote.py) starts a script as a fresh interpreter would: same
argv, environment, working folder, ``sys.path[0]``, ``__main__``, streams, exit status (a
``SystemExit``, an uncaught exception, a signal), only without the start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._zygote import PIPE, Zygote

SCRIPT = """\
import json, os, signal, sys
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if sys.argv[1] == "raise":
    raise ValueError("boom")
print(json.dumps({
    "argv": sys.argv, "env": os.environ.get("ZYGOTE_TEST"), "cwd": os.getcwd(),
    "path0": sys.path[0], "name": __name__, "stdin": sys.stdin.read(),
}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[2]))
"""


@pytest.mark.parametrize(
    ("args", "input"),
    [(["print", "3"], "from stdin\n"), (["print", "0"], None), (["raise"], None), (["kill"], None)],
)
def test_a_script_runs_as_in_a_fresh_interpreter(
    args: list[str], input: str | None, tmp_path: Path, zygote: Zygote
) -> None:
    script = tmp_path / "folder" / "script.py"
    script.parent.mkdir()
    script.write_text(SCRIPT)
    argv = [sys.executable, str(script), *args]
    env = {**os.environ, "ZYGOTE_TEST": "yes"}
    fresh = subprocess.run(
        argv, input=input or "", env=env, capture_output=True, text=True, check=False
    )
    forked = zygote.run(argv, env=env, input=input or "", timeout=60)
    assert forked.returncode == fresh.returncode
    assert forked.stdout == fresh.stdout
    if args[0] == "raise":  # the traceback's last lines: the script's, not the zygote's
        assert forked.stderr.splitlines()[-3:] == fresh.stderr.splitlines()[-3:]
    else:
        assert forked.stderr == fresh.stderr
    if args[0] == "print":
        seen = json.loads(forked.stdout)
        assert seen["argv"] == [str(script), *args] and seen["env"] == "yes"
        assert seen["path0"] == str(script.parent) and seen["name"] == "__main__"


def test_a_child_is_killed_and_its_pipes_are_its_own(zygote: Zygote, tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text("import sys\nfor line in sys.stdin:\n    print(line.strip(), flush=True)\n")
    child = zygote.popen([sys.executable, str(script)], stdin=PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("one\n")
    child.stdin.flush()
    assert child.stdout.readline() == "one\n"
    assert child.pid != os.getpid() and child.poll() is None
    child.kill()
    assert child.wait(timeout=60) == -9
    assert child.communicate(timeout=60) == ("", "")
