"""Helpers shared by the offload tests: history strategies, pointer resolution, snapshots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxfs import ContextEngine, ContextPolicy, Workspace, resolve_pointers
from ctxfs._messages import offloadable_text

# -- plain helpers --------------------------------------------------------------------------


def snapshot(ws: Workspace, path: str = "/") -> dict[str, bytes]:
    """Every file under ``path`` with its bytes."""
    files: dict[str, bytes] = {}
    for info in ws.ls(path):
        if info.is_dir:
            files.update(snapshot(ws, info.path))
        else:
            files[info.path] = ws.read_bytes(info.path)
    return files


def resolve(messages: Sequence[BaseMessage], ws: Workspace) -> list[BaseMessage]:
    """Replaces every ctxfs pointer with the content it stands for, read back from ``ws``."""
    return resolve_pointers(messages, ws)


def comparable(message: BaseMessage) -> dict[str, Any]:
    """What must survive offloading: type, ids, text, tool calls and tool-message fields."""
    data: dict[str, Any] = {"type": message.type, "id": message.id}
    text = offloadable_text(message.content)
    data["content"] = text if text is not None else message.content
    if isinstance(message, AIMessage):
        data["tool_calls"] = message.tool_calls
    if isinstance(message, ToolMessage):
        data.update(
            tool_call_id=message.tool_call_id,
            name=message.name,
            status=message.status,
            artifact=message.artifact,
        )
    return data


def run_pipeline(
    engine: ContextEngine, messages: Sequence[BaseMessage], thread_id: str
) -> list[BaseMessage]:
    """Offloads each tool result as it would arrive, then old tool inputs."""
    step1 = [
        engine.offload_tool_result(m, thread_id=thread_id) if isinstance(m, ToolMessage) else m
        for m in messages
    ]
    return engine.offload_tool_inputs(step1, thread_id=thread_id).messages


# -- strategies -----------------------------------------------------------------------------

_CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
_UNICODE = st.characters(codec="utf-8", exclude_categories=("Cs",))

call_ids = st.one_of(
    st.just(""),
    st.sampled_from(["call_1", "call_2", "call/1", "call 1"]),  # duplicates, equal if sanitized
    st.text(_UNICODE, max_size=8),
    st.text(st.sampled_from("ab/"), min_size=300, max_size=320),  # very long
)

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(_UNICODE, max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=20,
)


@st.composite
def _big_text(draw: st.DrawFn) -> str:
    line = draw(st.text(_UNICODE | _CJK, min_size=1, max_size=40))
    count = draw(st.integers(min_value=5, max_value=60))
    sep = draw(st.sampled_from(["\n", "\r\n", ""]))
    return sep.join(f"{line} {i}" for i in range(count)) + draw(st.sampled_from(["", "\n"]))


outputs = st.one_of(
    st.just(""),
    st.text(_UNICODE, max_size=30),
    st.text(_CJK, min_size=1, max_size=200),
    _json_values.map(lambda v: json.dumps(v, ensure_ascii=False, indent=1)),
    st.just("<|endoftext|> special-token text"),
    _big_text(),
)

tool_names = st.sampled_from(["bash", "write_file", "edit_file", "read_file", "grep", "fetch"])


@st.composite
def _call(draw: st.DrawFn, call_id: str) -> dict[str, Any]:
    name = draw(tool_names)
    if name == "write_file":
        args: dict[str, Any] = {"file_path": "/src/a.py", "content": draw(outputs)}
    elif name == "edit_file":
        args = {"file_path": "/src/b.py", "old_string": draw(outputs), "new_string": draw(outputs)}
    else:
        args = {"command": draw(st.text(_UNICODE, max_size=20))}
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


@st.composite
def histories(draw: st.DrawFn) -> list[BaseMessage]:
    """A system prompt, then turns of AI messages with parallel calls and shuffled results."""
    messages: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    for turn in range(draw(st.integers(min_value=1, max_value=5))):
        messages.append(HumanMessage(draw(st.text(_UNICODE, max_size=20)), id=f"h{turn}"))
        ids = draw(st.lists(call_ids, min_size=1, max_size=3))
        calls = [draw(_call(call_id)) for call_id in ids]
        messages.append(AIMessage(content="", tool_calls=calls, id=f"a{turn}"))
        order = draw(st.permutations(range(len(calls))))
        for k in order:
            content: str | list[str | dict[Any, Any]] = draw(outputs)
            if draw(st.booleans()) and content:
                content = [{"type": "text", "text": content}]
            messages.append(
                ToolMessage(
                    content=content,
                    tool_call_id=calls[k]["id"],
                    name=calls[k]["name"],
                    id=f"t{turn}_{k}",
                    status=draw(st.sampled_from(["success", "error"])),
                    artifact=draw(st.none() | st.just({"exit_code": 0})),
                )
            )
    return messages


@st.composite
def policies(draw: st.DrawFn) -> ContextPolicy:
    """Random settings with small thresholds so that offloads really happen."""
    return ContextPolicy(
        max_input_tokens=draw(st.integers(min_value=200, max_value=5_000)),
        tool_results={
            "threshold": {"tokens": draw(st.integers(min_value=1, max_value=150))},
            "preview_lines": draw(st.integers(min_value=0, max_value=4)),
            "preview_line_chars": draw(st.integers(min_value=1, max_value=30)),
        },
        tool_inputs={
            "trigger": draw(
                st.sampled_from([{"tokens": 1}, {"fraction": 0.01}, {"fraction": 1.0}])
            ),
            "keep_messages": draw(st.integers(min_value=0, max_value=6)),
            "min_chars": draw(st.integers(min_value=1, max_value=60)),
        },
    )


thread_ids = st.one_of(st.just(""), st.just("thread-1"), st.text(_UNICODE | _CJK, max_size=12))
