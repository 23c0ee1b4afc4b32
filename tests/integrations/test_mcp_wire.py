"""Requests the MCP transport cannot read are answered for their id, never dropped: a client
whose request is dropped waits for its answer forever.

JSON the SDK's strict parser refuses (a lone surrogate, which JavaScript's ``JSON.stringify``
writes for half of a UTF-16 pair; a number of thousands of digits; deep nesting; a raw
control character) reaches the server as an exception; so does a line that is not JSON."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from ctxfs.integrations._mcp_wire import misshapen_call_answer, unreadable_answers


def _error_for(line: str) -> Exception:
    """What the stdio transport hands the server for ``line``."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:
        return exc
    raise AssertionError(f"the transport reads {line!r}")


def _call(arguments: str, method: str = "tools/call", name: str = "write_file") -> str:
    params = f'{{"name":"{name}","arguments":{arguments}}}' if method == "tools/call" else arguments
    return f'{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{params}}}\n'


def _wire(answers: list[types.JSONRPCMessage] | types.JSONRPCMessage | None) -> dict[str, Any]:
    """The one answer as the transport writes it (it must be writable: no lone surrogate)."""
    if isinstance(answers, list):
        (answers,) = answers
    assert answers is not None
    return json.loads(SessionMessage(answers).message.model_dump_json(by_alias=True))


def _tool_error(line: str) -> str:
    sent = _wire(unreadable_answers(_error_for(line)))
    assert sent["id"] == 7 and sent["result"]["isError"] is True
    (content,) = sent["result"]["content"]
    assert content["type"] == "text" and content["text"].startswith("Error: ")
    return str(content["text"])


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (r'{"path":"/a\ud800.txt","content":"x"}', "the argument path is not valid Unicode"),
        (r'{"path":"/a.txt","content":"a\udc00"}', "the argument content is not valid Unicode"),
        (r'{"path":"/a.txt","\ud800":1}', "a key of params.arguments is not valid Unicode"),
        (r'{"path":"/a.txt","edits":[{"oldText":"\udfff"}]}', "edits[0].oldText is not valid"),
        ('{"path":"/a.txt","offset":' + "9" * 5_000 + "}", "offset is a number of more than"),
        ('{"path":"/a.txt","x":' + "[" * 200 + "]" * 200 + "}", "202 levels deep"),
        ('{"path":"/a.txt","content":"a\x01b"}', "it is not valid JSON (Invalid JSON: control"),
    ],
)
def test_a_call_the_transport_cannot_read_is_a_tool_error(arguments: str, said: str) -> None:
    text = _tool_error(_call(arguments))
    assert text.startswith("Error: the call could not be read: ") and said in text, text
    if "Unicode" in said:
        assert "lone surrogate" in text and text.endswith("send the text without it")


def test_another_request_the_transport_cannot_read_is_a_json_rpc_error() -> None:
    line = _call(r'{"uri":"ctxfs:///a\ud800"}', method="resources/read")
    sent = _wire(unreadable_answers(_error_for(line)))
    assert sent["id"] == 7 and sent["error"]["code"] == -32600
    assert sent["error"]["message"].startswith(
        "Invalid request: it could not be read: params.uri is not valid Unicode"
    )


@pytest.mark.parametrize(
    "line",
    ["not json\n", '{"jsonrpc":"2.0","method":', '[{"id":7,"method":"ping"}, [[[['],
)
def test_a_line_whose_id_cannot_be_read_gets_the_parse_error(line: str) -> None:
    sent = _wire(unreadable_answers(_error_for(line)))
    assert sent["id"] is None and sent["error"]["code"] == -32700


def test_a_request_nested_deeper_than_any_parser_reads_is_answered_for_its_id() -> None:
    deep = "[" * 5_000 + "]" * 5_000
    assert _tool_error(_call(f'{{"a":"}}]\\"","b":{deep}}}')).startswith(
        "Error: the call could not be read: it is not valid JSON (Invalid JSON: recursion"
    )
    line = f'{{"jsonrpc":"2.0","params":{{"x":{deep}}},"id":"r-1","method":"ping"}}'
    sent = _wire(unreadable_answers(_error_for(line)))
    assert sent["id"] == "r-1" and sent["error"]["code"] == -32600
    cut = '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":'  # broken further on
    assert _wire(unreadable_answers(_error_for(cut)))["id"] == 7


