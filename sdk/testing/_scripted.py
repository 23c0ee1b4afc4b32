"""A scripted chat model and history builders, to test agents offline and deterministically.

- :class:`ScriptedChatModel`: a chat model that plays a script of replies (tool calls
  included), works with ``create_agent``, langgraph and ``bind_tools``, and finds its place in
  a conversation by the ids of its own earlier replies, so it keeps working after the context
  was compacted or the process was restarted from a checkpoint.
- History builders: :func:`tool_call`, :func:`tool_exchange` and :func:`long_history`.

Example:
    >>> from ctxfs.testing import ScriptedChatModel, tool_call
    >>> model = ScriptedChatModel(responses=[tool_call("ls", {"path": "/"}), "All done."])
    >>> model.invoke("list the workspace").tool_calls[0]["name"]
    'ls'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field, PrivateAttr, SkipValidation

__all__ = [
    "Reply",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "long_history",
    "tool_call",
    "tool_exchange",
]

Reply = AIMessage | str | Callable[[Sequence[BaseMessage]], AIMessage | str]
"""One scripted reply: a message, a text, or a function of the messages the model was sent."""


class ScriptExhaustedError(RuntimeError):
    """The scripted model was called after its last reply."""


def _no_messages() -> Iterator[AIMessage | str]:
    return iter(())


class ScriptedChatModel(GenericFakeChatModel):
    """A chat model that replies from a script: offline, deterministic, tool-calling.

    Each reply gets the id ``"<script_id>-<n>"`` (unless it carries its own id), and each tool
    call without an id gets ``"<script_id>-<n>-call<k>"``. Before replying, the model looks
    for the most recent of its own replies in the messages it was sent and plays the one after
    it. A conversation with no reply, tool result or summary in it starts at the first.
    Otherwise, with none of its replies there, it counts its own calls: after its replies were
    all summarized away it plays the reply after the last one it played, not the first again
    (a call sent exactly the messages of the previous one is a retry and gets the same reply
    again). So the same script resumes a conversation restored from a checkpoint (a new model
    finds its place by the ids), and a long run goes on through any number of summaries.

    A reply may be a function of the messages: use it to act on what a tool returned (e.g.
    read the file that a ``grep`` found).

    Attributes:
        responses: The script.
        script_id: Prefix of the reply ids (default ``"scripted"``).
        requests: Every list of messages the model was sent, in order (for assertions).
        request_tools: The tools the model was bound to at each of those calls (from
            ``bind_tools``), in the same order.
        request_settings: The model settings of each of those calls (the keyword arguments
            of ``bind_tools`` and of the call, e.g. ``prompt_cache_key``), in the same order.
    """

    responses: SkipValidation[list[Reply]]
    script_id: str = "scripted"
    messages: Iterator[AIMessage | str] = Field(default_factory=_no_messages, exclude=True)
    disable_streaming: bool = True
    requests: list[list[BaseMessage]] = Field(default_factory=list, exclude=True)
    request_tools: list[list[Any]] = Field(default_factory=list, exclude=True)
    request_settings: list[dict[str, Any]] = Field(default_factory=list, exclude=True)
    _cursor: int = PrivateAttr(default=0)
    _bound: list[Any] = PrivateAttr(default_factory=list)
    _bound_settings: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "ctxfs-scripted-chat-model"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Returns the model itself: the script already knows which tools it calls.

        The tools are remembered for :attr:`request_tools`, the settings for
        :attr:`request_settings`.
        """
        self._bound = list(tools)
        self._bound_settings = dict(kwargs)
        return self

    def _get_invocation_params(
        self, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """The call's parameters as a provider's model reports them to callbacks: with the
        bound tools as OpenAI schemas (``tools``), as ``bind_tools`` passes them there."""
        params = super()._get_invocation_params(stop=stop, **kwargs)
        if self._bound:
            from langchain_core.utils.function_calling import convert_to_openai_tool

            params["tools"] = [convert_to_openai_tool(tool) for tool in self._bound]
        return params

    def reply_id(self, index: int) -> str:
        """The id of reply ``index`` (its own id if the scripted message has one)."""
        reply = self.responses[index] if index < len(self.responses) else None
        if isinstance(reply, AIMessage) and reply.id:
            return reply.id
        return f"{self.script_id}-{index}"

    def next_index(self, messages: Sequence[BaseMessage]) -> int:
        """Which reply the model plays next when sent ``messages``."""
        ids = {self.reply_id(i): i for i in range(len(self.responses))}
        for message in reversed(messages):
            if isinstance(message, AIMessage) and message.id in ids:
                return ids[message.id] + 1
        if not any(_goes_on(message) for message in messages):
            return 0  # a new conversation
        if self.requests[-1:] == [list(messages)]:  # the same call again: a retry
            return self._cursor - 1
        return self._cursor

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        index = self.next_index(messages)
        self.requests.append(list(messages))
        self.request_tools.append(list(self._bound))
        self.request_settings.append({**self._bound_settings, **kwargs})
        if index >= len(self.responses):
            raise ScriptExhaustedError(
                f"the script has {len(self.responses)} replies and all were played; "
                "add replies or end the script with a reply that calls no tool"
            )
        self._cursor = index + 1
        reply = self.responses[index]
        if callable(reply):
            reply = reply(messages)
        message = _as_message(reply, self.reply_id(index))
        return ChatResult(generations=[ChatGeneration(message=message)])


def _goes_on(message: BaseMessage) -> bool:
    """Whether ``message`` shows a conversation under way: a model's reply, a tool's result,
    or a summary of earlier turns (ctxfs's, also behind a cache breakpoint, or LangChain's
    summarization middleware's)."""
    from ctxfs._summary._message import is_summary

    if isinstance(message, AIMessage | ToolMessage):
        return True
    if message.additional_kwargs.get("lc_source") == "summarization":
        return True
    return is_summary(message) or is_summary(_as_text(message))


def _as_text(message: BaseMessage) -> BaseMessage:
    """``message`` with a lone text block as its text: a summary sent with a prompt-cache
    breakpoint (``prompt_cache="anthropic"`` puts its text in a block with ``cache_control``)
    is the same summary."""
    content = message.content
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        block = content[0]
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return message.model_copy(update={"content": block["text"]})
    return message


def _as_message(reply: AIMessage | str, reply_id: str) -> AIMessage:
    if isinstance(reply, str):
        return AIMessage(content=reply, id=reply_id)
    calls = [
        {**call, "id": call["id"] or f"{reply_id}-call{k}"}
        for k, call in enumerate(reply.tool_calls)
    ]
    return reply.model_copy(update={"id": reply.id or reply_id, "tool_calls": calls})


def tool_call(
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    call_id: str | None = None,
    content: str = "",
) -> AIMessage:
    """An AI message calling one tool (the scripted model fills in a missing ``call_id``).

    Args:
        name: The tool to call.
        args: Its arguments.
        call_id: The tool call id; ``None`` lets :class:`ScriptedChatModel` number it.
        content: Text the model says alongside the call.
    """
    call = {"name": name, "args": dict(args or {}), "id": call_id, "type": "tool_call"}
    return AIMessage(content=content, tool_calls=[call])


def tool_exchange(
    name: str,
    args: Mapping[str, Any],
    result: str,
    *,
    call_id: str,
    message_id: str | None = None,
) -> list[BaseMessage]:
    """An AI message calling one tool and the tool's result, with ids set.

    Args:
        name: The tool.
        args: Its arguments.
        result: What the tool returned.
        call_id: The tool call id (also names the result message).
        message_id: Id of the AI message; defaults to ``"ai-<call_id>"``.
    """
    call = tool_call(name, args, call_id=call_id)
    call.id = message_id or f"ai-{call_id}"
    return [call, ToolMessage(content=result, tool_call_id=call_id, name=name, id=f"tm-{call_id}")]


def long_history(turns: int, *, result_chars: int = 400, first_id: int = 0) -> list[BaseMessage]:
    """A deterministic conversation: a user request, then ``turns`` tool calls and results.

    Results are ``result_chars`` characters of log-like text; every message has an id, so the
    list can be put in a langgraph state as is. ``2 * turns + 1`` messages in all.

    Args:
        turns: How many tool calls.
        result_chars: Size of each result.
        first_id: Offset for the numbering of ids (to extend a history without clashes).
    """
    messages: list[BaseMessage] = [
        HumanMessage(content="Investigate the failures in /logs.", id=f"h-{first_id}")
    ]
    for n in range(first_id, first_id + turns):
        line = f"{n:06d} INFO worker-{n % 7} processed batch {n} in {n % 97} ms\n"
        text = (line * (result_chars // len(line) + 1))[:result_chars]
        args = {"pattern": f"batch {n}", "path": "/logs", "output_mode": "content"}
        messages.extend(tool_exchange("grep", args, text, call_id=f"call-{n}"))
    return messages
