"""JSON ctxfs reads back: every bad document is one ``json.JSONDecodeError`` or a depth error,
so each reader's "not valid JSON" handling covers it (numbers too long to convert included)."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage

from ctxfs import ContextEngine, ContextPolicy, Workspace, pointer_of
from ctxfs._errors import MemoryFormatError
from ctxfs._json import loads_bounded
from ctxfs.memory import LongTermMemory
from ctxfs.tools import tool_functions

_digits = st.integers(min_value=4_301, max_value=20_000)
_sign = st.sampled_from(["", "-"])
_wrap = st.sampled_from(["{}", '{{"version": {}}}', "[1, {}]", '{{"a": [{{"b": {}}}]}}'])


@settings(max_examples=25, deadline=None)
@given(digits=_digits, sign=_sign, wrap=_wrap)
def test_a_number_too_long_to_convert_is_not_json(digits: int, sign: str, wrap: str) -> None:
    text = wrap.format(sign + "7" * digits)
    with pytest.raises(json.JSONDecodeError, match="a number too long to read"):
        loads_bounded(text)
    with pytest.raises(json.JSONDecodeError):
        loads_bounded(text.encode())


@settings(max_examples=20, deadline=None)
@given(st.recursive(st.none() | st.integers() | st.text(), st.lists, max_leaves=10))
def test_what_loads_reads_loads_bounded_reads_alike(value: object) -> None:
    text = json.dumps(value)
    assert loads_bounded(text) == json.loads(text)


def test_a_memory_file_with_a_5000_digit_number_is_a_format_error() -> None:
    """Regression: the number's ValueError escaped memory load (exit 70 in the CLI)."""
    workspace = Workspace("memory://json-long-number")
    memory = LongTermMemory(workspace, ("alice",))
    workspace.write_bytes(memory.file.path, b'{"revision": 1' + b"0" * 5000 + b"}")
    with pytest.raises(MemoryFormatError, match="a number too long to read") as caught:
        memory.load()
    assert "/memories/alice/memory.json" in str(caught.value)


_FILLER = '"' + "filler words " * 60 + '"'  # over any offload threshold below
hostile_json = st.one_of(
    st.integers(65, 5_000).map(lambda depth: '{"a": ' * depth + _FILLER + "}" * depth),
    st.integers(65, 5_000).map(lambda depth: "[" * depth + _FILLER + "]" * depth),
    st.integers(4_301, 8_000).map(lambda digits: '{"file_path": ' + "9" * digits + "}"),
)


@settings(max_examples=20, deadline=None)
@given(text=hostile_json)
@example(text="[" * 5_000 + "]" * 5_000)
def test_a_tool_call_with_hostile_json_arguments_is_an_error_answer(text: str) -> None:
    """Regression: ``invoke('[[[…')`` raised RecursionError into the agent loop."""
    read_file = {f.name: f for f in tool_functions(Workspace("memory://json-args"))}["read_file"]
    answer = read_file.invoke(text)
    assert answer.startswith("Error: the arguments of read_file are not valid JSON ("), answer


@settings(max_examples=10, deadline=None)
@given(text=hostile_json)
@example(text="[" * 5_000 + _FILLER + "]" * 5_000)
def test_a_tool_result_of_hostile_json_is_offloaded_whole(text: str) -> None:
    """Regression: a large tool result nested thousands deep raised RecursionError out of
    the offload (choosing the saved file's extension parsed it)."""
    workspace = Workspace("memory://json-result")
    policy = ContextPolicy(max_input_tokens=100_000, tool_results={"threshold": {"tokens": 100}})
    engine = ContextEngine(workspace, policy)
    result = ToolMessage(text, tool_call_id="c1", id="t")
    pointer = engine.offload_tool_result(result, thread_id="t")
    held = pointer_of(pointer)
    assert held is not None and held.path.startswith("/tool_results/t/c1.")
    assert workspace.read_text(held.path) == text
