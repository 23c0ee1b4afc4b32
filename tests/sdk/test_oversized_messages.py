"""The last lossless resort: large message texts moved out of a request still over its limit.

A pasted log in the latest user message, a long answer of the model kept in the recent
window, the raw arguments of a botched call: no other step makes them smaller, so the
request went out over the window. They go to files, byte-exact, only until it fits, the
model's texts before the user's and the task statement last; everything reads back.
"""

from __future__ import annotations

import random
import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import invalid_tool_call

from ctxfs import (
    ContextEngine,
    ContextOverBudget,
    ContextPolicy,
    MessageOffloaded,
    Workspace,
    resolve_pointers,
)
from ctxfs._pointers._moved import MovedText, moved_texts, point_moved
from ctxfs._pointers._pointer import Pointer, input_pointers, point_input
from ctxfs._replay._recovery import check_recovery, restore_messages
from ctxfs._replay._run import ReplayResult
from ctxfs.tools._history import search_history

LIMIT_WINDOW = 4_000


def _words(count: int, seed: int) -> str:
    pick = random.Random(seed)
    return " ".join(
        "".join(pick.choice(string.ascii_lowercase) for _ in range(pick.randint(3, 8)))
        for _ in range(count)
    )


def _log(lines: int, seed: int) -> str:
    pick = random.Random(seed)
    return "".join(
        f"2026-01-01T00:00:{i % 60:02d} ERROR worker-{pick.randint(1, 99)} {_words(6, i)}\n"
        for i in range(lines)
    )


def _files(workspace: Workspace) -> dict[str, bytes]:
    return {path: workspace.read_bytes(path) for path in workspace.glob("**").paths}


def _engine(name: str, **policy: Any) -> ContextEngine:
    workspace = Workspace(f"memory://oversized-{name}")
    return ContextEngine(workspace, ContextPolicy(max_input_tokens=LIMIT_WINDOW, **policy))


def _compact_twice(engine: ContextEngine, messages: list[BaseMessage]) -> list[BaseMessage]:
    """Compacts, checks the request fits, reads back byte-exact, and that compacting the
    result again changes and writes nothing."""
    first = engine.compact(messages, thread_id="t")
    assert not [e for e in first.events if isinstance(e, ContextOverBudget)]
    limit = engine.policy.request_limit_tokens
    assert engine.token_counter.count_messages(first.messages) <= limit
    files = _files(engine.workspace)
    second = engine.compact(first.messages, thread_id="t")
    assert [m.model_dump() for m in second.messages] == [m.model_dump() for m in first.messages]
    assert _files(engine.workspace) == files
    restored = resolve_pointers(first.messages, engine.workspace, thread_id="t")
    assert [m.model_dump() for m in restored] == [m.model_dump() for m in messages]
    replayed = ReplayResult(
        thread_id="t",
        max_input_tokens=LIMIT_WINDOW,
        history=tuple(messages),
        context=tuple(first.messages),
        calls=(),
    )
    recovery = check_recovery(replayed, engine.workspace)
    assert recovery.complete and (recovery.removed_messages > 0) == (first.messages != messages)
    rebuilt = restore_messages(first.messages, engine.workspace, thread_id="t")
    assert [rebuilt[m.id] for m in messages] == messages
    return first.messages


def _moved(engine: ContextEngine, messages: list[BaseMessage]) -> list[MessageOffloaded]:
    result = engine.compact(messages, thread_id="t")
    return [e for e in result.events if isinstance(e, MessageOffloaded)]


def test_a_pasted_log_in_the_latest_user_message_goes_to_a_file() -> None:
    log = _log(2_000, 1)
    messages: list[BaseMessage] = [
        SystemMessage("You are a helpful agent.", id="s"),
        HumanMessage("Find why the nightly job fails.", id="task"),
        AIMessage("Paste the log, please.", id="a1"),
        HumanMessage(log, id="paste"),
    ]
    engine = _engine("log")
    kept = _compact_twice(engine, messages)
    assert kept[:3] == messages[:3]  # the system prompt and the task statement stay verbatim
    pointer = kept[3].content
    assert isinstance(pointer, str)
    (path,) = [p for p in _files(engine.workspace) if "/messages/" in p]
    assert path.startswith("/transcripts/") and engine.workspace.read_text(path) == log
    assert pointer.startswith("[ctxfs: user message moved out of the request]")
    assert f"saved to {path}." in pointer and "read_file it from offset=" in pointer
    assert log.splitlines()[0] in pointer  # its first lines quoted, never a paraphrase
    segments = [p for p in _files(engine.workspace) if p.endswith(".jsonl")]
    assert not segments  # no transcript archived for a summary that could not help
    # history_search finds it in the moved text, by file and line, as in any offloaded file
    wanted = log.splitlines()[1234]
    hits = search_history(engine.workspace, wanted, thread_id="t")
    assert (hits[0].path, hits[0].line, hits[0].text) == (path, 1235, wanted)


