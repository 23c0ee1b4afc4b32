"""docs/architecture.md cannot drift: its folder table is the layering test's ranks, and its
traced compaction is what one summarizing turn in ``create_agent`` enters, module by module."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from test_layering import RANKS, VOCABULARY

from ctxfs import ContextPolicy, Workspace, is_summary
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel

PAGE = Path(__file__).parent.parent / "docs" / "architecture.md"
ROW = re.compile(r"^\| `(ctxfs[\w.]*)` \| (\d) \|", re.M)
TRACED = re.compile(r"<!-- traced -->\n```text\n(.*?)```", re.S)


def test_the_folder_table_is_the_ranks() -> None:
    table = {name: int(rank) for name, rank in ROW.findall(PAGE.read_text())}
    folders = {
        name: rank
        for name, rank in RANKS.items()
        if name.count(".") == 1 and name[6:] not in VOCABULARY and name != "ctxfs.__main__"
    }
    assert table == {**folders, "ctxfs": RANKS["ctxfs"]}
    vocabulary = next(line for line in PAGE.read_text().splitlines() if "`ctxfs._errors`" in line)
    assert all(f"`{name}`" in vocabulary or f"`ctxfs.{name}`" in vocabulary for name in VOCABULARY)


def _summarizing_turn() -> set[str]:
    """The ctxfs modules one summarizing turn of a create_agent agent calls into."""
    middleware = ContextMiddleware(
        Workspace("memory://arch"), ContextPolicy(max_input_tokens=8_000)
    )
    model = ScriptedChatModel(responses=["done", "done again"])
    agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("start the task", id="h")]}, config)
    history: list[BaseMessage] = []
    for n in range(60):
        history += [
            HumanMessage(f"request {n} " + "word " * 60, id=f"u{n}"),
            AIMessage(f"answer {n} " + "text " * 60, id=f"a{n}"),
        ]
    agent.update_state(config, {"messages": history})
    entered: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        name = frame.f_globals.get("__name__", "")
        if event == "call" and name.startswith("ctxfs"):
            entered.add(name)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        agent.invoke({"messages": [HumanMessage("go on", id="last")]}, config)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert any(is_summary(m) for m in agent.get_state(config).values["messages"])
    return entered - {"ctxfs.testing._scripted"}  # the scripted model, not ctxfs's work


def test_the_traced_compaction_is_what_a_summarizing_turn_enters() -> None:
    found = TRACED.search(PAGE.read_text())
    assert found is not None, "docs/architecture.md lost its <!-- traced --> block"
    listed = {line.split()[0] for line in found.group(1).splitlines() if line.strip()}
    entered = _summarizing_turn()
    assert listed == entered, (
        f"update the traced block: missing {sorted(entered - listed)}, "
        f"no longer entered {sorted(listed - entered)}"
    )


def test_the_traced_modules_cannot_fit_in_sixteen() -> None:
    """docs/architecture.md argues that 16 modules of at most 600 lines cannot hold the code
    one summarizing turn enters; this keeps the argument true (update the page if it fails)."""
    found = TRACED.search(PAGE.read_text())
    assert found is not None
    names = [line.split()[0] for line in found.group(1).splitlines() if line.strip()]
    lines = 0
    for name in names:
        module = sys.modules.get(name) or __import__(name, fromlist=["_"])
        assert module.__file__ is not None
        lines += len(Path(module.__file__).read_text().splitlines())
    assert lines > 10_000
    assert lines > 16 * 600
