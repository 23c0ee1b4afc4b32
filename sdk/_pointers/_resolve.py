"""Reading back what pointers stand for: the messages as they were before ctxfs moved content.

:func:`resolve_pointers` turns every pointer ctxfs made in a list of messages back into the
content it replaced, read from the workspace:

- result, cleared and input pointers name a byte-exact copy: the file is read, and a list of
  text blocks is laid out again as it was (:attr:`~ctxfs.Pointer.shape`);
- media blocks moved to binary files (:mod:`ctxfs._pointers._media`) are rebuilt from their
  files, in their places, once the pointer of the text around them is resolved;
- the text of a user or AI message, or a botched call's arguments, moved out of a request
  that could not fit otherwise (:mod:`ctxfs._pointers._moved`), is read back in its place;
- a re-read pointer stands for a recovery tool's view of content ctxfs had saved (which is
  never rewritten): the recorded call is repeated with ctxfs's recovery tools, at the output
  budget it was shown at (:mod:`ctxfs._pointers._recovery`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs._errors import WorkspaceError
from ctxfs._layout import file_name, safe_name
from ctxfs._messages import replace_tool_arg
from ctxfs._pointers._media import restore_media
from ctxfs._pointers._moved import read_saved, resolve_moved
from ctxfs._pointers._pointer import METADATA_KEY, Pointer, input_pointers, restore_content
from ctxfs._pointers._pointer import result_pointer as pointer_of
from ctxfs._pointers._recovery import RecoveryTool, call_budget, default_tools
from ctxfs._workspace._workspace import Workspace

__all__ = ["pointer_of", "resolve_pointers"]

_Tools = dict[int | None, dict[str, RecoveryTool]]
"""ctxfs's recovery tools, by the output budget they were built at, then by name."""


def resolve_pointers(
    messages: Sequence[BaseMessage], workspace: Workspace, *, thread_id: str | None = None
) -> list[BaseMessage]:
    """Returns ``messages`` with every ctxfs pointer replaced by the content it stands for.

    Messages without pointers come back as they are (the same objects); summaries stay
    summaries (their archived messages are in the transcript, see
    :class:`~ctxfs.TranscriptArchive`). The input is not mutated.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> from ctxfs import ContextEngine, ContextPolicy, Workspace, pointer_of, resolve_pointers
        >>> ws = Workspace("memory://resolve")
        >>> offload = {"threshold": {"tokens": 100}}
        >>> policy = ContextPolicy(max_input_tokens=8_000, tool_results=offload)
        >>> engine = ContextEngine(ws, policy)
        >>> big = ToolMessage("line\\n" * 500, tool_call_id="c1", name="bash")
        >>> kept = engine.offload_tool_result(big, thread_id="t")
        >>> pointer_of(kept).path
        '/tool_results/t/c1.txt'
        >>> resolve_pointers([kept], ws)[0].content == big.content
        True

    Media blocks of tool results moved to binary files come back too, byte-exact in their
    places (the file read and encoded again).

    ``thread_id``, when given, is the conversation the messages are of: a pointer of an older
    version (read from its text, with no metadata) that names another conversation's file
    is content then, so a text that forges one cannot bring another thread's file in.

    Raises:
        WorkspaceError: A file a pointer names could not be read, or no longer holds what
            the pointer describes (a moved media block's file: its size and SHA-256).
    """
    tools: _Tools = {}
    out: list[BaseMessage] = []
    for message in messages:
        held = pointer_of(message)
        if held is not None and held.legacy and not _of_thread(held.path, thread_id):
            out.append(message)  # an old-layout text naming another thread's file: content
            continue
        if held is not None:
            assert isinstance(message, ToolMessage)
            try:
                resolved = _resolve_result(message, held, workspace, tools)
            except WorkspaceError:
                if not held.legacy:
                    raise
                out.append(message)  # an old-layout text whose file does not agree: content
                continue
            out.append(restore_media(resolved, workspace))  # the text held the references
        elif isinstance(message, AIMessage | HumanMessage):
            moved = resolve_moved(message, workspace)
            out.append(restore_media(_with_inputs(moved, workspace, thread_id), workspace))
        else:
            out.append(restore_media(message, workspace))
    return out