def test_a_long_answer_of_the_model_goes_to_a_file_with_summarization_off() -> None:
    answer = _words(6_000, 2)
    messages: list[BaseMessage] = [
        HumanMessage("Write the report.", id="task"),
        AIMessage(answer, id="report"),
        HumanMessage("Thanks, now shorten it.", id="ask"),
    ]
    engine = _engine("answer", summarization={"enabled": False})
    kept = _compact_twice(engine, messages)
    assert kept[0] == messages[0] and kept[2] == messages[2]
    assert str(kept[1].content).startswith("[ctxfs: assistant message moved out")


def test_a_long_answer_in_text_blocks_reads_back_as_blocks() -> None:
    blocks: list[str | dict[str, Any]] = [
        {"type": "text", "text": _words(3_000, 3)},
        {"type": "text", "text": _words(3_000, 4)},
    ]
    messages: list[BaseMessage] = [HumanMessage("go", id="task"), AIMessage(blocks, id="a")]
    _compact_twice(_engine("blocks", summarization={"enabled": False}), messages)


def _botched(seed: int, call_id: str) -> dict[str, Any]:
    return invalid_tool_call(
        name="write_file",
        args='{"path": "/r.md", "content": "' + _words(5_000, seed),  # cut off: not JSON
        id=call_id,
        error="the arguments are not JSON",
    )


def test_arguments_of_a_botched_call_go_to_a_file_old_or_recent() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("Write the report.", id="task"),
        AIMessage("", id="a1", invalid_tool_calls=[_botched(5, "c1")]),
        HumanMessage("That call was cut off; try again.", id="h2"),
        AIMessage("", id="a2", invalid_tool_calls=[_botched(6, "c2")]),
    ]
    engine = _engine("botched", summarization={"enabled": False})
    kept = _compact_twice(engine, messages)
    assert [m.id for m in kept] == [m.id for m in messages]
    assert kept[0] == messages[0] and kept[2] == messages[2]
    moved = [m for m in kept if isinstance(m, AIMessage) and m != messages[kept.index(m)]]
    assert moved
    for message in moved:
        (call,) = message.invalid_tool_calls
        assert str(call["args"]).startswith("[ctxfs: botched tool call's arguments moved out")


def test_the_model_s_texts_go_before_the_user_s_and_the_task_statement_last() -> None:
    task = HumanMessage(_words(300, 7), id="task")  # about 1,000 tokens
    messages: list[BaseMessage] = [
        task,
        AIMessage(_words(700, 8), id="answer"),
        HumanMessage(_words(300, 9), id="later"),
    ]
    engine = _engine("order", summarization={"enabled": False})
    kept = _compact_twice(engine, messages)
    assert kept[0] == task and kept[2] == messages[2]  # the model's answer was enough
    assert kept[1] != messages[1]
    # only the user's words left, over the limit: the later one goes before the task
    users: list[BaseMessage] = [task, HumanMessage(_words(1_000, 10), id="later")]
    kept = _compact_twice(_engine("order-users", summarization={"enabled": False}), users)
    assert kept[0] == task and kept[1] != users[1]


