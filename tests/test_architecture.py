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


def _summarizing_turn(lines: dict[str, set[int]] | None = None) -> set[str]:
    """The ctxfs modules one summarizing turn of a create_agent agent calls into; with
    ``lines``, also the lines it runs in each (traced line by line, which is slower)."""
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

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith("ctxfs") or lines is None:
            return None
        entered.add(name)
        ran = lines.setdefault(name, set())

        def line(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                ran.add(frame.f_lineno)
            return line

        return line

    if lines is None:
        sys.setprofile(profile)
        threading.setprofile(profile)
    else:
        sys.settrace(trace)
        threading.settrace(trace)
    try:
        agent.invoke({"messages": [HumanMessage("go on", id="last")]}, config)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        sys.settrace(None)
        threading.settrace(None)
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


RAN = re.compile(r"runs about ([\d,]+) distinct lines of them")


def test_the_lines_the_turn_runs_are_as_the_page_says() -> None:
    """docs/architecture.md says how many lines of the traced modules the turn runs (against
    all their lines): the figure must stay within a quarter of what a line trace counts."""
    stated = RAN.search(PAGE.read_text())
    assert stated is not None, "docs/architecture.md lost its count of the lines the turn runs"
    lines: dict[str, set[int]] = {}
    _summarizing_turn(lines)
    ran = sum(len(numbers) for name, numbers in lines.items() if name != "ctxfs.testing._scripted")
    figure = int(stated.group(1).replace(",", ""))
    assert 0.75 * figure <= ran <= 1.25 * figure, f"the turn now runs {ran} lines"
