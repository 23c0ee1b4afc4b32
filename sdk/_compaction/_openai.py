"""OpenAI-style message dicts in and out of the engine, with ctxfs's metadata kept aside.

A dict in OpenAI's chat format has no room for what ctxfs records on a message (the
``additional_kwargs["ctxfs"]`` of a summary or a pointer), and providers refuse unknown keys,
so the dicts ctxfs returns are plain. What makes the round trip lossless is kept here
instead: for each message ctxfs returned that carries metadata, the exact dict it returned,
keyed by that dict's canonical JSON. When the same dict comes back, it is the same message,
and the original (with its metadata) is used. A summary from an earlier process is found in
the thread's archive instead: the segment records the summary message it ended with, and a
dict whose text is exactly that summary's text is that summary.

Messages ctxfs did not change go back as the very dicts the caller gave, so the bytes a
provider caches stay the same.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    InvalidToolCall,
    ToolCall,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.messages.tool import tool_call
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call

from ctxfs._archive._transcripts import TranscriptArchive
from ctxfs._compaction._request import Tool
from ctxfs._errors import WorkspaceError
from ctxfs._events import CompactionResult
from ctxfs._json import loads_bounded
from ctxfs._messages import message_text
from ctxfs._summary._message import SUMMARY_TAG
from ctxfs._workspace._workspace import Workspace

__all__ = ["OpenAICompaction", "OpenAIMessages", "OpenAIMethods"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAICompaction:
    """What :meth:`ContextEngine.compact_openai` returns.

    Attributes:
        messages: The new history as OpenAI-style dicts, to send and to keep. Messages the
            compaction did not change are the dicts given, unchanged.
        result: The compaction itself: events, tokens before and after, the target.
    """

    messages: list[dict[str, Any]]
    result: CompactionResult


def _key(message: Mapping[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=repr)


# The roles of OpenAI's chat format, and the keys of its tool message (strict endpoints
# refuse any other key on a tool result, such as the "name" LangChain writes)
_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_TOOL_KEYS = ("role", "tool_call_id", "content")


def _check(messages: Sequence[Mapping[str, Any]]) -> None:
    for number, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise TypeError(
                f"message {number} is not an OpenAI-style message dict with a 'role' "
                f"(got {type(message).__name__}); for LangChain messages use compact()"
            )


class OpenAIMessages:
    """The dicts one engine returned, per thread, and how to turn them back into messages.

    One per engine; a thread's entries are replaced on each call, so it holds at most the
    marked messages of each thread's latest history.
    """

    def __init__(self) -> None:
        self._known: dict[str, dict[str, BaseMessage]] = {}

    def inbound(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        thread_id: str,
        last_summary: Callable[[], BaseMessage | None],
    ) -> tuple[list[BaseMessage], dict[int, Mapping[str, Any]]]:
        """The messages the dicts stand for, and which dict each came from (by ``id()``).

        Raises:
            TypeError: An item is not a message dict.
            ValueError: A dict LangChain cannot read as a message.
        """
        _check(messages)
        known = self._known.get(thread_id, {})
        summary: list[BaseMessage | None] = []  # looked up once, when needed
        converted: list[BaseMessage] = []
        origin: dict[int, Mapping[str, Any]] = {}
        for item in messages:
            message = known.get(_key(item))
            if message is None:
                message = _message(item, len(converted))
                if isinstance(message, HumanMessage) and message_text(message).startswith(
                    SUMMARY_TAG
                ):
                    if not summary:
                        summary.append(last_summary())
                    found = summary[0]
                    if found is not None and message_text(found) == message_text(message):
                        message = found
            converted.append(message)
            origin[id(message)] = item
        return converted, origin

    def outbound(
        self,
        messages: Sequence[BaseMessage],
        origin: Mapping[int, Mapping[str, Any]],
        *,
        thread_id: str,
    ) -> list[dict[str, Any]]:
        """The dicts for ``messages``: the caller's own where unchanged, new ones elsewhere."""
        known: dict[str, BaseMessage] = {}
        out: list[dict[str, Any]] = []
        for message in messages:
            given = origin.get(id(message))
            as_dict = dict(given) if given is not None else _to_dict(message)
            if "ctxfs" in message.additional_kwargs:
                known[_key(as_dict)] = message
            out.append(given if isinstance(given, dict) else as_dict)
        self._known[thread_id] = known
        return out

    def remember(self, message: BaseMessage, *, thread_id: str) -> dict[str, Any]:
        """The dict for one new message (an offloaded tool result), kept for the next call."""
        as_dict = _to_dict(message)
        if "ctxfs" in message.additional_kwargs:
            self._known.setdefault(thread_id, {})[_key(as_dict)] = message
        return as_dict


