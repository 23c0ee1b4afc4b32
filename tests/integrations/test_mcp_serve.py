"""``ctxfs mcp serve`` as a real process: calls side by side, and a clean end when the client
leaves, however it leaves (closes the pipes, dies mid-call, or dies leaving them open).

A slow call is a ``grep`` whose pattern backtracks over long lines: it runs to the grep time
limit (5 s) and answers with a timeout error. No assertion here is about how long anything
takes; the order of the answers and the end of the process are what is checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from ctxfs import Workspace

SLOW_GREP = {"pattern": "(x+x+)+y", "output_mode": "content"}
SERVE = [sys.executable, "-m", "ctxfs", "mcp", "serve"]
HANG_GUARD = 60  # seconds: only so that a broken server fails the test instead of hanging it


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("/big.txt", ("x" * 3000 + "\n") * 300)
    workspace.write_text("/notes/plan.md", "# Plan\n")
    return tmp_path / "ws"


def _text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


@pytest.mark.slow
def test_a_listing_is_answered_while_two_slow_greps_run(folder: Path) -> None:
    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], str(folder)], env={"PATH": os.environ["PATH"]}
    )
    order: list[str] = []

    async def main() -> None:
        async with Client(params) as client:

            async def call(label: str, name: str, arguments: dict[str, Any]) -> None:
                result = await client.call_tool(name, arguments)
                order.append(label)
                if label == "ls":
                    assert _text(result) == "/big.txt\n/notes/"
                else:
                    assert result.is_error and "time limit" in _text(result)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "grep 1", "grep", SLOW_GREP)
                tg.start_soon(call, "grep 2", "grep", SLOW_GREP)
                await anyio.sleep(0.5)  # both greps are in flight
                tg.start_soon(call, "ls", "list_directory", {"path": "/"})

    anyio.run(main)
    assert order[0] == "ls" and sorted(order[1:]) == ["grep 1", "grep 2"]


# -- the client leaves ------------------------------------------------------------------------


def _message(method: str, params: dict[str, Any], number: int | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if number is not None:
        body["id"] = number
    return (json.dumps(body) + "\n").encode()


_CLIENT = {"name": "t", "version": "1"}
_HELLO = _message(
    "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": _CLIENT}, 1
)
_READY = _message("notifications/initialized", {})
_SLOW_CALL = _message("tools/call", {"name": "grep", "arguments": SLOW_GREP}, 2)


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie no one reaped has ended too)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in status


def _wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("how", ["closes its pipes", "is killed mid-call"])
def test_the_server_ends_cleanly_when_the_client_leaves_mid_call(folder: Path, how: str) -> None:
    server = subprocess.Popen(
        [*SERVE, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(_HELLO)
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1
    server.stdin.write(_READY + _SLOW_CALL)
    server.stdin.flush()
    time.sleep(0.5)  # the grep is running
    if how == "is killed mid-call":
        server.stdout.close()  # the answers have nowhere to go: the first write breaks
        listings = (
            _message("tools/call", {"name": "list_directory", "arguments": {}}, n)
            for n in range(3, 200)
        )
        with contextlib.suppress(BrokenPipeError):
            server.stdin.write(b"".join(listings))
            server.stdin.flush()
    with contextlib.suppress(BrokenPipeError):
        server.stdin.close()  # no more requests come
    status = server.wait(timeout=HANG_GUARD)
    assert server.stderr is not None
    server.stdout.close()
    with server.stderr:
        assert (status, server.stderr.read().decode()) == (0, "")


def test_an_orphaned_server_stops_its_work(folder: Path, tmp_path: Path) -> None:
    # A client starts the server and dies without closing the server's stdin (another process
    # still holds it): the server is re-parented, notices, and ends, slow call and all.
    into_server, from_test = os.pipe()
    into_test, from_server = os.pipe()
    client = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys\n"
            f"p = subprocess.Popen({[*SERVE, str(folder)]!r}, stdin={into_server}, "
            f"stdout={from_server}, pass_fds=({into_server}, {from_server}))\n"
            "print(p.pid, flush=True)\n"
            "sys.stdin.read()\n",  # lives until told to die
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        pass_fds=(into_server, from_server),
    )
    os.close(into_server)
    os.close(from_server)
    assert client.stdout is not None and client.stdin is not None
    pid = int(client.stdout.readline())
    with os.fdopen(from_test, "wb", buffering=0) as requests, os.fdopen(into_test, "rb") as answers:
        requests.write(_HELLO)
        assert json.loads(answers.readline())["id"] == 1
        requests.write(_READY + _SLOW_CALL)
        time.sleep(0.5)  # the grep is running
        client.kill()  # the client dies; the test still holds the server's stdin open
        client.wait()
        client.stdin.close()
        client.stdout.close()
        assert _wait_gone(pid), "the orphaned server is still running"


# -- requests the transport cannot read ---------------------------------------------------


def _exchange(argv: list[str], lines: list[bytes], count: int) -> dict[Any, dict[str, Any]]:
    """Runs ``ctxfs mcp serve`` with ``argv``, writes ``lines`` to it and reads ``count``
    answers; then closes its input and checks that it ends cleanly. The answers by id."""
    server = subprocess.Popen(
        [*SERVE, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    try:
        server.stdin.write(b"".join(lines))
        server.stdin.flush()
        answers = _answers(server.stdout, count)
        server.stdin.close()
        assert server.wait(timeout=HANG_GUARD) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for stream in (server.stdin, server.stdout, server.stderr):
            stream.close()
    return {answer.get("id"): answer for answer in answers}


def _answers(stream: IO[bytes], count: int) -> list[dict[str, Any]]:
    """The next ``count`` messages the server writes (the guard only keeps a silent server
    from hanging the test: a request it drops is never answered). Read from the pipe itself:
    a buffered ``readline`` may take two answers off the pipe and leave ``select`` waiting
    for the second."""
    pending = b""
    answers: list[dict[str, Any]] = []
    while len(answers) < count:
        if b"\n" not in pending:
            ready, _, _ = select.select([stream], [], [], HANG_GUARD)
            assert ready, "the server did not answer"
            chunk = os.read(stream.fileno(), 65_536)
            assert chunk, "the server closed its output"
            pending += chunk
            continue
        line, _, pending = pending.partition(b"\n")
        answers.append(dict(json.loads(line)))
    return answers


def test_every_request_gets_an_answer_and_the_server_keeps_serving(folder: Path) -> None:
    # A JavaScript client writes half of a UTF-16 pair as "\ud800"; the SDK's parser refuses
    # it, and a request it could not read used to be dropped: the client waited forever.
    lone = r'{"path":"/notes/plan.md","content":"a\ud800"}'
    lines = [
        _HELLO,
        _READY,
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":'
        + f'{{"name":"write_file","arguments":{lone}}}}}\n'.encode(),
        b"this is not JSON\n",
        _message("tools/call", {"name": "grep", "arguments": ["x"]}, 3),
        b'{"jsonrpc":"2.0","id":5,"method":"resources/read","params":["ctxfs:///big.txt"]}\n',
        _message("tools/call", {"name": "list_directory", "arguments": {"path": "/"}}, 4),
    ]
    by_id = _exchange([str(folder)], lines, 6)
    assert set(by_id) == {1, 2, None, 3, 5, 4}
    assert by_id[2]["result"]["isError"] is True
    assert by_id[2]["result"]["content"][0]["text"].startswith(
        "Error: the call could not be read: the argument content is not valid Unicode: it "
        "holds a lone surrogate ('\\ud800', half of a UTF-16 pair) at character 1"
    )
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[3]["result"]["content"][0]["text"] == (
        "Error: the arguments of 'grep' must be a JSON object of named arguments, not an array"
    )
    assert by_id[5]["error"]["code"] == -32600
    assert "'params': Input should be an object" in by_id[5]["error"]["message"]
    assert by_id[4]["result"]["content"][0]["text"] == "/big.txt\n/notes/"
    assert Workspace(folder).read_text("/notes/plan.md") == "# Plan\n"


def test_the_resource_read_limit_is_set_from_the_command_line(folder: Path) -> None:
    Workspace(folder).write_text("/notes/short.md", "short\n")
    lines = [
        _HELLO,
        _READY,
        _message("resources/read", {"uri": "ctxfs:///big.txt"}, 2),
        _message("resources/read", {"uri": "ctxfs:///notes/short.md"}, 3),
    ]
    by_id = _exchange([str(folder), "--max-resource-bytes", "100"], lines, 3)
    assert "over the 100-byte limit of a resource read" in by_id[2]["error"]["message"]
    assert by_id[3]["result"]["contents"][0]["text"] == "short\n"
