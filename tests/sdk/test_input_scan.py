"""The input scan below the high-water mark: what it finds with the counter's record (only the
messages that changed since the last scan looked at) equals a scan of every message.

The scan runs on most model calls once a thread passes the clearing trigger; looking at every
old message each time made a turn's cost grow with the thread. Here a history goes through
generated edits (appends, a message replaced by id with other arguments, a tail dropped, an
argument already moved to a pointer) and after each the two scans must agree.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs import ContextPolicy, Workspace
from ctxfs._compaction import _inputs
from ctxfs._compaction._inputs import input_frees, offload_inputs
from ctxfs._compaction._means import Means
from ctxfs._policy._budget import Budget
from ctxfs._tokens import TiktokenCounter

_POLICY = ContextPolicy(max_input_tokens=50_000, tool_inputs={"keep_messages": 2})
_BUDGET = Budget.of(_POLICY, 50_000)
_COUNTER = TiktokenCounter()


def _turn(n: int, size: int) -> list[BaseMessage]:
    call = {
        "name": "write_file",
        "args": {"path": f"/f{n}", "content": "x y " * size},
        "id": f"c{n}",
    }
    return [
        AIMessage("", tool_calls=[call], id=f"a{n}"),
        ToolMessage("ok", tool_call_id=f"c{n}", name="write_file", id=f"t{n}"),
    ]


_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["append", "replace", "drop", "offload"]),
        st.integers(0, 40),
        st.sampled_from([5, 50, 400]),
    ),
    min_size=1,
    max_size=12,
)


def _scan(means: Means, history: list[BaseMessage], record: bool) -> list[tuple[int, int]]:
    calls = _COUNTER._record_of(history)[1] if record else None
    return list(input_frees(means, history, "t", _BUDGET, calls))


@settings(max_examples=60, deadline=None)
@given(edits=_EDITS)
def test_the_scan_of_what_changed_finds_what_a_full_scan_finds(
    edits: list[tuple[str, int, int]],
) -> None:
    means = Means(Workspace("memory://input-scan"), _COUNTER)
    history: list[BaseMessage] = [HumanMessage("task", id="h0")]
    for n, (edit, at, size) in enumerate(edits):
        turns = (len(history) - 1) // 2
        if edit == "append" or turns == 0:
            history = history + _turn(1_000 + n, size)
        elif edit == "replace":
            k = at % turns
            history = list(history)
            history[1 + 2 * k] = _turn(k, size)[0].model_copy(update={"id": history[1 + 2 * k].id})
        elif edit == "drop":
            history = history[: 1 + 2 * (at % turns)]
        else:
            history = offload_inputs(means, history, "t", _BUDGET, 0, go=True).messages
        assert _scan(means, history, record=True) == _scan(
            Means(means.workspace, _COUNTER), history, record=False
        )


def test_only_what_changed_is_looked_at_again(monkeypatch: pytest.MonkeyPatch) -> None:
    means = Means(Workspace("memory://input-scan-2"), _COUNTER)
    history: list[BaseMessage] = [HumanMessage("task", id="h0")]
    for n in range(50):
        history += _turn(n, 5)
    _scan(means, history, record=True)
    looked: list[str | None] = []
    candidates = _inputs._input_candidates

    def watched(message: AIMessage, settings: object) -> object:
        looked.append(message.id)
        return candidates(message, settings)  # type: ignore[arg-type]

    monkeypatch.setattr(_inputs, "_input_candidates", watched)
    history = history + _turn(99, 5)
    _scan(means, history, record=True)
    assert looked == ["a49"]  # the message that left the kept window, no other
    looked.clear()
    history[5] = _turn(2, 400)[0]  # replaced: a new argument to move
    assert _scan(means, history, record=True)[0][0] == 5
    assert looked == ["a2"]
    looked.clear()
    _scan(means, history, record=False)
    assert len(looked) == 50  # without the record, every old message