def _message(item: Mapping[str, Any], number: int) -> BaseMessage:
    """The message one dict stands for; tool calls whose arguments are not a JSON object
    (models do write such) are kept as invalid calls, their arguments as written.

    Raises:
        ValueError: The dict is not a chat message, saying which one and why.
    """
    role = item["role"]
    if role not in _ROLES:
        raise ValueError(f"message {number} has role {role!r}; the roles are {', '.join(_ROLES)}")
    fields = dict(item)
    if role == "tool":
        call_id = fields.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise ValueError(
                f"message {number} is a tool result without its tool_call_id (a non-empty string)"
            )
    raw_calls = fields.pop("tool_calls", None) if role == "assistant" else None
    if role == "assistant":
        fields.setdefault("content", None)  # optional beside tool calls
    try:
        message = convert_to_messages([fields])[0]
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"message {number} ({role}) is not a chat message: {error}") from error
    if raw_calls is None:
        return message
    calls, invalid = _tool_calls(raw_calls, number)
    # The calls as written, in order, kept with the message: a call whose arguments are not
    # a JSON object has no other home, and when an argument of a sibling call is offloaded
    # the copy is updated with it (see ctxfs._messages.replace_tool_arg).
    kwargs = {**message.additional_kwargs, "tool_calls": [_raw_call(c) for c in raw_calls]}
    update = {"tool_calls": calls, "invalid_tool_calls": invalid, "additional_kwargs": kwargs}
    return message.model_copy(update=update)


def _raw_call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call["function"]
    return {**call, "function": {**function, "arguments": function.get("arguments") or ""}}


def _tool_calls(raw: object, number: int) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    if not isinstance(raw, list):
        raise ValueError(f"message {number}: tool_calls must be a list, got {type(raw).__name__}")
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for call in raw:
        function = call.get("function") if isinstance(call, Mapping) else None
        if (
            not isinstance(call, Mapping)
            or not isinstance(function, Mapping)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str | None)
        ):
            raise ValueError(
                f"message {number}: a tool call is "
                f'{{"id": ..., "type": "function", "function": {{"name": ..., "arguments": ...}}}}'
                f", got {call!r:.200}"
            )
        raw_call = {**call, "function": {"arguments": None, **function}}
        arguments = raw_call["function"]["arguments"]
        try:
            # bounded: arguments nested thousands deep or with a 5,000-digit number are a
            # model's bad call, kept verbatim as invalid, not a RecursionError out of here
            args = loads_bounded(arguments, strict=False, unique_keys=False) if arguments else {}
        except ValueError as error:
            invalid.append(make_invalid_tool_call(raw_call, f"the arguments are not JSON: {error}"))
            continue
        if not isinstance(args, dict):
            invalid.append(make_invalid_tool_call(raw_call, "the arguments are not a JSON object"))
        else:
            calls.append(tool_call(name=function["name"], args=args, id=raw_call.get("id")))
    return calls, invalid


def _to_dict(message: BaseMessage) -> dict[str, Any]:
    converted = convert_to_openai_messages(message)
    assert isinstance(converted, dict)
    if converted.get("role") == "tool":
        return {key: converted[key] for key in _TOOL_KEYS if key in converted}
    if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
        converted["tool_calls"] = _calls_of(message, converted.get("tool_calls") or [])
    return converted


def _calls_of(message: AIMessage, converted: list[Any]) -> list[Any]:
    """Every call of an assistant message as OpenAI writes it, none left out.

    The calls as they came in (their order, their arguments as written; an offloaded
    argument's pointer is written into them when it replaces the argument) while the message
    has exactly those calls; otherwise LangChain's conversion of the valid calls followed by
    the invalid ones with their arguments as written (LangChain leaves those out, orphaning
    their results).
    """
    raw = message.additional_kwargs.get("tool_calls")
    if _same_calls(message, raw):
        assert isinstance(raw, list)
        return [dict(call) for call in raw]
    invalid = [
        {
            "id": call.get("id"),
            "type": "function",
            "function": {"name": call.get("name") or "", "arguments": call.get("args") or ""},
        }
        for call in message.invalid_tool_calls
    ]
    return [*converted, *invalid]


def _same_calls(message: AIMessage, raw: object) -> bool:
    """Whether ``raw`` holds exactly the message's calls, each once, by id."""
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        return False
    ids = [c.get("id") for c in (*message.tool_calls, *message.invalid_tool_calls)]
    given = [c.get("id") for c in raw]
    return (
        len(set(ids)) == len(ids)
        and None not in ids
        and sorted(map(str, ids)) == sorted(map(str, given))
    )


