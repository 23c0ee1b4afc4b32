"""A middleware inside ``ContextMiddleware`` (listed after it) adds to the request after ctxfs
counted it: a longer system prompt, a tool more. The request the model receives is still
within the window, or a ``ContextOverBudget`` says why not.

Found replaying recorded runs: LangChain's ``TodoListMiddleware`` listed after
``ContextMiddleware`` sent 8,839 tokens to a model whose limit was 7,200 (ctxfs measured
2,834), with no event.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelFallbackMiddleware,
    ModelRequest,
    ModelRetryMiddleware,
    TodoListMiddleware,
)
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from test_request_budget import (
    _PROPERTY,
    Scenario,
    request_tokens,
    scenarios,
    script,
    system_prompt,
    tools_for,
    words,
)

from ctxfs import ContextEvent, ContextOverBudget, ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMeasured, ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call


def _scratchpad(note: str = "") -> str:
    """Keeps a note."""
    return "kept"


class Adds(AgentMiddleware):  # type: ignore[type-arg]
    """Adds ``tokens`` of rules to the system prompt and one tool, on every model call."""

    def __init__(self, tokens: int) -> None:
        super().__init__()
        self.rules = f"House rules: {words(tokens, 'rule')}"
        self.tool = StructuredTool.from_function(_scratchpad, name="scratchpad")

    def _added(self, request: ModelRequest) -> ModelRequest:
        system = request.system_message
        text = f"{system.content}\n\n{self.rules}" if system is not None else self.rules
        return request.override(
            system_message=SystemMessage(text), tools=[*request.tools, self.tool]
        )

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        return handler(self._added(request))

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        return await handler(self._added(request))


def _check(
    model: ScriptedChatModel, events: list[ContextEvent], limit: int, *, exact: bool = True
) -> None:
    """Each request within the limit or reported (with ``exact=False``, reported as at least
    its size: a middleware whose additions shrink between calls is counted for the larger)."""
    over = {e.tokens for e in events if isinstance(e, ContextOverBudget)}
    for sent, tools in zip(model.requests, model.request_tools, strict=True):
        size = request_tokens(sent, tools)
        reported = size in over if exact else any(tokens >= size for tokens in over)
        assert size <= limit or reported, f"{size:,} tokens sent for {limit:,}"


def _run(
    scenario: Scenario,
    inner: AgentMiddleware | list[AgentMiddleware],
    *,
    run_async: bool = False,
    model: ScriptedChatModel | None = None,
    exact: bool = True,
) -> tuple[ScriptedChatModel, list[Any]]:
    ws = Workspace("memory://inner")
    ws.write_text("/big.txt", "\n".join(f"line {n}" for n in range(3_000)))
    events: list[ContextEvent] = []
    model = model or ScriptedChatModel(responses=script(scenario))
    inner = inner if isinstance(inner, list) else [inner]
    middleware = ContextMiddleware(
        ws, ContextPolicy(max_input_tokens=scenario.window), on_event=lambda e, _: events.append(e)
    )
    agent = create_agent(
        model,
        tools_for(scenario, ws),
        system_prompt=system_prompt(scenario),
        middleware=[middleware, *inner],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    if run_async:
        asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, config))
    else:
        agent.invoke({"messages": [("user", "go")]}, config)
    _check(model, events, middleware.engine.policy.request_limit_tokens, exact=exact)
    return model, events


@_PROPERTY
@given(scenario=scenarios())
def test_what_an_inner_middleware_adds_is_made_room_for(scenario: Scenario) -> None:
    _run(scenario, Adds(scenario.window // 8))


@pytest.mark.parametrize(
    ("inner", "run_async"), [("todo list", False), ("house rules", False), ("house rules", True)]
)
def test_a_long_run_under_an_inner_middleware_stays_in_the_window(
    inner: str, run_async: bool
) -> None:
    scenario = Scenario(
        window=6_000,
        system_share=0.05,
        tools=2,
        steps=tuple(("big", 900) for _ in range(8)),
    )
    middleware: AgentMiddleware = TodoListMiddleware() if inner == "todo list" else Adds(1_500)
    model, events = _run(scenario, middleware, run_async=run_async)
    assert len(model.requests) == 9
    # what was learned is counted from the second call on: measured as sent
    measured = [e for e in events if isinstance(e, ContextMeasured)]
    last = slice(-3, None)  # a call stopped and made again is measured twice: the last ones
    for reading, sent, tools in zip(
        measured[last], model.requests[last], model.request_tools[last], strict=True
    ):
        assert reading.tokens_after == request_tokens(sent, tools)


def test_what_no_compaction_can_make_room_for_is_reported() -> None:
    events: list[ContextEvent] = []
    model = ScriptedChatModel(responses=[tool_call("report", {"tokens": 50}), "done"])
    policy = ContextPolicy(max_input_tokens=8_000)
    middleware = ContextMiddleware(
        Workspace("memory://inner-huge"), policy, on_event=lambda e, _: events.append(e)
    )

    def report(tokens: int) -> str:
        """Returns a report."""
        return "ok"

    tool: BaseTool = StructuredTool.from_function(report)
    agent = create_agent(
        model, [tool], middleware=[middleware, Adds(9_000)], checkpointer=InMemorySaver()
    )
    agent.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}})
    over = [e for e in events if isinstance(e, ContextOverBudget)]
    assert len(over) == len(model.requests) == 2  # once a call, not twice
    assert all("added by other middleware 9," in e.reason for e in over)
    _check(model, events, middleware.engine.policy.request_limit_tokens)


_LONG_RUN = Scenario(
    window=6_000, system_share=0.05, tools=2, steps=tuple(("big", 900) for _ in range(8))
)


class Forgiving(AgentMiddleware):  # type: ignore[type-arg]
    """Answers for the model when its call fails."""

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        try:
            return handler(request)
        except Exception:
            return AIMessage("The model is unavailable.")

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        try:
            return await handler(request)
        except Exception:
            return AIMessage("The model is unavailable.")


@pytest.mark.parametrize("run_async", [False, True])
@pytest.mark.parametrize("catcher", ["retry", "fallback", "forgiving"])
def test_a_stopped_call_an_inner_middleware_catches_is_still_made_room_for(
    catcher: str, run_async: bool
) -> None:
    # ModelRetryMiddleware retried the stopped call, ModelFallbackMiddleware made it with
    # its fallback model, a middleware answering for a failed call answered it: the grown
    # request reached the model past the window, or the agent got the stand-in answer
    model = ScriptedChatModel(responses=script(_LONG_RUN))
    first: AgentMiddleware = {
        "retry": lambda: ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False),
        "fallback": lambda: ModelFallbackMiddleware(model),
        "forgiving": Forgiving,
    }[catcher]()
    model, _ = _run(_LONG_RUN, [first, Jumps()], run_async=run_async, model=model)
    assert len(model.requests) == 9


class Jumps(Adds):
    """Adds little to the first calls, then 2,500 tokens: more than was learned."""

    def __init__(self) -> None:
        super().__init__(100)
        self.calls = 0

    def _added(self, request: ModelRequest) -> ModelRequest:
        self.calls += 1
        if self.calls == 4:
            self.rules = f"House rules: {words(2_500, 'rule')}"
        return super()._added(request)


class Guard(AgentMiddleware):  # type: ignore[type-arg]
    """Asks another model about the request's last messages before the agent's call."""

    def __init__(self) -> None:
        super().__init__()
        self.model = ScriptedChatModel(responses=["safe"] * 1_000)

    def _ask(self, request: ModelRequest) -> list[Any]:
        return [SystemMessage("Is this safe?"), *request.messages[-2:]]

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        self.model.invoke(self._ask(request))
        return handler(request)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        await self.model.ainvoke(self._ask(request))
        return await handler(request)


@pytest.mark.parametrize("run_async", [False, True])
def test_a_model_call_an_inner_middleware_makes_is_not_taken_for_the_agents(
    run_async: bool,
) -> None:
    model, _ = _run(_LONG_RUN, [Guard(), Adds(2_500)], run_async=run_async)
    assert len(model.requests) == 9


class _RefusesAfterAStop(ScriptedChatModel):
    """Refuses the call made again after the stop as too long (a provider counting more)."""

    refused: int = 0

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        if self.refused == 0 and len(self.requests) == 3:
            self.refused += 1
            raise ValueError("Error code: 400 - context_length_exceeded: reduce the length")
        return super()._generate(messages, *args, **kwargs)


@pytest.mark.parametrize("run_async", [False, True])
def test_a_call_made_again_after_a_stop_and_refused_as_too_long_is_compacted_and_retried(
    run_async: bool,
) -> None:
    model = _RefusesAfterAStop(responses=script(_LONG_RUN))
    model, _ = _run(_LONG_RUN, Jumps(), run_async=run_async, model=model)
    assert model.refused == 1
    assert len(model.requests) == 9


class Reminds(AgentMiddleware):  # type: ignore[type-arg]
    """Adds ``tokens`` of reminders after the last message: appended as three messages,
    or written into a copy of the last message."""

    def __init__(self, tokens: int, how: str) -> None:
        super().__init__()
        self.text = f"Reminder: {words(tokens, 'mind')}"
        self.how = how

    def _added(self, request: ModelRequest) -> ModelRequest:
        *head, last = request.messages
        if self.how == "appended":
            extra = [HumanMessage(self.text), AIMessage("Noted."), HumanMessage("Go on.")]
            return request.override(messages=[*head, last, *extra])
        return request.override(
            messages=[*head, last.model_copy(update={"content": f"{last.text}\n{self.text}"})]
        )

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        return handler(self._added(request))

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        return await handler(self._added(request))


@pytest.mark.parametrize("run_async", [False, True])
@pytest.mark.parametrize("how", ["appended", "copied"])
def test_what_an_inner_middleware_adds_after_the_last_message_is_made_room_for(
    how: str, run_async: bool
) -> None:
    model, _ = _run(_LONG_RUN, Reminds(2_000, how), run_async=run_async)
    assert len(model.requests) == 9


def _inner_stack(draw: st.DrawFn, window: int) -> list[AgentMiddleware]:
    kinds = draw(
        st.lists(
            st.sampled_from(["adds", "jumps", "reminds", "guard", "catch", "todo"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    size = draw(st.integers(10, window // 2))
    made: dict[str, Callable[[], AgentMiddleware]] = {
        "adds": lambda: Adds(size),
        "jumps": Jumps,
        "reminds": lambda: Reminds(size, draw(st.sampled_from(["appended", "copied"]))),
        "guard": Guard,
        "catch": lambda: draw(st.sampled_from([Forgiving, _retry]))(),
        "todo": TodoListMiddleware,
    }
    return [made[kind]() for kind in kinds]


def _retry() -> AgentMiddleware:
    return ModelRetryMiddleware(max_retries=1, initial_delay=0.0, jitter=False)


@_PROPERTY
@given(scenario=scenarios(), data=st.data(), run_async=st.booleans())
def test_any_stack_of_inner_middleware_stays_in_the_window_or_says_why(
    scenario: Scenario, data: st.DataObject, run_async: bool
) -> None:
    inner = data.draw(st.composite(_inner_stack)(scenario.window))
    model, _ = _run(scenario, inner, run_async=run_async, exact=False)
    assert len(model.requests) == len(script(scenario))  # no stand-in answer, no call lost


class CarefulGuard(Guard):
    """A guard with a long policy of its own that goes on when its own call fails."""

    def _ask(self, request: ModelRequest) -> list[Any]:
        return [SystemMessage(f"Policy: {words(6_000, 'clause')}"), *request.messages[-1:]]

    def wrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        with contextlib.suppress(Exception):
            self.model.invoke(self._ask(request))
        return handler(request)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]) -> Any:
        with contextlib.suppress(Exception):
            await self.model.ainvoke(self._ask(request))
        return await handler(request)


@pytest.mark.parametrize("run_async", [False, True])
def test_a_stop_a_middleware_caught_is_forgotten_once_a_call_within_the_window_is_made(
    run_async: bool,
) -> None:
    # the guard's own call is over the window and stopped; the guard goes on, and the
    # agent's call that follows fits: its answer is the agent's, not made again
    model, _ = _run(_LONG_RUN, CarefulGuard(), run_async=run_async, exact=False)
    assert len(model.requests) == 9


class LongGuard(Guard):
    """A guard with a long policy of its own, about the last message."""

    def _ask(self, request: ModelRequest) -> list[Any]:
        return [SystemMessage(f"Policy: {words(3_000, 'clause')}"), *request.messages[-1:]]


@pytest.mark.parametrize("run_async", [False, True])
def test_a_middlewares_own_model_call_is_not_counted_into_the_agents_requests(
    run_async: bool,
) -> None:
    # the guard's policy was taken for an addition to the agent's request: every later
    # request compacted for 3,000 tokens it never held, and reported over the window
    model, events = _run(_LONG_RUN, LongGuard(), run_async=run_async)
    assert len(model.requests) == 9
    assert not [e for e in events if isinstance(e, ContextOverBudget)]


class _Recorder(BaseCallbackHandler):
    """A user's callback handler (not run inline: the async manager gathers it)."""

    def __init__(self) -> None:
        self.started: list[Any] = []
        self.ended: list[Any] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.started.append(kwargs["run_id"])

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.ended.append(kwargs["run_id"])

    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        self.ended.append(kwargs["run_id"])


