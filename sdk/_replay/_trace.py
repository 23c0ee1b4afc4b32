"""Recorded agent runs (traces): read a JSONL file into langchain messages, checking each line.

A *trace* is a JSONL file, one message per line, in conversation order::

    {"role": "system" | "user" | "assistant" | "tool", "content": "...",
     "tool_calls": [{"id": "...", "name": "...", "args": {...}}],   # assistant only
     "tool_call_id": "...", "name": "..."}                          # tool only

Two other shapes are read as well, line by line (they may be mixed): OpenAI's chat format
(``tool_calls`` as ``{"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}``,
``content`` as a string, ``null`` or a list of text parts, ``developer`` for ``system``; the
Responses API's ``function_call`` and ``function_call_output`` items too) and
LangChain's serialized messages (``messages_to_dict``'s ``{"type", "data"}`` and ``dumpd``'s
``{"lc": 1, "type": "constructor", ...}``). A file holding one JSON array of such messages is
read too: its messages are numbered as lines are.

A malformed line raises :class:`~ctxfs._errors.TraceError` naming the file and the line.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
    messages_from_dict,
)

from ctxfs._errors import TraceError
from ctxfs._json import JsonDepthError, loads_bounded

__all__ = ["ROLES", "parse_trace", "read_trace"]

ROLES = ("system", "user", "assistant", "tool")
"""The roles a trace line may have."""

_TRACE_DEPTH = 256
"""The deepest JSON nesting read from a trace (a message nests under 10, its arguments more)."""

_DUMPED: dict[str, type[BaseMessage]] = {
    kind.__name__: kind
    for kind in (
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        SystemMessageChunk,
        HumanMessageChunk,
        AIMessageChunk,
        ToolMessageChunk,
    )
}
"""The message classes a ``dumpd`` line may construct (nothing else is instantiated)."""

_ALIASES = {
    "developer": "system",
    "human": "user",
    "ai": "assistant",
    "SystemMessageChunk": "system",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
    "ToolMessageChunk": "tool",
}
"""Other names of those roles (OpenAI's ``developer``, LangChain's message types, streamed
chunks included)."""

_RESPONSES_ITEMS = ("function_call", "function_call_output", "reasoning")
"""Input items of OpenAI's Responses API that are not messages."""

_CALL_BLOCKS = ("tool_use", "tool_call")
"""Content blocks that repeat one of the message's tool calls (Anthropic's, LangChain's)."""


def read_trace(path: str | os.PathLike[str]) -> list[BaseMessage]:
    """Reads a trace file into langchain messages (see :func:`parse_trace`).

    Raises:
        TraceError: The file cannot be read, is not UTF-8, or a line is malformed; the
            message names the file and the line.
    """
    source = os.fspath(path)
    try:
        data = Path(source).read_bytes()
    except FileNotFoundError:
        raise TraceError("no such file", source=source) from None
    except IsADirectoryError:
        raise TraceError("is a folder, not a trace file", source=source) from None
    except OSError as exc:
        raise TraceError(f"cannot read it ({exc.strerror or exc})", source=source) from None
    # a byte order mark, as Windows tools write, is not text
    body = data.removeprefix(codecs.BOM_UTF8)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        where = exc.start + len(data) - len(body)
        raise TraceError(
            f"not valid UTF-8 (byte {where}); traces are UTF-8 JSON lines",
            source=source,
            line=line,
        ) from None
    if text.lstrip().startswith("["):  # one JSON array of messages
        try:
            items = loads_bounded(text, max_depth=_TRACE_DEPTH, unique_keys=False)
        except json.JSONDecodeError as exc:
            raise TraceError(
                f"not valid JSON: {exc.msg} (column {exc.colno})", source=source, line=exc.lineno
            ) from None
        if not isinstance(items, list):  # pragma: no cover - "[" starts a list
            raise TraceError("expected a JSON array of messages", source=source)
        return parse_trace([json.dumps(item) for item in items], source=source)
    # Lines end at "\n" only: a JSON string may hold other line separators (U+2028...).
    return parse_trace(text.split("\n"), source=source)


