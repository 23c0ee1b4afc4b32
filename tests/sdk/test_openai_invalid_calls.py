"""OpenAI dicts: no call disappears when its assistant dict is rebuilt (issue 24.10).

When a sibling call's large argument goes to ``/tool_inputs/``, the assistant dict is
rebuilt. A call whose arguments are not a JSON object (models do write such) has no parsed
form; it must come back with its arguments as written, in its place, so that its result is
never orphaned (strict endpoints refuse a tool result without its call).
"""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import ContextEngine, ContextPolicy, ToolInputOffloaded, Workspace

_fresh = count()
POLICY = ContextPolicy(
    max_input_tokens=64_000,
    tool_inputs={"trigger": {"tokens": 1}, "keep_messages": 0, "min_chars": 200},
    clearing={"enabled": False},
)


def _not_a_json_object(text: str) -> bool:
    if not text:
        return False  # no arguments: a call without any (LangChain reads it as {})
    try:
        return not isinstance(json.loads(text), dict)
    except ValueError:
        return True


broken = st.one_of(
    st.sampled_from(['{"command": "ls', " ", "null", "[1, 2]", '"text"', "{'a': 1}", "{,}"]),
    st.text(max_size=40).filter(_not_a_json_object),
    # beyond what ctxfs parses: nested past the bound (a RecursionError at a few thousand
    # levels), or a number too long for int()
    st.integers(65, 3_000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(4_301, 6_000).map(lambda digits: '{"n": ' + "9" * digits + "}"),
)


@st.composite
def assistant_turns(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    """An assistant dict with large valid calls and broken ones, in any order; their results."""
    kinds = draw(st.lists(st.booleans(), min_size=2, max_size=6).filter(lambda k: any(k)))
    if all(kinds):
        kinds.append(False)
    kinds = draw(st.permutations(kinds))
    calls = []
    for n, large in enumerate(kinds):
        if large:
            # NUL-bearing text could not be read back and a lone surrogate is not UTF-8, so
            # neither is ever offloaded (the input stays whole in the dict)
            letters = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
            word = draw(st.text(letters, min_size=1, max_size=5))
            content = "".join(f"line {i} of file {n}: {word}\n" for i in range(150))
            arguments = json.dumps({"file_path": f"/f{n}", "content": content})
            name = "write_file"
        else:
            arguments, name = draw(broken), "bash"
        calls.append(
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        )
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": c["id"], "content": f"done {c['id']}"} for c in calls),
        {"role": "user", "content": "and then?"},
    ]
    return history, [c["function"]["arguments"] for c in calls]


@settings(max_examples=60, deadline=None)
@given(turn=assistant_turns())
def test_a_call_with_broken_arguments_survives_a_rebuilt_assistant_dict(
    turn: tuple[list[dict[str, Any]], list[str]],
) -> None:
    history, given_arguments = turn
    engine = ContextEngine(Workspace(f"memory://openai-broken-{next(_fresh)}"), POLICY)
    out = engine.compact_openai(history, thread_id="t")
    assert any(isinstance(e, ToolInputOffloaded) for e in out.result.events)
    assistant = out.messages[1]
    assert assistant is not history[1]  # rebuilt
    calls = assistant["tool_calls"]
    # every call is there, in its place, its arguments as written unless one was offloaded
    assert [c["id"] for c in calls] == [c["id"] for c in history[1]["tool_calls"]]
    for call, arguments in zip(calls, given_arguments, strict=True):
        if call["function"]["name"] == "bash":
            assert call["function"]["arguments"] == arguments
        else:
            shown = json.loads(call["function"]["arguments"])
            assert shown["content"].startswith("[ctxfs: tool input offloaded]")
            assert json.loads(arguments)["file_path"] == shown["file_path"]
    # no result is orphaned
    ids = {c["id"] for c in calls}
    assert all(m["tool_call_id"] in ids for m in out.messages if m["role"] == "tool")
    # and compacting the result again changes nothing
    again = engine.compact_openai(out.messages, thread_id="t")
    assert again.messages == out.messages


def test_the_issue_example_keeps_its_broken_call() -> None:
    big = json.dumps({"file_path": "/a", "content": "x" * 5_000})
    calls = [
        {"id": "a", "type": "function", "function": {"name": "write_file", "arguments": big}},
        {
            "id": "b",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "ls'},
        },
    ]
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "tool", "tool_call_id": "b", "content": "Error: the arguments are not JSON"},
        {"role": "user", "content": "next"},
    ]
    engine = ContextEngine(Workspace("memory://openai-broken-issue"), POLICY)
    out = engine.compact_openai(history, thread_id="t").messages
    assert [c["id"] for c in out[1]["tool_calls"]] == ["a", "b"]
    assert out[1]["tool_calls"][1] == calls[1]
    assert out[1]["tool_calls"][0]["function"]["arguments"] != big  # offloaded
