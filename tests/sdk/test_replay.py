"""Replay: traces in, one record per model call out, and nothing lost."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    Summarized,
    ToolResultOffloaded,
    TraceError,
    Workspace,
    check_recovery,
    parse_trace,
    replay,
)


def _trace(turns: int, result_lines: int = 30) -> list[str]:
    lines = [json.dumps({"role": "system", "content": "Be brief."})]
    lines.append(json.dumps({"role": "user", "content": "Go through the files."}))
    for n in range(turns):
        call = {"id": f"c{n}", "name": "read", "args": {"path": f"/f{n}"}}
        lines.append(json.dumps({"role": "assistant", "content": "", "tool_calls": [call]}))
        body = "\n".join(f"f{n} line {k} value {k * n}" for k in range(result_lines))
        lines.append(json.dumps({"role": "tool", "tool_call_id": f"c{n}", "content": body}))
    lines.append(json.dumps({"role": "assistant", "content": "Done."}))
    return lines


def test_messages_keep_their_line_as_id_and_their_calls() -> None:
    history = parse_trace(_trace(1))
    assert [m.id for m in history] == ["m0", "m1", "m2", "m3", "m4"]
    assert isinstance(history[2], AIMessage) and history[2].tool_calls[0]["id"] == "c0"
    assert isinstance(history[3], ToolMessage) and history[3].tool_call_id == "c0"


def test_a_trailing_unanswered_call_is_fine() -> None:
    lines = [*_trace(1)[:-1], _trace(1)[2].replace('"c0"', '"c9"')]
    assert len(parse_trace(lines)) == 5


def test_errors_name_source_and_line() -> None:
    with pytest.raises(TraceError) as info:
        parse_trace(['{"role": "user"}', "oops"], source="run.jsonl")
    assert (info.value.source, info.value.line) == ("run.jsonl", 2)
    assert str(info.value).startswith("run.jsonl:2: not valid JSON")
    assert isinstance(info.value, ValueError)


def test_replay_records_every_call_and_loses_nothing() -> None:
    workspace = Workspace("memory://replay")
    policy = ContextPolicy(max_input_tokens=3_000, tool_results={"threshold": {"tokens": 300}})
    seen: list[int] = []
    history = parse_trace(_trace(30, result_lines=30))
    result = replay(
        history,
        ContextEngine(workspace, policy),
        thread_id="t",
        on_message=lambda done, total: seen.append(done),
    )
    assert seen == list(range(1, len(history) + 1))
    assert [c.index for c in result.calls] == list(range(1, 32))
    assert result.calls[0].tokens == result.calls[0].baseline_tokens
    assert any(isinstance(e, Summarized) for e in result.events)
    assert result.peak_tokens <= 3_000 < result.baseline_peak_tokens
    assert result.total_input_tokens < result.baseline_total_input_tokens
    assert result.calls_over_budget == 0
    recovery = check_recovery(result, workspace)
    assert recovery.complete and recovery.removed_bytes > 0


def test_offloads_are_reported_at_the_next_call_or_after_the_last() -> None:
    workspace = Workspace("memory://replay-events")
    policy = ContextPolicy(max_input_tokens=50_000, tool_results={"threshold": {"tokens": 100}})
    lines = _trace(1)
    result = replay(parse_trace(lines[:-1]), ContextEngine(workspace, policy), thread_id="t")
    assert len(result.calls) == 1 and not result.calls[0].events
    assert [type(e) for e in result.trailing_events] == [ToolResultOffloaded]
    result = replay(parse_trace(lines), ContextEngine(workspace, policy), thread_id="t")
    assert [type(e) for e in result.calls[1].events] == [ToolResultOffloaded]
    assert result.events == result.calls[1].events


def test_the_tool_schemas_count_in_every_request_with_and_without_ctxfs() -> None:
    from langchain_core.tools import tool

    @tool
    def lookup(key: str) -> str:
        """Looks a key up in the team's long-term registry of settlement rules."""
        return key

    def fresh() -> ContextEngine:
        return ContextEngine(Workspace("memory://schemas"), ContextPolicy(max_input_tokens=8_000))

    history = parse_trace(_trace(3))
    plain = replay(history, fresh(), thread_id="plain")
    engine = fresh()
    schemas = engine.count_request(tools=[lookup])
    assert schemas > 20
    with_tools = replay(history, engine, thread_id="tools", tools=[lookup])
    for a, b in zip(plain.calls, with_tools.calls, strict=True):
        assert b.tokens == a.tokens + schemas
        assert b.baseline_tokens == a.baseline_tokens + schemas


def test_prefix_cache_telemetry_agrees_with_the_compaction_events() -> None:
    from ctxfs import PrefixChanged

    policy = ContextPolicy(max_input_tokens=4_000, tool_results={"threshold": {"tokens": 300}})
    engine = ContextEngine(Workspace("memory://cache"), policy)
    result = replay(parse_trace(_trace(30, result_lines=12)), engine, thread_id="t")
    assert result.prefix_breaks >= 1
    previous = None
    for call in result.calls:
        assert 0 <= call.cached_tokens <= call.tokens
        changed = [e for e in call.events if isinstance(e, PrefixChanged)]
        # a break is exactly a compaction that changed what was sent before, once
        assert call.prefix_broken == bool(changed) and len(changed) <= 1
        if previous is not None and not call.prefix_broken:
            assert call.cached_tokens == previous.tokens  # append-only: all of it is reused
        previous = call
    assert result.cached_tokens + result.uncached_tokens == result.total_input_tokens
    assert 0 < result.cache_hit_rate < 1
