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
        out.append((m.type, m.content, calls, getattr(m, "tool_call_id", None)))
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
