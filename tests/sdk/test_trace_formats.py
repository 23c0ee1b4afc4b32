"""OpenAI-format and LangChain-serialized traces read as the same messages as ctxfs's own."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_to_dict,
)

from ctxfs import TraceError, parse_trace, read_trace

HISTORY: list[BaseMessage] = [
    SystemMessage("Be brief."),
    HumanMessage("What is in /a.txt?"),
    AIMessage(
        "Reading it.",
        tool_calls=[{"id": "c1", "name": "read_file", "args": {"file_path": "/a.txt"}}],
    ),
    ToolMessage("alpha\nbeta", tool_call_id="c1", name="read_file"),
    AIMessage("It says alpha and beta."),
]


def _shape(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    """What a replay depends on: type, text, calls and which call a result answers."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        calls = [(c["id"], c["name"], c["args"]) for c in getattr(m, "tool_calls", [])]
        # a result's tool name decides whether it is exempt from offloading and clearing
        name = m.name if isinstance(m, ToolMessage) else None
        out.append((m.type, m.content, calls, getattr(m, "tool_call_id", None), name))
    return out


def _lines(records: list[Any]) -> list[str]:
    return [json.dumps(r) for r in records]


def test_openai_format_reads_like_a_ctxfs_trace() -> None:
    records = convert_to_openai_messages(HISTORY)
    assert isinstance(records, list)
    assert "function" in records[2]["tool_calls"][0]  # really OpenAI's shape
    assert _shape(parse_trace(_lines(records))) == _shape(HISTORY)


def test_openai_content_parts_and_developer_role() -> None:
    records = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "What is "}, "in /a.txt?"]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"file_path": "/a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "alpha"},
    ]
    messages = parse_trace(_lines(records))
    assert [m.type for m in messages] == ["system", "human", "ai", "tool"]
    assert messages[1].content == "What is in /a.txt?"
    assert isinstance(messages[2], AIMessage)
    assert messages[2].tool_calls[0]["args"] == {"file_path": "/a.txt"}


def test_langchain_messages_to_dict_reads_like_a_ctxfs_trace() -> None:
    assert _shape(parse_trace(_lines(messages_to_dict(HISTORY)))) == _shape(HISTORY)


def test_langchain_dumpd_reads_like_a_ctxfs_trace() -> None:
    assert _shape(parse_trace(_lines([dumpd(m) for m in HISTORY]))) == _shape(HISTORY)


def test_a_file_holding_one_json_array(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(convert_to_openai_messages(HISTORY), indent=2))
    assert _shape(read_trace(path)) == _shape(HISTORY)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{not json"},
                    }
                ],
            },
            "tool_calls[0].function.arguments is not JSON",
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"arguments": "{}"}}],
            },
            "tool_calls[0] needs a name",
        ),
        ({"role": "user", "content": [{"type": "image_url", "image_url": {}}]}, "not text"),
        ({"type": "nonsense", "data": {}}, "not a LangChain message"),
    ],
)
def test_malformed_lines_name_the_line(record: dict[str, Any], message: str) -> None:
    with pytest.raises(TraceError, match=re.escape(message)) as info:
        parse_trace(['{"role": "user", "content": "hi"}', json.dumps(record)], source="x.jsonl")
    assert info.value.line == 2


def test_ids_reused_once_answered_pair_each_result_with_the_open_call() -> None:
    # some OpenAI-compatible servers number calls per response: call_0 again in every turn
    records: list[Any] = [{"role": "user", "content": "go"}]
    for n in range(3):
        call = {"id": "call_0", "type": "function", "function": {"name": f"t{n}", "arguments": ""}}
        records += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "content": f"result {n}"},
        ]
    messages = parse_trace(_lines(records))
    assert [(m.name, m.content) for m in messages if isinstance(m, ToolMessage)] == [
        ("t0", "result 0"),
        ("t1", "result 1"),
        ("t2", "result 2"),
    ]
    # an id still open is not reused
    with pytest.raises(TraceError, match=r"call_0.* still open") as info:
        parse_trace(_lines([records[0], records[1], records[1]]))
    assert info.value.line == 3


def test_streamed_chunks_read_as_the_messages_they_are() -> None:
    call = HISTORY[2]
    assert isinstance(call, AIMessage)
    chunk = AIMessageChunk(content="Reading it.", tool_calls=call.tool_calls)
    history = [*HISTORY[:2], chunk, *HISTORY[3:]]
    assert _shape(parse_trace(_lines(messages_to_dict(history))))[2] == _shape(HISTORY)[2]
    assert _shape(parse_trace(_lines([dumpd(m) for m in history])))[2] == _shape(HISTORY)[2]


def test_blocks_that_repeat_the_tool_calls_are_not_content() -> None:
    # Anthropic's models put each call in the content too, beside tool_calls
    call = HISTORY[2]
    assert isinstance(call, AIMessage)
    calls = call.tool_calls
    blocks: list[str | dict[str, Any]] = [
        {"type": "text", "text": "Reading it."},
        {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"file_path": "/a.txt"}},
    ]
    history = [*HISTORY[:2], AIMessage(blocks, tool_calls=calls), *HISTORY[3:]]
    assert _shape(parse_trace(_lines(messages_to_dict(history)))) == _shape(HISTORY)
    # OpenAI's refusal is the assistant's text
    refusal = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]}
    assert parse_trace(_lines([refusal]))[0].content == "I can't."
    # a block naming a call the message does not make is still refused
    stray = {"role": "assistant", "content": [{"type": "tool_use", "id": "zz", "name": "f"}]}
    with pytest.raises(TraceError, match="not text"):
        parse_trace(_lines([stray]))


def test_openai_responses_items_read_like_a_ctxfs_trace() -> None:
    # the Responses API's input items: messages, then calls and their outputs as items
    records: list[Any] = [
        {"type": "message", "role": "developer", "content": "Be brief."},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "What is in /a.txt?"}],
        },
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Reading it.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "c1",
            "name": "read_file",
            "arguments": '{"file_path": "/a.txt"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "alpha\nbeta"},
        {"role": "assistant", "content": "It says alpha and beta."},
    ]
    assert _shape(parse_trace(_lines(records))) == _shape(HISTORY)
    # parallel calls are items in a row: one assistant turn
    calls = [
        {"type": "function_call", "call_id": f"c{n}", "name": "ls", "arguments": "{}"}
        for n in range(2)
    ]
    outputs = [{"type": "function_call_output", "call_id": f"c{n}", "output": "x"} for n in (1, 0)]
    messages = parse_trace(_lines([{"role": "user", "content": "go"}, *calls, *outputs]))
    assert [m.type for m in messages] == ["human", "ai", "tool", "tool"]
    assert [c["id"] for c in messages[1].tool_calls] == ["c0", "c1"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["run.jsonl", "run.json"])
def test_a_file_that_starts_with_a_byte_order_mark(tmp_path: Path, name: str) -> None:
    # editors and PowerShell on Windows write UTF-8 with a BOM
    records = convert_to_openai_messages(HISTORY)
    assert isinstance(records, list)
    text = json.dumps(records) if name.endswith(".json") else "\n".join(_lines(records))
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert _shape(read_trace(path)) == _shape(HISTORY)
    # a byte that is not UTF-8 is still named by its place in the file
    path.write_bytes(b"\xef\xbb\xbf" + b'{"role": "user", "content": "ok"}\n\xe9')
    with pytest.raises(TraceError, match=r"byte 37\b") as info:
        read_trace(path)
    assert info.value.line == 2
