"""Only ctxfs's own recovery tools are exempt from result offload, told by identity, not name.

A coding agent's own ``read_file`` (the held-out Gemini CLI run: 54k and 65k characters) is
offloaded like any tool; ctxfs's ``read_file`` (a :class:`ToolFunction` or the LangChain tool
built from it) pages instead and is never offloaded, whatever the policy.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from ctxfs import ContextEngine, ContextPolicy, ToolFunction, Workspace, pointer_of
from ctxfs._pointers._recovery import recovery_tool
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.integrations.langgraph import ToolResultOffloader, offload_tool_node
from ctxfs.testing import ScriptedChatModel, tool_call
from ctxfs.tools import tool_functions, workspace_tools

RECOVERY = ("ls", "read_file", "glob", "grep")
GEMINI_READ = "".join(
    f"{n:05d}: a source line the agent's own read_file shows\n" for n in range(1_100)
)
"""About 54,000 characters, as the held-out run's ``read_file`` returned."""

_NAME_CHARS = st.characters(categories=("Ll", "Lu", "Nd"), include_characters="_-.")
names = st.one_of(
    st.sampled_from([*RECOVERY, "write_file", "edit_file", "bash"]),
    st.text(_NAME_CHARS, min_size=1, max_size=12),
)


def _engine(name: str, window: int = 16_000) -> ContextEngine:
    workspace = Workspace(f"memory://identity-{name}")
    return ContextEngine(workspace, ContextPolicy(max_input_tokens=window))


def _user_tools(name: str) -> list[object]:
    """Tools of another making, called ``name``: none of them is ctxfs's."""

    def read(**_: object) -> str:
        return GEMINI_READ

    function = ToolFunction(
        name=name,
        description="the agent's own",
        args_schema=tool_functions(Workspace("memory://x"))[1].args_schema,
        function=read,
    )
    langchain_tool = StructuredTool.from_function(func=read, name=name, description="own")
    return [None, function, langchain_tool]


def test_gemini_cli_read_file_of_54k_characters_is_offloaded() -> None:
    assert len(GEMINI_READ) > 54_000
    engine = _engine("gemini")
    message = ToolMessage(GEMINI_READ, tool_call_id="c1", name="read_file")
    for made in _user_tools("read_file"):
        kept = engine.offload_tool_result(message, thread_id="t", tool=made)
        held = pointer_of(kept)
        assert held is not None, made
        assert engine.workspace.read_text(held.path) == GEMINI_READ


@settings(max_examples=40, deadline=None)
@given(name=names, lines=st.integers(min_value=2_000, max_value=4_000))
def test_a_name_never_exempts_a_tool_of_another_making(name: str, lines: int) -> None:
    engine = _engine("names")
    text = "".join(f"{n} {name!r} row\n" for n in range(lines))
    message = ToolMessage(text, tool_call_id="c", name=name)
    for made in _user_tools(name):
        assert recovery_tool(made) is None
        assert pointer_of(engine.offload_tool_result(message, thread_id="t", tool=made))


@settings(max_examples=30, deadline=None)
@given(
    words=st.integers(min_value=20_000, max_value=40_000),
    which=st.sampled_from(RECOVERY),
    langchain=st.booleans(),
)
def test_ctxfs_recovery_tools_are_never_offloaded(words: int, which: str, langchain: bool) -> None:
    engine = _engine("own", window=200_000)
    workspace = engine.workspace
    tools: list[Any] = workspace_tools(workspace) if langchain else tool_functions(workspace)
    own = {t.name: t for t in tools}[which]
    assert recovery_tool(own) is not None
    text = "x " * words  # over the threshold: only the tool exempts it
    assert engine.token_counter.count_text(text) > engine.policy.result_threshold_tokens
    message = ToolMessage(text, tool_call_id="c", name=which)
    assert engine.offload_tool_result(message, thread_id="t", tool=own) is message
    # the other tools ctxfs builds are not recovery tools
    for other in ("write_file", "edit_file"):
        assert recovery_tool({t.name: t for t in tools}[other]) is None


def test_the_offloader_offloads_a_user_read_file_in_a_tool_node() -> None:
    @tool("read_file")
    def gemini_read_file(file_path: str) -> str:
        """The agent's own reader."""
        return GEMINI_READ

    for wrap in ("hook", "node"):
        engine = _engine(f"node-{wrap}")
        if wrap == "hook":
            offloader = ToolResultOffloader(engine)
            node: Any = ToolNode([gemini_read_file], wrap_tool_call=offloader.wrap_tool_call)
        else:
            node = offload_tool_node(ToolNode([gemini_read_file]), engine)
        graph = StateGraph(MessagesState)
        graph.add_node("tools", node)
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        call = tool_call("read_file", {"file_path": "/src/main.py"}, call_id="c1")
        out = graph.compile().invoke({"messages": [call]})
        assert pointer_of(out["messages"][-1]) is not None, wrap


def test_a_tool_node_of_ctxfs_tools_pages_instead() -> None:
    engine = _engine("node-own", window=32_000)
    workspace = engine.workspace
    workspace.write_text("/big.txt", "".join(f"row {n} of a long table\n" for n in range(40_000)))
    graph = StateGraph(MessagesState)
    graph.add_node("tools", offload_tool_node(ToolNode(workspace_tools(workspace)), engine))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    call = tool_call("read_file", {"file_path": "/big.txt", "limit": 40_000}, call_id="c1")
    out = graph.compile().invoke({"messages": [call]})
    last = out["messages"][-1]
    assert pointer_of(last) is None and last.text.startswith("     1\trow 0")
    assert engine.token_counter.count_text(last.text) > engine.policy.result_threshold_tokens


def test_create_agent_offloads_a_user_read_file_that_ctxfs_keeps_out() -> None:
    @tool("read_file")
    def gemini_read_file(file_path: str) -> str:
        """The agent's own reader."""
        return GEMINI_READ

    workspace = Workspace("memory://identity-agent")
    policy = ContextPolicy(max_input_tokens=16_000)
    model = ScriptedChatModel(responses=[tool_call("read_file", {"file_path": "/a"}), "Done."])
    middleware = ContextMiddleware(workspace, policy, on_tool_conflict="keep")
    agent = create_agent(model, [gemini_read_file], middleware=[middleware])
    out = agent.invoke({"messages": [("user", "read it")]})
    (result,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    held = pointer_of(result)
    assert held is not None and workspace.read_text(held.path) == GEMINI_READ