def test_an_id_that_cannot_be_written_back_is_answered_as_no_id() -> None:
    for line in (
        r'{"jsonrpc":"2.0","id":"\ud800","method":"tools/call","params":{"name":"\ud800"}}',
        '{"jsonrpc":"2.0","params":{"x":' + "[" * 5_000 + "]" * 5_000 + r'},"id":"\udc00"}',
    ):
        sent = _wire(unreadable_answers(_error_for(line)))
        assert sent["id"] is None and "error" in sent


@pytest.mark.parametrize(
    "line",
    [
        r'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"r":"\ud800"}}',
        r'{"jsonrpc":"2.0","id":true,"method":"ping","params":{"r":"\ud800"}}',
        '{"jsonrpc":"2.0","id":true,"method":"ping","params":[1]}',
        '{"jsonrpc":"2.0","result":{},"error":{}}',
        '"just a string"',
    ],
)
def test_what_is_not_a_request_has_no_answer(line: str) -> None:
    assert unreadable_answers(_error_for(line)) == []
    assert unreadable_answers(ValueError("not from the transport")) == []


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"name": "grep", "arguments": [1, 2]}, "the arguments of 'grep' must be a JSON object"),
        ({"name": "grep", "arguments": "pattern=x"}, "named arguments, not a string"),
        ({"arguments": {}}, "the call must name its tool with a string (params.name)"),
        ({"name": 5}, "(params.name), not a number"),
    ],
)
def test_a_call_whose_arguments_are_not_an_object_is_a_tool_error(
    params: dict[str, Any], said: str
) -> None:
    request = types.JSONRPCRequest(jsonrpc="2.0", id="r", method="tools/call", params=params)
    sent = _wire(misshapen_call_answer(request))
    assert sent["id"] == "r" and sent["result"]["isError"] is True
    assert said in sent["result"]["content"][0]["text"]
    fine = {"name": "grep", "arguments": {"pattern": [1]}}  # the tool says what is wrong
    for message in (
        types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/call", params=fine),
        types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping", params={"name": 5}),
        types.JSONRPCNotification(jsonrpc="2.0", method="tools/call", params={"name": 5}),
    ):
        assert misshapen_call_answer(message) is None


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"ping","params":[1]}', "'params': Input should be"),
        ('{"jsonrpc":"1.0","id":7,"method":"ping"}', "'jsonrpc': Input should be '2.0'"),
        ('{"id":7,"method":"ping"}', "'jsonrpc': Field required"),
        ('{"jsonrpc":"2.0","id":7,"method":7}', "'method': Input should be a valid string"),
    ],
)
def test_a_request_that_is_not_json_rpc_gets_an_error_for_its_id(line: str, said: str) -> None:
    sent = _wire(unreadable_answers(_error_for(line)))
    assert sent["id"] == 7 and sent["error"]["code"] == -32600
    assert said in sent["error"]["message"], sent
    call = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":["grep",{}]}'
    assert _tool_error(call).startswith(
        "Error: the call could not be read: 'params': Input should be an object"
    )


@pytest.mark.parametrize("broken", ["", "\\ud800"])
def test_each_request_of_a_batch_is_answered(broken: str) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "grep"}}
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    line = json.dumps([call, ready, {"jsonrpc": "2.0", "id": "b", "method": "ping"}])
    line = line.replace('"grep"', f'"grep{broken}"')
    first, second = (_wire(a) for a in unreadable_answers(_error_for(line)))
    said = "this server reads one message per line, not a batch (a JSON array)"
    assert first["id"] == 1 and said in first["result"]["content"][0]["text"]
    assert second["id"] == "b" and said in second["error"]["message"]