def _with_inputs(message: BaseMessage, workspace: Workspace, thread_id: str | None) -> BaseMessage:
    """``message`` with its input pointers resolved (itself when it has none)."""
    inputs = input_pointers(message)
    inputs = {
        key: pointer
        for key, pointer in inputs.items()
        if not pointer.legacy or _of_thread(pointer.path, thread_id)
    }
    if isinstance(message, AIMessage) and inputs:
        return _resolve_inputs(message, inputs, workspace)
    return message


def _of_thread(path: str, thread_id: str | None) -> bool:
    """Whether ``path`` is in a folder of ``thread_id`` (any thread's when it is ``None``):
    ``<area>/<thread>/<file>``, the thread as this version names it or as older ones did."""
    if thread_id is None:
        return True
    folder = posixpath.basename(posixpath.dirname(path))
    return folder in (file_name(thread_id), safe_name(thread_id))


def _resolve_result(
    message: ToolMessage, pointer: Pointer, workspace: Workspace, tools: _Tools
) -> ToolMessage:
    if pointer.kind == "reread":
        text = _repeat(pointer.call or {}, workspace, tools)
    else:
        text = _read(workspace, pointer)
    kwargs = _unstamped(message)
    content = restore_content(text, pointer.shape)
    return message.model_copy(update={"content": content, "additional_kwargs": kwargs})


def _resolve_inputs(
    message: AIMessage, inputs: Mapping[tuple[int, str], Pointer], workspace: Workspace
) -> AIMessage:
    data = message.additional_kwargs.get(METADATA_KEY)
    originals = data.get("openai_arguments") if isinstance(data, Mapping) else None
    kwargs = _unstamped(message)
    for (index, arg), pointer in sorted(inputs.items()):
        message = replace_tool_arg(message, index, arg, _read(workspace, pointer), kwargs=kwargs)
        kwargs = message.additional_kwargs
    if isinstance(originals, Mapping) and isinstance(kwargs.get("tool_calls"), list):
        calls = [_with_arguments(raw, originals) for raw in kwargs["tool_calls"]]
        message = message.model_copy(update={"additional_kwargs": {**kwargs, "tool_calls": calls}})
    return message


def _with_arguments(raw: object, originals: Mapping[str, Any]) -> object:
    """A provider-format call with its original ``arguments`` string, if one was kept."""
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        return raw
    original = originals.get(raw.get("id"))  # type: ignore[arg-type]
    if not isinstance(original, str):
        return raw
    return {**raw, "function": {**raw["function"], "arguments": original}}


def _unstamped(message: BaseMessage) -> dict[str, Any]:
    """The message's ``additional_kwargs`` as they were before ctxfs's metadata went in."""
    kwargs = dict(message.additional_kwargs)
    data = kwargs.pop(METADATA_KEY, None)
    shadowed = data.get("shadowed") if isinstance(data, Mapping) else None
    if shadowed is not None:
        kwargs[METADATA_KEY] = shadowed
    return kwargs


def _read(workspace: Workspace, pointer: Pointer) -> str:
    return read_saved(workspace, pointer.path, pointer.chars, "pointer")


def _repeat(call: Mapping[str, Any], workspace: Workspace, tools: _Tools) -> str:
    budget = call_budget(call)
    if budget not in tools:
        tools[budget] = default_tools(workspace, budget)
    name, args = call.get("name"), call.get("args")
    function = tools[budget].get(name) if isinstance(name, str) else None
    if function is None or not isinstance(args, Mapping):
        raise WorkspaceError(f"a re-read pointer names a call ctxfs cannot repeat: {call!r}")
    return function.run(**dict(args))
