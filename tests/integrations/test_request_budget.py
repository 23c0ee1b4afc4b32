"""The budget is what the model receives: system message, messages and tool schemas.

Real ``create_agent`` and LangGraph agents run generated scripts with the scripted model,
which records every request it is sent. For every model call, the tokens of that request
(counted exactly, the same way for every part) must be what ctxfs measured, and be within
the window minus the room for the answer, or a ``ContextOverBudget`` event of that call says
why not.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from ctxfs import (
    ContextEngine,
    ContextEvent,
    ContextOverBudget,
    ContextPolicy,
    TiktokenCounter,
    Workspace,
    pointer_of,
    workspace_tools,
)
from ctxfs._compaction._request import tool_schema_text
from ctxfs.integrations.langchain import ContextMeasured, ContextMiddleware
from ctxfs.integrations.langgraph import compaction_node, offload_tool_node
from ctxfs.testing import ScriptedChatModel, tool_call

COUNTER = TiktokenCounter()
WINDOWS = [2_000, 4_000, 8_000, 16_000, 64_000, 200_000]


def request_tokens(messages: Sequence[BaseMessage], tools: Sequence[Any]) -> int:
    """Exact tokens of a request: every message, and the JSON schema of every tool."""
    schemas = sum(COUNTER.count_text(tool_schema_text(t)) for t in tools)
    return COUNTER.count_messages(messages) + schemas


def words(tokens: int, word: str = "ledger") -> str:
    return " ".join(f"{word}{i % 97}" for i in range(max(0, tokens // 2)))


def make_tool(n: int, description_tokens: int) -> BaseTool:
    def run(query: str = "") -> str:
        return f"tool {n} found nothing for {query!r}"

    return StructuredTool.from_function(
        run, name=f"lookup_{n}", description=f"Looks things up. {words(description_tokens)}"
    )


def big_output(tokens: int) -> str:
    return "\n".join(f"row {i}: {words(20, 'value')}" for i in range(max(1, tokens // 25)))


@dataclass(frozen=True)
class Scenario:
    window: int
    system_share: float
    tools: int
    steps: tuple[tuple[str, int], ...]  # ("big", tokens) | ("read", lines) | ("parallel", n)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    window = draw(st.sampled_from(WINDOWS))
    steps = draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("big"), st.integers(50, 2 * window)),
                st.tuples(st.just("read"), st.integers(1, 3_000)),
                st.tuples(st.just("parallel"), st.integers(2, 3)),
            ),
            min_size=1,
            max_size=6,
        )
    )
    return Scenario(
        window=window,
        system_share=draw(st.sampled_from([0.0, 0.05, 0.2, 0.4])),
        tools=draw(st.integers(0, 30)),
        steps=tuple(steps),
    )


def script(scenario: Scenario) -> list[Any]:
    replies: list[Any] = []
    for kind, size in scenario.steps:
        if kind == "big":
            replies.append(tool_call("report", {"tokens": size}))
        elif kind == "parallel":
            calls = [
                {"name": "report", "args": {"tokens": 300}, "id": None, "type": "tool_call"}
                for _ in range(size)
            ]
            replies.append(AIMessage(content="", tool_calls=calls))
        else:
            replies.append(_read_back(size))
    replies.append("done")
    return replies


def _read_back(lines: int) -> Any:
    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        for message in reversed(messages):
            held = pointer_of(message)
            if held is not None and held.kind in ("result", "cleared"):
                return tool_call("read_file", {"file_path": held.path, "limit": lines})
        return tool_call("read_file", {"file_path": "/big.txt", "limit": lines})

    return reply


def report(tokens: int) -> str:
    """Returns a long report."""
    return big_output(tokens)


def tools_for(scenario: Scenario, ws: Workspace) -> list[BaseTool]:
    own = [make_tool(n, 60) for n in range(scenario.tools)]
    return [StructuredTool.from_function(report), *own]


def system_prompt(scenario: Scenario) -> str | None:
    tokens = int(scenario.system_share * scenario.window)
    return f"You are an agent. {words(tokens, 'rule')}" if tokens else None


def check(model: ScriptedChatModel, events: list[ContextEvent], policy: ContextPolicy) -> None:
    """Every request within the limit, or a ContextOverBudget event in that call."""
    limit = policy.request_limit_tokens
    calls: list[list[ContextEvent]] = [[]]
    for event in events:
        calls[-1].append(event)
        if isinstance(event, ContextMeasured):
            calls.append([])
    measured = [c for c in calls if c and isinstance(c[-1], ContextMeasured)]
    assert len(measured) == len(model.requests)
    for call, sent, tools in zip(measured, model.requests, model.request_tools, strict=True):
        exact = request_tokens(sent, tools)
        reading = call[-1]
        assert isinstance(reading, ContextMeasured)
        assert reading.tokens_after == exact, "ctxfs measured something else than was sent"
        assert reading.limit == limit
        if exact > limit:
            over = [e for e in call if isinstance(e, ContextOverBudget)]
            assert over, f"a request of {exact:,} tokens for a limit of {limit:,}, unexplained"
            assert over[-1].tokens == exact and over[-1].reason


_PROPERTY = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_PROPERTY
@given(scenario=scenarios())
def test_every_create_agent_request_is_within_the_window_or_explained(scenario: Scenario) -> None:
    ws = Workspace("memory://budget-agent")
    ws.write_text("/big.txt", big_output(5_000))
    policy = ContextPolicy(max_input_tokens=scenario.window)
    events: list[ContextEvent] = []
    model = ScriptedChatModel(responses=script(scenario))
    middleware = ContextMiddleware(ws, policy, on_event=lambda e, _: events.append(e))
    agent = create_agent(
        model,
        tools_for(scenario, ws),
        system_prompt=system_prompt(scenario),
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}})
    check(model, events, middleware.engine.policy)


@_PROPERTY
@given(scenario=scenarios())
def test_every_langgraph_request_is_within_the_window_or_explained(scenario: Scenario) -> None:
    ws = Workspace("memory://budget-graph")
    ws.write_text("/big.txt", big_output(5_000))
    policy = ContextPolicy(max_input_tokens=scenario.window)
    engine = ContextEngine(ws, policy)
    events: list[ContextEvent] = []
    tools = [*tools_for(scenario, ws), *workspace_tools(ws)]
    system = system_prompt(scenario)
    model = ScriptedChatModel(responses=script(scenario))
    bound = model.bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        prefix = [SystemMessage(system)] if system else []
        return {"messages": [bound.invoke([*prefix, *state["messages"]])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    graph = StateGraph(MessagesState)
    on_event = lambda e, _: events.append(e)  # noqa: E731
    graph.add_node(
        "compact", compaction_node(engine, system=system, tools=tools, on_event=on_event)
    )
    graph.add_node("model", call_model)
    graph.add_node("tools", offload_tool_node(ToolNode(tools), engine, on_event=on_event))
    graph.add_edge(START, "compact")
    graph.add_edge("compact", "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "compact")
    app = graph.compile(checkpointer=InMemorySaver())
    app.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}})
    check(model, events, policy)


# -- the three cases of the issue, with their numbers ---------------------------------------


def _agent(
    policy: ContextPolicy, replies: list[Any], system: str | None, tools: list[BaseTool]
) -> tuple[Any, ScriptedChatModel, list[ContextEvent], ContextMiddleware]:
    events: list[ContextEvent] = []
    model = ScriptedChatModel(responses=replies)
    middleware = ContextMiddleware(
        Workspace("memory://budget-case"), policy, on_event=lambda e, _: events.append(e)
    )
    agent = create_agent(
        model, tools, system_prompt=system, middleware=[middleware], checkpointer=InMemorySaver()
    )
    return agent, model, events, middleware


def test_a_system_prompt_larger_than_the_window_is_counted_and_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    system = words(8_000, "rule")
    assert COUNTER.count_text(system) == 8_000
    policy = ContextPolicy(max_input_tokens=8_000)
    agent, model, events, _ = _agent(policy, ["ok"], system, [])
    with caplog.at_level(logging.WARNING, logger="ctxfs"):
        agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "s"}})
    exact = request_tokens(model.requests[0], model.request_tools[0])
    (measured,) = [e for e in events if isinstance(e, ContextMeasured)]
    assert measured.tokens_after == exact
    assert measured.system_tokens == 8_004  # the text and the message's framing
    (over,) = [e for e in events if isinstance(e, ContextOverBudget)]
    assert (over.tokens, over.limit) == (exact, 7_200)
    assert over.reason.startswith("the system prompt and tool schemas alone are")
    assert any("request over budget" in r.getMessage() for r in caplog.records)


def test_a_result_over_a_quarter_of_a_small_window_is_offloaded() -> None:
    policy = ContextPolicy(max_input_tokens=12_000)
    assert policy.result_threshold_tokens == 2_000
    nine = big_output(9_000)
    assert 8_000 < COUNTER.count_text(nine) < 10_000
    agent, model, events, _ = _agent(
        policy,
        [tool_call("report", {"tokens": 9_000}), "ok"],
        None,
        [StructuredTool.from_function(report)],
    )
    agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "r"}})
    second = model.requests[1]
    assert pointer_of(second[-1]) is not None  # the result reached the model as a pointer
    assert request_tokens(second, model.request_tools[1]) <= policy.request_limit_tokens
    assert not any(isinstance(e, ContextOverBudget) for e in events)


def test_reading_a_3000_line_file_in_a_4000_token_window_stays_in_it() -> None:
    policy = ContextPolicy(max_input_tokens=4_000)
    assert policy.tool_output_tokens == 800
    lines = "\n".join(f"{n:05d} settle batch {n} amount {n * 7 % 1000} ok" for n in range(3_000))
    assert COUNTER.count_text(lines) > 30_000
    events: list[ContextEvent] = []
    model = ScriptedChatModel(responses=[tool_call("read_file", {"file_path": "/big.log"}), "ok"])
    ws = Workspace("memory://read-big")
    ws.write_text("/big.log", lines)
    middleware = ContextMiddleware(ws, policy, on_event=lambda e, _: events.append(e))
    agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "read it")]}, {"configurable": {"thread_id": "b"}})
    page = model.requests[1][-1]
    assert isinstance(page, ToolMessage) and page.name == "read_file"
    assert COUNTER.count_text(page.text) <= 800
    assert "offset=" in page.text  # where to read on
    assert request_tokens(model.requests[1], model.request_tools[1]) <= 3_600
    assert not any(isinstance(e, ContextOverBudget) for e in events)


def test_the_window_comes_from_the_model_profile() -> None:
    model = ScriptedChatModel(responses=["ok"], profile={"max_input_tokens": 32_000})
    middleware = ContextMiddleware(Workspace("memory://profile"), ContextPolicy())
    agent = create_agent(model, [], middleware=[middleware])
    agent.invoke({"messages": [("user", "hi")]})
    assert middleware.engine.policy.max_input_tokens == 32_000
    read_file = next(t for t in middleware.own_tools if t.name == "read_file")
    assert read_file is not None and middleware.engine.policy.tool_output_tokens == 6_400


def test_no_window_anywhere_is_a_clear_error() -> None:
    engine = ContextEngine(Workspace("memory://nowindow"), ContextPolicy())
    with pytest.raises(ValueError, match="does not know the model's window"):
        engine.compact([], thread_id="t", model=ScriptedChatModel(responses=["ok"]))


class _Refusing(ScriptedChatModel):
    """Refuses the first request as too long, like a provider whose count differs."""

    refused: int = 0

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        if self.refused == 0:
            self.refused += 1
            raise ValueError("Error code: 400 - context_length_exceeded: reduce the length")
        return super()._generate(messages, *args, **kwargs)


def test_a_context_length_error_compacts_harder_and_retries_once() -> None:
    policy = ContextPolicy(max_input_tokens=16_000)
    model = _Refusing(responses=[*(tool_call("report", {"tokens": 900}) for _ in range(6)), "ok"])
    events: list[ContextEvent] = []
    middleware = ContextMiddleware(
        Workspace("memory://refuse"), policy, on_event=lambda e, _: events.append(e)
    )
    agent = create_agent(
        model,
        [StructuredTool.from_function(report)],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    # The refusal comes at the first call; the retried request goes through.
    out = agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "x"}})
    assert out["messages"][-1].content == "ok"
    assert model.refused == 1
    assert len(model.requests) == 7  # the refused call was not recorded, the retry was


def test_a_second_refusal_reaches_the_caller() -> None:
    class Always(ScriptedChatModel):
        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            raise ValueError("prompt is too long: 250000 tokens > 200000 maximum")

    middleware = ContextMiddleware(
        Workspace("memory://refuse2"), ContextPolicy(max_input_tokens=16_000)
    )
    agent = create_agent(Always(responses=["never"]), [], middleware=[middleware])
    with pytest.raises(ValueError, match="prompt is too long"):
        agent.invoke({"messages": [("user", "hi")]})


def test_an_offloaded_result_is_read_back_in_pages_never_offloaded_again() -> None:
    policy = ContextPolicy(max_input_tokens=16_000)
    agent, model, events, _ = _agent(
        policy,
        [tool_call("report", {"tokens": 6_000}), _read_back(50), "ok"],
        None,
        [StructuredTool.from_function(report)],
    )
    agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "rb"}})
    last = model.requests[-1][-1]
    assert isinstance(last, ToolMessage) and last.name == "read_file"
    assert pointer_of(last) is None and "row 0:" in last.text
    assert not any(isinstance(e, ContextOverBudget) for e in events)
