"""JSON ctxfs reads back: every bad document is one ``json.JSONDecodeError`` or a depth error,
so each reader's "not valid JSON" handling covers it (numbers too long to convert included)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import Workspace
from ctxfs._errors import MemoryFormatError
from ctxfs._workspace._json import loads_bounded
from ctxfs.memory import LongTermMemory

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
