"""Requests the transport could not read, answered instead of dropped.

The MCP SDK's transports parse each line strictly: a line that is not JSON it can take (a
lone surrogate such as ``"\\ud800"``, which JavaScript's ``JSON.stringify`` writes for half
of a UTF-16 pair; a number of thousands of digits; arrays nested hundreds deep) or not a
JSON-RPC message (``"params"`` an array, ``"jsonrpc": "1.0"``, a batch of several) reaches
the server as an exception, and the server drops it. The client, whose request got no
answer, would wait for it forever. :class:`AnsweringStream` sits between the transport and
the server and answers each such request for its id: a ``tools/call`` with a tool result
with ``isError`` set (the model reads what to send instead), any other request with a
JSON-RPC error. The id is read from the top level of the line even when what is nested is
broken or deeper than any parser here reads; a line whose id cannot be read at all gets
JSON-RPC's parse error with a null id. Notifications and responses have nothing to answer
and are dropped.

A ``tools/call`` whose arguments are not an object (or whose tool name is not a string) is
answered here too, with a tool error that says so: the SDK would answer "Invalid request
parameters" and nothing more.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from ctxfs._json import brackets
from ctxfs._workspace._quote import quote

if TYPE_CHECKING:
    from types import TracebackType

    import mcp_types
    from mcp.shared.message import SessionMessage

__all__ = ["AnsweringStream", "misshapen_call_answer", "unreadable_answers"]

_PARSE_ERROR: Final = -32700
_INVALID_REQUEST: Final = -32600
_MOST_DIGITS: Final = 4_300
"""Python's own limit on converting a string of digits to an int."""


class _TooLarge:
    """A number of more digits than :data:`_MOST_DIGITS` (kept out of ``int``)."""


def unreadable_answers(error: Exception) -> list[mcp_types.JSONRPCMessage]:
    """The answers to a line the transport could not read: one per request in it.

    Args:
        error: What the transport raised reading the line (pydantic's validation error of
            the JSON-RPC message, which holds the line or the message it parsed).

    Returns:
        For each request: a tool result with ``isError`` set for ``tools/call``, else a
        JSON-RPC error; JSON-RPC's parse error (id null) for a line whose id cannot be
        read; nothing for a notification or a response, nor for an error that holds neither
        the line nor the message.
    """
    import mcp_types as types

    found = _line(error)
    if found is not None:
        line, reason = found
        try:
            message = json.loads(line, parse_int=_integer, strict=False)
        except (ValueError, RecursionError):
            # too deep for any parser here: its id is read from the top level alone
            members = _members(line)
            if _answer(members, "") is not None:
                message, problem = members, f"it is not valid JSON ({reason})"
                return [a] if (a := _answer(message, problem)) is not None else []
            return [
                types.JSONRPCError(
                    jsonrpc="2.0",
                    id=None,
                    error=types.ErrorData(
                        code=_PARSE_ERROR,
                        message="Parse error: a message is not JSON this server can read "
                        "(or it is nested too deeply); send each message as one line of JSON",
                    ),
                )
            ]
        problem = _problem(message) or f"it is not valid JSON ({reason})"
    else:
        message, problem = _parsed(error), _schema_problem(error)
    if isinstance(message, list):  # a batch: older protocol versions allowed them
        problem = "this server reads one message per line, not a batch (a JSON array)"
        return [a for a in (_answer(item, problem) for item in message) if a is not None]
    return [a] if (a := _answer(message, problem)) is not None else []


def _members(line: str) -> dict[str, object]:
    """The members of the object ``line`` holds whose values are not objects or arrays
    (``id``, ``method``), read without parsing what is nested in the others: the line may
    nest deeper than any parser here reads, or be broken further on."""
    decode = json.JSONDecoder(strict=False).raw_decode
    found: dict[str, object] = {}
    at = _space(line, 0)
    if line[at : at + 1] != "{":
        return found
    at += 1
    try:
        while line[(at := _space(line, at)) : at + 1] == '"':
            key, at = decode(line, at)
            at = _space(line, at)
            if line[at : at + 1] != ":":
                break
            at = _space(line, at + 1)
            if line[at : at + 1] in ("{", "["):
                at = _past_nested(line, at)
            else:
                found[key], at = decode(line, at)
            at = _space(line, at)
            if line[at : at + 1] != ",":
                break
            at += 1
    except (ValueError, RecursionError):
        pass  # what was read before the break stands
    return found


def _writable(answer: mcp_types.JSONRPCMessage) -> bool:
    try:
        answer.model_dump_json(by_alias=True, exclude_unset=True)
    except ValueError:  # pydantic's serialization error is one
        return False
    return True


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _space(line: str, at: int) -> int:
    while line[at : at + 1] in (" ", "\t", "\n", "\r") and at < len(line):
        at += 1
    return at


def _past_nested(line: str, at: int) -> int:
    """The index just past the object or array that starts at ``at``."""
    for index, depth in brackets(line, at):
        if depth == 0:
            return index + 1
    raise ValueError("an object or array that does not end")


def _answer(message: object, problem: str) -> mcp_types.JSONRPCMessage | None:
    """The answer to ``message`` if it is a request (it has an id): a tool error for a
    ``tools/call``, a JSON-RPC error for any other method."""
    import mcp_types as types

    request_id = message.get("id") if isinstance(message, dict) else None
    method = message.get("method") if isinstance(message, dict) else None
    if not isinstance(request_id, int | str) or isinstance(request_id, bool):
        return None  # a notification, a response, or no JSON-RPC message at all
    if isinstance(request_id, str) and not _encodes(request_id):
        request_id = None  # an id that cannot be written back is no id to answer for
    if not isinstance(method, str):
        method = None
    if method == "tools/call" and request_id is not None:
        if problem.startswith("params.arguments."):
            problem = "the argument " + problem.removeprefix("params.arguments.")
        return _tool_error(request_id, f"the call could not be read: {problem}")
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(
            code=_INVALID_REQUEST, message=f"Invalid request: it could not be read: {problem}"
        ),
    )


