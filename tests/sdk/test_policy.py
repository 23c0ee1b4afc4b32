"""ContextPolicy: defaults, thresholds, and every validation message."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ctxfs._policy._settings import (
    DEFAULT_EXEMPT_TOOLS,
    ContextPolicy,
    Threshold,
    ToolInputOffload,
    ToolResultOffload,
)


def test_defaults() -> None:
    policy = ContextPolicy(max_input_tokens=200_000)
    assert policy.tool_results.threshold == Threshold(tokens=20_000)
    assert policy.tool_results.preview_lines == 10
    assert policy.tool_results.preview_line_chars == 200
    # ctxfs's recovery tools are exempt by identity, not by these names
    assert policy.tool_results.exempt_tools == frozenset()
    assert policy.clearing.recovery_tools == DEFAULT_EXEMPT_TOOLS
    assert policy.tool_inputs.trigger is None  # from the clearing trigger
    assert policy.tool_inputs.keep_messages == 10
    assert policy.tool_inputs.min_chars == 500
    assert policy.tool_inputs.args == {}  # every string argument of every tool
    assert policy.result_threshold_tokens == 12_500  # a sixteenth of the window
    # One compaction at the high-water mark (80 % of the request budget) frees down to the
    # low-water mark (35 %): inputs and results move in it together, whether clearing is on
    # or off; between compactions they move together from the clearing trigger (10 % of the
    # window) when the batch is worth its cache write. The summarization trigger (85 % of
    # the window) holds the high-water mark when it is lower.
    assert (policy.high_water, policy.low_water) == (
        Threshold(fraction=0.8),
        Threshold(fraction=0.35),
    )
    assert policy.request_limit_tokens == 195_904
    assert policy.high_water_tokens == 156_723
    assert policy.clearing_trigger_tokens == policy.input_trigger_tokens == 20_000
    assert policy.low_water_tokens == 68_566
    off = ContextPolicy(max_input_tokens=200_000, clearing={"enabled": False})
    assert off.input_trigger_tokens == 156_723
    held = ContextPolicy(max_input_tokens=200_000, summarization={"trigger": {"fraction": 0.5}})
    assert (held.high_water_tokens, held.low_water_tokens) == (100_000, 68_566 * 100_000 // 156_723)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"high_water": {"fraction": 0.5}, "low_water": {"fraction": 0.5}}, "must be below"),
        ({"high_water": {"tokens": 900}, "low_water": {"tokens": 1_000}}, "must be below"),
        ({"max_input_tokens": 10_000, "low_water": {"tokens": 9_000}}, "must be below"),
        ({"high_water": {"fraction": 90}}, "write fraction=0.9"),
        ({"low_water": {}}, "set tokens"),
        ({"low_watermark": {"fraction": 0.5}}, "did you mean 'low_water'"),
    ],
)
def test_invalid_water_marks_say_what_to_write(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ContextPolicy.model_validate(settings)


def test_fraction_and_absolute_thresholds_resolve() -> None:
    assert Threshold(tokens=5_000).resolve(100_000) == 5_000
    assert Threshold(fraction=0.5).resolve(100_000) == 50_000
    assert Threshold(fraction=0.001).resolve(10) == 1  # never 0
    policy = ContextPolicy(
        max_input_tokens=100_000,
        tool_results={"threshold": {"fraction": 0.1}},
        tool_inputs=ToolInputOffload(trigger=Threshold(tokens=60_000)),
        clearing={"enabled": False},
    )
    assert policy.result_threshold_tokens == 10_000
    assert policy.input_trigger_tokens == 60_000


def test_defaults_scale_down_for_small_windows() -> None:
    # the result threshold: 20,000 tokens, at most a sixteenth of the window, not below
    # 2,000 tokens unless that is more than a quarter of the window
    assert ContextPolicy(max_input_tokens=4_000).result_threshold_tokens == 1_000
    assert ContextPolicy(max_input_tokens=8_000).result_threshold_tokens == 2_000
    assert ContextPolicy(max_input_tokens=12_000).result_threshold_tokens == 2_000
    assert ContextPolicy(max_input_tokens=64_000).result_threshold_tokens == 4_000
    assert ContextPolicy(max_input_tokens=200_000).result_threshold_tokens == 12_500
    assert ContextPolicy(max_input_tokens=1_000_000).result_threshold_tokens == 20_000
    explicit = ContextPolicy(max_input_tokens=12_000, tool_results={"threshold": {"tokens": 9_000}})
    assert explicit.result_threshold_tokens == 9_000
    # clearing keeps the last 4 results, within the last quarter of the window
    small = ContextPolicy(max_input_tokens=12_000)
    assert (small.clearing_keep.messages, small.clearing_keep.tokens) == (4, 3_000)
    own = ContextPolicy(max_input_tokens=12_000, clearing={"keep": {"results": 8}})
    assert (own.clearing_keep.messages, own.clearing_keep.tokens) == (8, None)
    # the answer's room: a tenth of the window, at most 4,096 tokens
    assert small.output_reserve_tokens == 1_200 and small.request_limit_tokens == 10_800
    assert ContextPolicy(max_input_tokens=200_000).output_reserve_tokens == 4_096
    assert ContextPolicy(max_input_tokens=200_000).tool_output_tokens == 40_000


def test_the_window_may_come_from_the_model_later() -> None:
    policy = ContextPolicy()
    with pytest.raises(ValueError, match=r"set ContextPolicy\(max_input_tokens=\.\.\.\)"):
        _ = policy.window
    assert policy.with_window(16_000).result_threshold_tokens == 2_000


def test_a_reserve_as_large_as_the_window_is_refused() -> None:
    with pytest.raises(ValidationError, match="leaves no room for the request"):
        ContextPolicy(max_input_tokens=4_000, reserve_output_tokens=4_000)


def test_settings_are_frozen_and_keyword_only() -> None:
    policy = ContextPolicy(max_input_tokens=1_000)
    with pytest.raises(ValidationError, match="frozen"):
        policy.max_input_tokens = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        ContextPolicy(1_000)  # type: ignore[misc]


def test_lists_become_immutable_collections() -> None:
    settings = ToolResultOffload(exempt_tools=["read_file"])  # type: ignore[arg-type]
    assert settings.exempt_tools == frozenset({"read_file"})
    inputs = ToolInputOffload(args={"write": ["body", "title"]})  # type: ignore[dict-item]
    assert inputs.args == {"write": ("body", "title")}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fraction": 85}, "fraction must be in (0, 1]; for 85 % write fraction=0.85"),
        ({"fraction": 0}, "fraction must be in (0, 1], e.g. fraction=0.85; for an absolute"),
        ({"fraction": 250}, "fraction must be in (0, 1], e.g. fraction=0.85"),
        ({"fraction": "a lot"}, "fraction must be a number in (0, 1]"),
        ({"tokens": 0.85}, "tokens=0.85 looks like a share of the window; write fraction=0.85"),
        ({"tokens": 1.5e3 + 0.5}, "tokens must be a whole number, e.g. tokens=1500"),
        ({"tokens": -1}, "tokens must be positive, e.g. tokens=20_000; got -1"),
        ({"tokens": True}, "tokens must be a whole number of tokens"),
        ({"tokens": 10, "fraction": 0.5}, "set either tokens or fraction, not both"),
        ({}, "set tokens (an absolute count, e.g. tokens=20_000) or fraction"),
        ({"token": 5}, "Threshold has no setting 'token'; did you mean 'tokens'?"),
    ],
)
def test_threshold_messages(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        Threshold(**kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_input_tokens": 0}, "max_input_tokens must be the model's input window"),
        ({"max_input_tokens": 0.5}, "e.g. max_input_tokens=200_000; got 0.5"),
        (
            {"max_input_tokens": 1_000, "tool_result": {}},
            "ContextPolicy has no setting 'tool_result'; did you mean 'tool_results'?",
        ),
        (
            {"max_input_tokens": 1_000, "tool_results": {"threshold": {"tokens": 5_000}}},
            "tool_results.threshold (tokens=5000) is larger than max_input_tokens (1000)",
        ),
        (
            {"max_input_tokens": 1_000, "tool_inputs": {"trigger": {"fraction": 85}}},
            "for 85 % write fraction=0.85",
        ),
        (
            {"max_input_tokens": 1_000, "tool_results": {"preview_lines": -1}},
            "preview_lines must be 0 or more, e.g. preview_lines=10",
        ),
        (
            {"max_input_tokens": 1_000, "tool_results": {"preview_line_chars": 0}},
            "preview_line_chars must be at least 1, e.g. preview_line_chars=200",
        ),
        (
            {"max_input_tokens": 1_000, "tool_results": {"exempt": ["x"]}},
            "did you mean 'exempt_tools'?",
        ),
        (
            {"max_input_tokens": 1_000, "tool_inputs": {"keep_messages": -3}},
            "keep_messages must be 0 or more, e.g. keep_messages=20",
        ),
        (
            {"max_input_tokens": 1_000, "tool_inputs": {"min_chars": 0}},
            "min_chars must be at least 1, e.g. min_chars=2_000",
        ),
        (
            {"max_input_tokens": 1_000, "tool_inputs": {"args": {"write_file": "content"}}},
            "args['write_file'] must be a list of argument names; "
            "write args={'write_file': ['content']}",
        ),
        (
            {"max_input_tokens": 1_000, "tool_inputs": {"args": ["write_file"]}},
            'args maps tool names to argument names, e.g. args={"write_file": ["content"]}',
        ),
    ],
)
def test_policy_messages(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        ContextPolicy(**kwargs)
    assert message in str(info.value)