def parse_trace(lines: Iterable[str], *, source: str = "<trace>") -> list[BaseMessage]:
    """Turns trace lines into langchain messages, checking each one.

    Blank lines are skipped. Message ids are ``m<n>``, ``n`` the 0-based line index, so a
    replay names the same files every time. Checked: each line is a JSON object with a known
    role and string content; tool calls have an id, a name and an object of arguments; ids
    are unique; every tool result answers an earlier tool call, once. A trace may end with
    calls that have no result (a final ``submit``, or a run cut off). A call id may be used
    again once its call is answered (some servers number the calls of each response from 0);
    a result answers the open call with its id and, without a ``name``, takes that call's.

    Args:
        lines: The lines, without or with their ``\\n``.
        source: The name used in error messages (the file path).

    Raises:
        TraceError: A line is malformed, or there are no messages; names the line.
    """
    parser = _TraceParser(source)
    for index, line in enumerate(lines):
        if line.strip():
            parser.add(index, line)
    if not parser.messages:
        raise TraceError("the trace holds no messages (one JSON object per line)", source=source)
    return parser.messages


class _TraceParser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.messages: list[BaseMessage] = []
        self.open: dict[str, tuple[int, str]] = {}  # unanswered call id -> (line, tool name)
        self.answered: dict[str, int] = {}  # answered call id -> line of its latest result

    def fail(self, line: int, message: str) -> TraceError:
        return TraceError(message, source=self.source, line=line)

    def add(self, index: int, raw: str) -> None:
        line = index + 1
        try:
            record = loads_bounded(raw, max_depth=_TRACE_DEPTH, unique_keys=False)
        except JsonDepthError:
            raise self.fail(line, "JSON nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            raise self.fail(line, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(record, dict):
            raise self.fail(line, f"expected a JSON object (one per message), got {_kind(record)}")
        if "role" not in record and record.get("type") in _RESPONSES_ITEMS:
            self._add_item(index, record)
            return
        if "role" not in record and "type" in record:
            record = self._from_langchain(line, record)
        role = record.get("role")
        role = _ALIASES.get(role, role) if isinstance(role, str) else role
        if role not in ROLES:
            raise self.fail(line, f"unknown role {role!r}; expected one of: {', '.join(ROLES)}")
        if role != "assistant" and record.get("tool_calls"):
            raise self.fail(line, f"only assistant messages have tool_calls, not {role}")
        calls = self._tool_calls(line, record.get("tool_calls")) if role == "assistant" else []
        content = self._content(line, record.get("content"), {call["id"] for call in calls})
        mid = f"m{index}"
        if role == "system":
            self.messages.append(SystemMessage(content, id=mid))
        elif role == "user":
            self.messages.append(HumanMessage(content, id=mid))
        elif role == "assistant":
            self.messages.append(AIMessage(content, tool_calls=calls, id=mid))
        else:
            self.messages.append(self._tool_result(line, record, content, mid))

    def _add_item(self, index: int, item: Mapping[str, Any]) -> None:
        """An item of OpenAI's Responses API: a call, its output, or reasoning (skipped: it
        holds no text a replay can count). The calls of one turn are items in a row, after
        its text if any: they join that assistant message."""
        line, kind = index + 1, item["type"]
        if kind == "reasoning":
            return
        if kind == "function_call_output":
            output = item.get("output")
            record = {"tool_call_id": item.get("call_id"), "content": output}
            content = self._content(line, output, set())
            self.messages.append(self._tool_result(line, record, content, f"m{index}"))
            return
        function = {"name": item.get("name"), "arguments": item.get("arguments")}
        call = {"id": item.get("call_id"), "type": "function", "function": function}
        [parsed] = self._tool_calls(line, [call])
        last = self.messages[-1] if self.messages else None
        if isinstance(last, AIMessage):
            calls = [*last.tool_calls, parsed]
            self.messages[-1] = AIMessage(last.content, tool_calls=calls, id=last.id)
        else:
            self.messages.append(AIMessage("", tool_calls=[parsed], id=f"m{index}"))

    def _tool_calls(self, line: int, raw: object) -> list[dict[str, Any]]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise self.fail(line, f"tool_calls must be a list, got {_kind(raw)}")
        calls = []
        for n, call in enumerate(raw):
            where = f"tool_calls[{n}]"
            if not isinstance(call, dict):
                raise self.fail(line, f"{where} must be an object, got {_kind(call)}")
            if isinstance(call.get("function"), dict):  # OpenAI's shape
                call = self._from_openai_call(line, where, call)
            call_id, name, args = call.get("id"), call.get("name"), call.get("args")
            if not isinstance(call_id, str) or not call_id:
                raise self.fail(line, f"{where} needs an id (a non-empty string)")
            if not isinstance(name, str) or not name:
                raise self.fail(line, f"{where} needs a name (a non-empty string)")
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise self.fail(line, f"{where}.args must be a JSON object, got {_kind(args)}")
            if call_id in self.open:
                raise self.fail(
                    line,
                    f"tool call id {call_id!r} is still open: the call on line "
                    f"{self.open[call_id][0]} has no result yet",
                )
            self.open[call_id] = (line, name)
            calls.append({"name": name, "args": args, "id": call_id})
        return calls

    def _content(self, line: int, content: object, call_ids: set[str]) -> str:
        """A message's text: a string, nothing, or a list of text parts (joined); blocks
        that repeat one of the message's tool calls (``call_ids``) are left out."""
        if content is None:
            return ""
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = []
            for n, part in enumerate(content):
                if isinstance(part, str):
                    texts.append(part)
                elif isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif isinstance(part, dict) and isinstance(part.get("refusal"), str):
                    texts.append(part["refusal"])  # OpenAI's refusal part
                elif (
                    isinstance(part, dict)
                    and part.get("type") in _CALL_BLOCKS
                    and part.get("id") in call_ids
                ):
                    continue
                else:
                    kind = part.get("type") if isinstance(part, dict) else _kind(part)
                    raise self.fail(
                        line, f"content[{n}] is not text ({kind!r}); a trace holds text only"
                    )
            return "".join(texts)
        raise self.fail(line, f"content must be a string, got {_kind(content)}")

    def _from_openai_call(self, line: int, where: str, call: Mapping[str, Any]) -> dict[str, Any]:
        function = call["function"]
        arguments = function.get("arguments")
        args: object = {}
        if isinstance(arguments, str) and arguments.strip():
            try:
                args = loads_bounded(arguments, max_depth=_TRACE_DEPTH, unique_keys=False)
            except json.JSONDecodeError as exc:
                raise self.fail(
                    line, f"{where}.function.arguments is not JSON: {exc.msg}"
                ) from None
        elif isinstance(arguments, dict):
            args = arguments
        elif arguments not in (None, ""):
            raise self.fail(
                line, f"{where}.function.arguments must be a JSON string, got {_kind(arguments)}"
            )
        return {"id": call.get("id"), "name": function.get("name"), "args": args}

    def _from_langchain(self, line: int, record: Mapping[str, Any]) -> dict[str, Any]:
        """A LangChain-serialized message as a trace record."""
        try:
            if record.get("lc") == 1:  # dumpd(): a constructor of a message class
                path, kwargs = record.get("id"), record.get("kwargs")
                kind = _DUMPED.get(path[-1]) if isinstance(path, list) and path else None
                if kind is None or not isinstance(kwargs, dict):
                    raise ValueError(f"not a message constructor: {path!r}")
                message = kind(**kwargs)
            else:
                message = messages_from_dict([dict(record)])[0]
        except Exception as exc:  # whatever LangChain raises: say which line
            raise self.fail(
                line, f"not a LangChain message ({type(exc).__name__}: {exc})"
            ) from None
        if not isinstance(message, BaseMessage):
            raise self.fail(line, f"not a LangChain message: {type(message).__name__}")
        out: dict[str, Any] = {"role": message.type, "content": message.content}
        if isinstance(message, AIMessage) and message.tool_calls:
            out["tool_calls"] = [dict(call) for call in message.tool_calls]
        if isinstance(message, ToolMessage):
            out["tool_call_id"] = message.tool_call_id
            out["name"] = message.name
        return out

    def _tool_result(
        self, line: int, record: Mapping[str, Any], content: str, mid: str
    ) -> ToolMessage:
        call_id, name = record.get("tool_call_id"), record.get("name")
        if not isinstance(call_id, str) or not call_id:
            raise self.fail(line, "a tool result needs tool_call_id (the id of its tool call)")
        if call_id not in self.open:
            if call_id in self.answered:
                raise self.fail(
                    line, f"call {call_id!r} was already answered on line {self.answered[call_id]}"
                )
            raise self.fail(
                line,
                f"tool result for call {call_id!r} has no earlier assistant tool call with that id",
            )
        if name is not None and not isinstance(name, str):
            raise self.fail(line, f"name must be a string, got {_kind(name)}")
        _, called = self.open.pop(call_id)
        self.answered[call_id] = line
        name = called if name is None else name
        return ToolMessage(content, tool_call_id=call_id, name=name, id=mid)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")
