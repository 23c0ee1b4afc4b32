"""Python processes started without the interpreter's start-up: forked from one that has
already imported what they need.

The crash and concurrency tests run their agents and workers as separate processes, killed
with SIGKILL and run again; each process used to spend about two seconds of CPU importing
langchain, langgraph, pydantic and botocore before its first line of work, which was most of
what those tests cost. Here one server process per pytest worker (:class:`Zygote`) imports
them once; each :meth:`Zygote.popen` forks it. The child is still a process of its own, with
its own pid, memory and file descriptors, killed by a real SIGKILL and run again as a fresh
one; it runs the script as ``python script.py args`` would (``__main__``, ``sys.argv``, the
script's folder first on ``sys.path``, the given environment and working folder, its exit
status or the signal that ended it). What differs from a fresh interpreter: the modules
preloaded are already imported (before the script sets its environment, so none may read
the environment at import), all children share the server's hash seed, and the child's
parent process is a small waiter (not the test), so tests of a parent's death or of the
interpreter's start itself (the command line, the MCP server) keep real subprocesses.

Run as a script, this module is the server: ``python _zygote.py FD MODULE...``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

PIPE = subprocess.PIPE


class Child:
    """A forked process, used as a :class:`subprocess.Popen` in text mode."""

    def __init__(self, argv: list[str], status: int, pipes: dict[str, IO[str] | None]) -> None:
        self.args = argv
        self.stdin, self.stdout, self.stderr = pipes["stdin"], pipes["stdout"], pipes["stderr"]
        self.returncode: int | None = None
        self._status = os.fdopen(status, "rb", buffering=0)
        self.pid = int(self._line(None))

    def _line(self, timeout: float | None) -> bytes:
        """The next line the waiter writes: the child's pid, then its exit code."""
        data = b""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not data.endswith(b"\n"):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._status], [], [], left)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            chunk = self._status.read(1)
            if not chunk:
                raise RuntimeError(f"the zygote's waiter of {self.args} ended without a status")
            data += chunk
        return data

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._status], [], [], 0)[0]:
            self.wait()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = int(self._line(timeout))  # -N when signal N ended it
            self._status.close()
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def communicate(
        self, input: str | None = None, timeout: float | None = None
    ) -> tuple[str, str]:
        """Writes ``input`` and closes stdin, reads stdout and stderr to their ends, waits."""
        if self.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                if input:
                    self.stdin.write(input)
                self.stdin.close()
        read: dict[str, str] = {}

        def drain(name: str, stream: IO[str]) -> None:
            read[name] = stream.read()
            stream.close()

        readers = [
            threading.Thread(target=drain, args=(name, stream), daemon=True)
            for name, stream in (("out", self.stdout), ("err", self.stderr))
            if stream is not None and not stream.closed
        ]
        for reader in readers:
            reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return read.get("out", ""), read.get("err", "")


class Zygote:
    """A server process that has imported ``preload`` and forks a child per :meth:`popen`."""

    def __init__(self, preload: Sequence[str]) -> None:
        self._socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._lock = threading.Lock()
        self._server = subprocess.Popen(
            [sys.executable, __file__, str(theirs.fileno()), *preload],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        theirs.close()
        with self._socket.makefile("rb") as answer:
            if answer.readline() != b"ready\n":
                raise RuntimeError(f"the zygote could not import {list(preload)}")

    def popen(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stdin: int | None = None,
        stdout: int | None = PIPE,
        stderr: int | None = PIPE,
        text: bool = True,
    ) -> Child:
        """Starts ``[sys.executable, script, *args]`` or ``[sys.executable, "-m", module,
        *args]`` (only those forms) as a forked child.

        Streams given as ``PIPE`` are text pipes, a descriptor (an ``int`` from 0) is the
        child's as given, ``None`` is ``/dev/null``."""
        module = argv[1] == "-m"
        if not text or argv[0] != sys.executable or (argv[1].startswith("-") and not module):
            raise ValueError(f"the zygote runs a script or a module, in text mode: {argv}")
        theirs: list[int] = []
        pipes: dict[str, IO[str] | None] = {}
        with contextlib.ExitStack() as close:
            for name, mode in (("stdin", stdin), ("stdout", stdout), ("stderr", stderr)):
                pipes[name] = None
                if mode is not None and mode >= 0:
                    theirs.append(mode)  # the caller's, the caller closes it
                    continue
                if mode == PIPE:
                    read, write = os.pipe()
                    mine, child = (write, read) if name == "stdin" else (read, write)
                    pipes[name] = os.fdopen(mine, "w" if name == "stdin" else "r")
                else:
                    child = os.open(os.devnull, os.O_RDWR)
                theirs.append(child)
                close.callback(os.close, child)
            status, status_theirs = os.pipe()
            close.callback(os.close, status_theirs)
            request = {
                "argv": [str(a) for a in argv[1:]],
                "env": dict(os.environ if env is None else env),
                "cwd": cwd or os.getcwd(),
            }
            data = json.dumps(request).encode() + b"\n"
            with self._lock:
                socket.send_fds(self._socket, [data], [*theirs, status_theirs])
        return Child([str(a) for a in argv], status, pipes)

    def run(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        input: str | None = None,
        stdout: int | None = PIPE,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """As ``subprocess.run(argv, capture_output=True, text=True, check=False)``."""
        stdin = PIPE if input is not None else None
        child = self.popen(argv, env=env, stdin=stdin, stdout=stdout)
        try:
            out, err = child.communicate(input, timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        return subprocess.CompletedProcess(child.args, child.wait(), out, err)

    def close(self) -> None:
        self._socket.close()  # the server ends at the end of its requests
        self._server.wait(timeout=60)


def _serve(control: socket.socket) -> dict[str, Any] | None:
    """Forks a waiter per request, which forks the child; returns the request in the child."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters are reaped by the kernel
    buffer = b""
    while True:
        data, fds, _, _ = socket.recv_fds(control, 1 << 20, 4)
        if not data:
            return None
        buffer += data
        # one request per send, its descriptors with its first bytes
        while not buffer.endswith(b"\n"):
            more, extra, _, _ = socket.recv_fds(control, 1 << 20, 4)
            if not more:
                return None
            buffer, fds = buffer + more, fds + extra
        request, buffer = json.loads(buffer), b""
        if os.fork() == 0:  # the waiter
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            *stdio, status = fds
            pid = os.fork()
            if pid == 0:
                os.close(status)
                for target, fd in enumerate(stdio):
                    os.dup2(fd, target)
                    os.close(fd)
                return dict(request)
            for fd in stdio:
                os.close(fd)
            os.write(status, f"{pid}\n".encode())
            _, wait_status = os.waitpid(pid, 0)
            os.write(status, f"{os.waitstatus_to_exitcode(wait_status)}\n".encode())
            os._exit(0)
        for fd in fds:
            os.close(fd)


def _main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    for name in sys.argv[2:]:
        importlib.import_module(name)
    control.sendall(b"ready\n")
    request = _serve(control)
    if request is None:
        return
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if request["argv"][0] == "-m":  # as python -m: the working folder first on the path
        module, *args = request["argv"][1:]
        sys.path[0] = os.getcwd()
        sys.argv = [module, *args]  # runpy puts the module's file first
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    script = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    _main()