class OpenAIMethods:
    """The engine's methods for a history kept as OpenAI-style dicts (a mixin of
    :class:`~ctxfs.ContextEngine`): the dicts go in and out here, the work is the engine's."""

    if TYPE_CHECKING:
        _lock: threading.RLock
        _workspace: Workspace
        _clock: Callable[[], datetime] | None
        _openai: OpenAIMessages  # one per engine, made by its __init__

        def compact(
            self,
            messages: Sequence[BaseMessage],
            *,
            thread_id: str,
            system: BaseMessage | str | None = None,
            tools: Sequence[Tool] = (),
            model: BaseChatModel | None = None,
            force: bool = False,
            plan: Sequence[Mapping[str, Any]] | str | None = None,
        ) -> CompactionResult: ...

        async def acompact(
            self,
            messages: Sequence[BaseMessage],
            *,
            thread_id: str,
            system: BaseMessage | str | None = None,
            tools: Sequence[Tool] = (),
            model: BaseChatModel | None = None,
            force: bool = False,
            plan: Sequence[Mapping[str, Any]] | str | None = None,
        ) -> CompactionResult: ...

        def offload_tool_result(
            self, message: ToolMessage, *, thread_id: str, tool: object | None = None
        ) -> ToolMessage: ...

    def compact_openai(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        force: bool = False,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
    ) -> OpenAICompaction:
        """:meth:`compact` for a history kept as OpenAI-style dicts: dicts in, dicts out.

        Keep the returned dicts as the history and send them as they are: they hold no key a
        provider would refuse. A summary or pointer ctxfs returned is recognised when it comes
        back (its metadata is kept by the engine, and a summary is also found in the thread's
        archive by a new process), so the next compaction continues the transcript chain
        instead of summarizing the summary. Dicts the compaction leaves alone are returned as
        the same objects, byte for byte what the provider cached.

        Args:
            messages: The history, ``{"role": ..., "content": ...}`` dicts (``tool_calls``
                and ``tool_call_id`` as OpenAI writes them).
            thread_id: The conversation; names the folders written.
            system: A system message sent apart from ``messages``, if any.
            tools: The tools the model is sent (schema dicts as sent, functions, tools).
            model: The chat model, for its window when the policy has none.
            force: As for :meth:`compact`.
            plan: The live plan (a todo list or text), put back after a summary from this
                state, never from the summary's text: as for :meth:`compact`.

        Raises:
            TypeError: An item is not a message dict.
            ValueError: A dict that is not a chat message, or no window is known.
        """
        converted, origin = self._openai.inbound(
            messages, thread_id=thread_id, last_summary=lambda: self._last_summary(thread_id)
        )
        result = self.compact(
            converted,
            thread_id=thread_id,
            system=system,
            tools=tools,
            model=model,
            force=force,
            plan=plan,
        )
        dicts = self._openai.outbound(result.messages, origin, thread_id=thread_id)
        return OpenAICompaction(messages=dicts, result=result)

    async def acompact_openai(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        thread_id: str,
        system: BaseMessage | str | None = None,
        tools: Sequence[Tool] = (),
        model: BaseChatModel | None = None,
        force: bool = False,
        plan: Sequence[Mapping[str, Any]] | str | None = None,
    ) -> OpenAICompaction:
        """Async twin of :meth:`compact_openai`."""
        converted, origin = await asyncio.to_thread(
            self._openai.inbound,
            messages,
            thread_id=thread_id,
            last_summary=lambda: self._last_summary(thread_id),
        )
        result = await self.acompact(
            converted,
            thread_id=thread_id,
            system=system,
            tools=tools,
            model=model,
            force=force,
            plan=plan,
        )
        dicts = self._openai.outbound(result.messages, origin, thread_id=thread_id)
        return OpenAICompaction(messages=dicts, result=result)

    def offload_openai_result(
        self,
        message: Mapping[str, Any],
        *,
        thread_id: str,
        name: str | None = None,
        tool: object | None = None,
    ) -> dict[str, Any]:
        """:meth:`offload_tool_result` for an OpenAI-style ``{"role": "tool"}`` dict.

        Args:
            message: The tool result: ``role`` ``"tool"``, ``tool_call_id`` and ``content``.
            thread_id: The conversation it belongs to.
            name: The tool's name (OpenAI's dict does not carry it; else the dict's own
                ``name``, as some clients write it); the saved file is named after it.
            tool: The tool that returned it, if known: ctxfs's own recovery tools (a
                :class:`~ctxfs.ToolFunction` from :func:`~ctxfs.tools.tool_functions`) are
                never offloaded, a tool of another making is whatever its name.

        Returns:
            The dict to append to the history: ``message`` itself when it stays inline,
            else a pointer the next :meth:`compact_openai` recognises.

        Raises:
            TypeError: ``message`` is not a tool result dict.
        """
        if not isinstance(message, Mapping) or message.get("role") != "tool":
            raise TypeError('offload_openai_result takes a {"role": "tool", ...} message dict')
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise TypeError("a tool result dict needs its tool_call_id (a non-empty string)")
        if name is None and isinstance(message.get("name"), str):
            name = message["name"]
        result = ToolMessage(message.get("content") or "", tool_call_id=call_id, name=name)
        offloaded = self.offload_tool_result(result, thread_id=thread_id, tool=tool)
        if offloaded is result:
            return message if isinstance(message, dict) else dict(message)
        return self._openai.remember(offloaded, thread_id=thread_id)

    def _last_summary(self, thread_id: str) -> BaseMessage | None:
        """The summary the thread's latest archived segment ended with, if it can be read."""
        with self._lock:
            archive = TranscriptArchive(self._workspace, thread_id, clock=self._clock)
            try:
                segments = archive.recent()
            except WorkspaceError:
                return None  # the summary is then read as text: archived again, not lost
            return archive.summary_of(segments[-1]) if segments else None
