"""What the six workspace tools cost in every request: their schemas, counted as ctxfs counts a
request's tools (the compact JSON of each OpenAI-style schema, cl100k tokens), at most 1,400
tokens (issue 26). Whatever the workspace's limits, and in both forms of the tools."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import Limits, TiktokenCounter, Workspace
from ctxfs._compaction._request import RequestParts
from ctxfs.tools import tool_functions, workspace_tools

BUDGET = 1_400


def _cost(tools: list[object]) -> int:
    return RequestParts(TiktokenCounter()).tool_tokens(tools)  # type: ignore[arg-type]


def test_the_six_schemas_cost_at_most_the_budget_as_sent() -> None:
    ws = Workspace("memory://tools-cost")
    langchain_tools = workspace_tools(ws)
    specs = [f.openai_spec() for f in tool_functions(ws)]
    assert len(langchain_tools) == len(specs) == 6
    cost = _cost(langchain_tools)
    assert cost == _cost(specs)  # the LangChain tools and the plain specs are the same bytes
    assert 0 < cost <= BUDGET


@settings(max_examples=20, deadline=None)
@given(
    timeout=st.sampled_from([0.5, 5.0, 30.0, 120.0]),
    results=st.integers(1, 1_000_000),
    lines=st.integers(1, 1_000_000),
    tokens=st.integers(1_000, 10_000_000),
    areas=st.lists(st.sampled_from(["/frozen", "/shared/ref", "/vendor"]), unique=True),
)
def test_the_budget_holds_for_any_limits(
    timeout: float, results: int, lines: int, tokens: int, areas: list[str]
) -> None:
    limits = Limits(regex_timeout=timeout, max_glob_results=results, default_read_lines=lines)
    ws = Workspace("memory://tools-cost-limits", limits=limits)
    functions = tool_functions(
        ws, read_only_areas=["/tool_results", "/tool_inputs", "/transcripts", "/memories", *areas]
    )
    functions_default = tool_functions(ws, max_output_tokens=tokens)
    assert _cost([f.openai_spec() for f in functions]) <= BUDGET + 15 * len(areas)
    assert _cost([f.openai_spec() for f in functions_default]) <= BUDGET


@pytest.mark.parametrize("name", ["ls", "read_file", "write_file", "edit_file", "glob", "grep"])
def test_each_tool_says_what_it_is_for(name: str) -> None:
    (function,) = [f for f in tool_functions(Workspace("memory://tools-cost")) if f.name == name]
    assert len(function.description) > 80  # cut down, not cut out