def test_the_openai_dicts_path_moves_a_botched_call_and_keeps_it_moved() -> None:
    arguments = '{"path": "/r.md", "content": "' + _words(5_000, 11)
    dicts: list[dict[str, Any]] = [
        {"role": "user", "content": "Write the report."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "error: arguments are not JSON"},
        {"role": "user", "content": _log(1_500, 12)},
    ]
    engine = _engine("openai", summarization={"enabled": False})
    first = engine.compact_openai(dicts, thread_id="t")
    assert not [e for e in first.result.events if isinstance(e, ContextOverBudget)]
    assert [e for e in first.result.events if isinstance(e, MessageOffloaded)]
    sent = first.messages
    assert len(str(sent)) < len(str(dicts)) // 4
    assert sent[0] == dicts[0]
    files = _files(engine.workspace)
    again = engine.compact_openai(sent, thread_id="t")
    assert again.messages == sent and _files(engine.workspace) == files
    restored = resolve_pointers(first.result.messages, engine.workspace, thread_id="t")
    (call,) = restored[1].invalid_tool_calls  # type: ignore[attr-defined]
    assert call["args"] == arguments
    assert restored[1].additional_kwargs["tool_calls"][0]["function"]["arguments"] == arguments
    assert restored[3].content == dicts[3]["content"]


_texts = st.integers(min_value=0, max_value=2_500)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.tuples(st.sampled_from(["user", "ai", "botched"]), _texts), max_size=6),
    seed=st.integers(0, 10_000),
)
def test_any_oversized_history_fits_reads_back_and_keeps_the_user_s_words_longest(
    sizes: list[tuple[str, int]], seed: int
) -> None:
    messages: list[BaseMessage] = [HumanMessage(_words(40, seed), id="task")]
    for n, (kind, words) in enumerate(sizes):
        text = _words(words, seed + n + 1)
        if kind == "user":
            messages.append(HumanMessage(text, id=f"m{n}"))
        elif kind == "ai":
            messages.append(AIMessage(text, id=f"m{n}"))
        else:
            call = invalid_tool_call(name="t", args=text, id=f"c{n}", error="not JSON")
            messages.append(AIMessage("", id=f"m{n}", invalid_tool_calls=[call]))
    engine = _engine(f"any-{seed}-{sizes}", summarization={"enabled": False})
    kept = _compact_twice(engine, messages)
    changed = {m.id for m, k in zip(messages, kept, strict=True) if m != k}
    # no user message moved while a text of the model that is worth moving stayed
    if any(isinstance(m, HumanMessage) and m.id in changed for m in messages):
        for m, k in zip(messages, kept, strict=True):
            if isinstance(m, AIMessage) and m == k:
                big = [str(m.content), *(str(c["args"]) for c in m.invalid_tool_calls)]
                assert max(engine.token_counter.count_text(t) for t in big) < 400
    assert kept[0] == messages[0] or all(
        m.id in changed for m in messages[1:] if engine.token_counter.count_message(m) >= 400
    )


def test_a_long_answer_beside_large_call_arguments_reads_back_with_both() -> None:
    content = _words(3_000, 13)
    call = {"id": "c1", "name": "write_file", "args": {"path": "/x", "content": content}}
    messages: list[BaseMessage] = [
        HumanMessage("Write it and explain.", id="task"),
        AIMessage(_words(3_000, 14), id="a1", tool_calls=[call]),
        ToolMessage("ok", tool_call_id="c1", id="r1"),
    ]
    engine = _engine("both", summarization={"enabled": False})
    kept = _compact_twice(engine, messages)
    assert isinstance(kept[1], AIMessage)
    assert str(kept[1].content).startswith("[ctxfs: assistant message moved out")
    assert kept[1].tool_calls[0]["args"]["content"] != content


def test_an_input_pointer_put_after_a_moved_text_keeps_both_records() -> None:
    workspace = Workspace("memory://oversized-layers")
    text, value = _words(50, 15), _words(50, 16)
    workspace.write_text("/transcripts/t/messages/a__content.txt", text)
    workspace.write_text("/tool_inputs/t/c1__content.txt", value)
    call = {"id": "c1", "name": "write_file", "args": {"content": value}}
    original = AIMessage(text, id="a", tool_calls=[call], additional_kwargs={"x": 1})
    moved = MovedText(
        part="content", path="/transcripts/t/messages/a__content.txt", lines=1,
        chars=len(text), tokens=1,
    )  # fmt: skip
    message = point_moved(original, moved, "[moved]")
    pointer = Pointer(
        kind="input", path="/tool_inputs/t/c1__content.txt", lines=1, chars=len(value),
        tokens=1, tool_call_id="c1", arg="content", call_index=0,
    )  # fmt: skip
    assert isinstance(message, AIMessage)
    both = point_input(message, pointer, "[input]")
    assert moved_texts(both) and input_pointers(both)
    (back,) = resolve_pointers([both], workspace)
    assert back.model_dump() == original.model_dump()