def _parsed(error: Exception) -> object:
    """The message (or batch) a validation error of valid JSON was raised for: the input of
    an error about the message as a whole (a missing field, or not an object at all)."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return None
    for detail in error.errors(include_url=False):
        found = detail.get("input")
        if (
            len(detail["loc"]) <= 2
            and isinstance(found, dict | list)
            and detail["type"]
            in (
                "missing",
                "model_type",
            )
        ):
            return found
    return None


def _schema_problem(error: Exception) -> str:
    """What a JSON-RPC request that is valid JSON gets wrong, as the request's model says."""
    from pydantic import ValidationError

    said = []
    if isinstance(error, ValidationError):
        for detail in error.errors(include_url=False):
            if detail["loc"][:1] == ("JSONRPCRequest",) and len(detail["loc"]) > 1:
                where = ".".join(str(part) for part in detail["loc"][1:])
                said.append(f"{quote(where)}: {detail['msg']}")
    return "; ".join(said) or "it is not a JSON-RPC request"


def misshapen_call_answer(message: object) -> mcp_types.JSONRPCMessage | None:
    """A tool error for a ``tools/call`` whose tool name is not a string or whose arguments
    are not an object (the SDK would answer "Invalid request parameters" and no more), or
    ``None`` for any other message."""
    import mcp_types as types

    if not isinstance(message, types.JSONRPCRequest) or message.method != "tools/call":
        return None
    params = message.params or {}
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str):
        problem = "the call must name its tool with a string (params.name)"
        if "name" in params:
            problem += f", not {_json_type(name)}"
    elif arguments is not None and not isinstance(arguments, dict):
        problem = (
            f"the arguments of {name[:100]!r} must be a JSON object of named arguments, not "
            f"{_json_type(arguments)}"
        )
    else:
        return None
    return _tool_error(message.id, problem)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    return names.get(type(value), "an array" if isinstance(value, list) else "an object")


def _tool_error(request_id: int | str, problem: str) -> mcp_types.JSONRPCResponse:
    import mcp_types as types

    result = types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Error: {problem}")], is_error=True
    )
    dumped = result.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=dumped)


def _line(error: Exception) -> tuple[str, str] | None:
    """The line a pydantic validation error was raised for and why, when it holds them."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return None
    for detail in error.errors(include_url=False):
        found = detail.get("input")
        if detail["type"] == "json_invalid" and isinstance(found, str | bytes):
            line = found.decode("utf-8", "replace") if isinstance(found, bytes) else found
            return line, detail["msg"]
    return None


def _integer(digits: str) -> int | _TooLarge:
    return _TooLarge() if len(digits.lstrip("-")) > _MOST_DIGITS else int(digits)


def _problem(message: object) -> str | None:
    """What makes a request that parsed as JSON unreadable, said so that it can be fixed."""
    for where, value in _values(message, ""):
        if isinstance(value, _TooLarge):
            return f"{where or 'a value'} is a number of more than {_MOST_DIGITS:,} digits"
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = value[exc.start : exc.end]
                return (
                    f"{where or 'a value'} is not valid Unicode: it holds a lone surrogate "
                    f"({quote(bad)}, half of a UTF-16 pair) at character {exc.start}; send "
                    "the text without it"
                )
    depth = _depth(message)
    if depth > _DEEP:
        return f"it nests objects and arrays {depth} levels deep; send flatter arguments"
    return None


_DEEP: Final = 150
"""A depth no ordinary request reaches, under the transport's limit (about 200 levels)."""


def _values(node: object, where: str) -> Iterator[tuple[str, object]]:
    """Every key and value under ``node`` with where it is (``params.arguments.path``),
    iteratively: the request may nest deeper than Python's recursion limit allows."""
    stack: list[tuple[str, object]] = [(where, node)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in reversed(value.items()):
                yield f"a key of {path or 'the request'}", key
                stack.append((_shown(f"{path}.{key}" if path else key), item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in reversed(list(enumerate(value))))
        else:
            yield path, value


def _shown(path: str) -> str:
    """``path`` with what cannot be shown (a lone surrogate in a key) escaped."""
    return path.encode("utf-8", "backslashreplace").decode("utf-8")


def _depth(node: object) -> int:
    deepest = 0
    stack: list[tuple[int, object]] = [(0, node)]
    while stack:
        level, value = stack.pop()
        deepest = max(deepest, level)
        if isinstance(value, dict):
            stack.extend((level + 1, item) for item in value.values())
        elif isinstance(value, list):
            stack.extend((level + 1, item) for item in value)
    return deepest


class AnsweringStream:
    """The server's read stream: what the transport read, passed on; a request it could not
    read, answered on ``write`` (see :func:`unreadable_answers`) and not passed on.

    Args:
        inner: The transport's read stream (messages, and exceptions for unreadable lines).
        write: The transport's write stream, where the answers go.
    """

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> object:
        """The sender's context of the last item, as the transport's stream gives it."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next message the server is to handle."""
        import anyio
        from mcp.shared.message import SessionMessage

        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            if isinstance(item, Exception):
                answers = unreadable_answers(item)
            else:
                answers = [a] if (a := misshapen_call_answer(item.message)) else []
            if not answers:
                return item  # a message for the server (an exception: it logs it)
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                for answer in answers:
                    if _writable(answer):  # what the transport cannot write would end it
                        await self._write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        """Closes the transport's read stream."""
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()