class _AsyncRecorder(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.started: list[Any] = []
        self.ended: list[Any] = []

    async def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.started.append(kwargs["run_id"])

    async def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.ended.append(kwargs["run_id"])

    async def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        self.ended.append(kwargs["run_id"])


@pytest.mark.parametrize("run_async", [False, True])
def test_a_stop_leaves_the_users_callbacks_and_logs_alone(
    run_async: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # the async callback manager awaits inline handlers one by one before it gathers the
    # others: a stop raised inline left the others' coroutines never awaited (a
    # RuntimeWarning at garbage collection), and LangChain logged each stop as a failed
    # callback beside ctxfs's own line; the handlers saw the stopped call start, and no end
    recorders = [_Recorder(), _AsyncRecorder()]
    model = ScriptedChatModel(responses=script(_LONG_RUN))
    ws = Workspace("memory://inner-callbacks")
    ws.write_text("/big.txt", "\n".join(f"line {n}" for n in range(3_000)))
    middleware = ContextMiddleware(ws, ContextPolicy(max_input_tokens=_LONG_RUN.window))
    agent = create_agent(
        model,
        tools_for(_LONG_RUN, ws),
        system_prompt=system_prompt(_LONG_RUN),
        middleware=[middleware, Jumps()],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}, "callbacks": recorders}
    unraisable: list[str] = []
    with (
        warnings.catch_warnings(record=True) as caught,
        pytest.MonkeyPatch.context() as patch,
    ):
        warnings.simplefilter("always")
        patch.setattr(sys, "unraisablehook", lambda u: unraisable.append(repr(u.object)))
        if run_async:
            asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, config))
        else:
            agent.invoke({"messages": [("user", "go")]}, config)
        stops = [r.name for r in caplog.records if "added" in r.getMessage()]
        del agent, middleware
        caplog.clear()
        gc.collect()
    assert len(model.requests) == 9
    assert [str(w.message) for w in caught] == []
    assert unraisable == []
    assert stops == ["ctxfs"]  # ctxfs's own line, once
    for recorder in recorders:
        # each call the handlers saw start ends, the stopped one with the stop as its error
        assert len(recorder.started) == len(model.requests) + 1
        assert sorted(map(str, recorder.ended)) == sorted(map(str, recorder.started))
