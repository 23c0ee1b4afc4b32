"""Offloading of tool results and tool inputs: exact texts, naming, create-only, fail-safe."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _histories import snapshot
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs import (
    BackendError,
    ContextEngine,
    ContextPolicy,
    OffloadFailed,
    ToolInputOffloaded,
    ToolResultOffloaded,
    Workspace,
    pointer_of,
    resolve_pointers,
)
from ctxfs._layout import candidate_paths, input_path, is_json_text, result_path, safe_name
from ctxfs._messages import offloadable_text
from ctxfs._pointers._pointer import RESULT_TAG, Pointer, input_pointers, render_result
from ctxfs.tools import tool_functions

THREAD = "thread-1"
BIG = "".join(f"line {i}: " + "data " * 10 + "\n" for i in range(400))


def _stats(path: str, text: str, tokens: int) -> Pointer:
    return Pointer(kind="result", path=path, lines=text.count("\n"), chars=len(text), tokens=tokens)


def _policy(**results: Any) -> ContextPolicy:
    return ContextPolicy(
        max_input_tokens=100_000,
        tool_results={"threshold": {"tokens": 100}, **results},
        tool_inputs={"trigger": {"tokens": 10}, "keep_messages": 2, "min_chars": 50},
    )


def _result(content: Any = BIG, *, call_id: str = "call_abc", name: str = "bash") -> ToolMessage:
    return ToolMessage(
        content=content,
        tool_call_id=call_id,
        name=name,
        id="msg-7",
        status="error",
        artifact={"exit_code": 2},
    )


# -- pointer texts (what the model reads) --------------------------------------------------


def test_result_pointer_text_is_pinned() -> None:
    engine = ContextEngine(
        Workspace("memory://pin"), _policy(preview_lines=2, preview_line_chars=20)
    )
    text = "first line\n" + "y" * 30 + "\nthird\n" + "filler words " * 100 + "\n"
    out = engine.offload_tool_result(_result(text), thread_id=THREAD)
    path = "/tool_results/thread-1/call_abc.txt"
    assert out.content == (
        f"[ctxfs: tool result offloaded] Too large to keep: 4 lines, 216 tokens, saved to {path}.\n"
        "Lines 1-2:\n"
        "first line\n"
        "yyyyyyyyyyyyyyyyyyyy… [10 more characters]\n"
        "[read_file it from offset=1 for the rest, or grep it]"
    )
    assert isinstance(out.content, str)
    assert out.content.startswith(RESULT_TAG + " ")
    held = pointer_of(out)
    assert held is not None and held.path == path
    assert engine.workspace.read_text(path) == text


def test_input_pointer_text_is_pinned() -> None:
    engine = ContextEngine(Workspace("memory://pin2"), _policy())
    content = "print('hello')\n" * 40
    history = _write_history(content, call_id="call_w")
    result = engine.offload_tool_inputs(history, thread_id=THREAD)
    path = "/tool_inputs/thread-1/call_w__content.txt"
    assert result.messages[1].tool_calls[0]["args"]["content"] == (  # type: ignore[attr-defined]
        f"[ctxfs: tool input offloaded] 600 characters, saved byte-exact to {path}; read_file it."
    )


# -- naming --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ids",
    [
        ["", " "],
        ["call/1", "call_1", "call 1", "call:1"],  # equal after sanitizing
        ["a" * 300, "a" * 300 + "b", "a" * 299],  # equal after truncation
        ["工具调用", "工具调", "ツール", "🙂"],  # unicode and CJK
        ["..", ".", "../../etc/passwd"],
    ],
)
def test_names_never_collide(ids: list[str]) -> None:
    names = [safe_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    for name in names:
        assert all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
        assert not name.startswith(".")
        assert len(name) <= 40 + 17
    assert safe_name("") == safe_name("")  # deterministic


def test_thread_ids_are_sanitized_and_hashed() -> None:
    a = result_path("../etc", "c", "x")
    b = result_path("/etc", "c", "x")
    assert a != b
    assert a.startswith("/tool_results/_etc-")
    assert a.count("/") == 3


@pytest.mark.parametrize(
    ("text", "ext"),
    [
        ('{"a": 1}', "json"),
        (" [1, 2]\n", "json"),
        ('"just a string"', "txt"),
        ("42", "txt"),
        ("{not json", "txt"),
        ("", "txt"),
    ],
)
def test_extension_follows_content(text: str, ext: str) -> None:
    assert result_path(THREAD, "c", text).endswith(f".{ext}")
    assert input_path(THREAD, "c", "content", text).endswith(f".{ext}")
    assert is_json_text(text) is (ext == "json")


def test_candidate_names_are_deterministic() -> None:
    assert list(candidate_paths("/r/t/a.txt", limit=3)) == [
        "/r/t/a.txt",
        "/r/t/a.2.txt",
        "/r/t/a.3.txt",
    ]
    assert list(candidate_paths("/r/t/a.txt", "hi", limit=2)) == [
        "/r/t/a.txt",
        "/r/t/a.8f434346648f6b96.txt",
        "/r/t/a.2.txt",
    ]


def test_a_reused_call_id_costs_one_extra_write_not_one_per_earlier_result() -> None:
    from ctxfs.testing import RecordingStore

    store = RecordingStore(Workspace("memory://reused").store)
    engine = ContextEngine(Workspace(store), _policy())
    for n in range(100):
        store.clear()
        text = f"result {n}\n" + BIG
        out = engine.offload_tool_result(_result(text, call_id="same"), thread_id=THREAD)
        held = pointer_of(out)
        assert held is not None and engine.workspace.read_text(held.path) == text
        assert store.methods().count("write") <= 2  # the first name, then the content's
    assert len(engine.workspace.ls(held.path.rsplit("/", 1)[0])) == 100


def test_odd_argument_names_are_sanitized() -> None:
    path = input_path(THREAD, "c", "../weird arg", "x")
    assert "/../" not in path
    assert path.count("/") == 3


# -- result offload -------------------------------------------------------------------------


def test_offload_preserves_ids_and_fields(workspace: Workspace) -> None:
    engine = ContextEngine(workspace, _policy())
    message = _result()
    outcome = engine.offload_tool_result_detailed(message, thread_id=THREAD)
    out = outcome.message
    assert out is not message
    assert message.content == BIG  # input not mutated
    assert (out.id, out.tool_call_id, out.name, out.status, out.artifact) == (
        "msg-7",
        "call_abc",
        "bash",
        "error",
        {"exit_code": 2},
    )
    event = outcome.event
    assert isinstance(event, ToolResultOffloaded)
    assert (event.lines, event.chars) == (400, len(BIG))
    assert event.tokens == engine.token_counter.count_text(BIG)
    assert event.tokens_after == engine.token_counter.count_text(str(out.content))
    assert workspace.read_bytes(event.path) == BIG.encode()


def test_offloading_again_is_a_no_op(workspace: Workspace) -> None:
    engine = ContextEngine(workspace, _policy())
    first = engine.offload_tool_result(_result(), thread_id=THREAD)
    files = snapshot(workspace)
    again = engine.offload_tool_result(_result(), thread_id=THREAD)  # crash-resume re-run
    assert again == first
    assert snapshot(workspace) == files
    assert engine.offload_tool_result(first, thread_id=THREAD) is first  # a pointer stays


def test_different_content_under_the_same_id_never_overwrites(workspace: Workspace) -> None:
    engine = ContextEngine(workspace, _policy())
    first = engine.offload_tool_result_detailed(_result(BIG), thread_id=THREAD).event
    second = engine.offload_tool_result_detailed(_result(BIG + "more\n"), thread_id=THREAD).event
    assert isinstance(first, ToolResultOffloaded)
    assert isinstance(second, ToolResultOffloaded)
    assert second.path == list(candidate_paths(first.path, BIG + "more\n"))[1]
    assert second.path.endswith(".txt") and second.path.count(".") == 2
    assert workspace.read_text(first.path) == BIG
    assert workspace.read_text(second.path) == BIG + "more\n"


def test_small_exempt_and_non_text_results_stay() -> None:
    engine = ContextEngine(Workspace("memory://stay"), _policy())
    small = _result("ok")
    exempt = _result(BIG, name="read_file")
    read_file = {f.name: f for f in tool_functions(engine.workspace)}["read_file"]
    for message, tool in ((small, None), (exempt, read_file)):
        outcome = engine.offload_tool_result_detailed(message, thread_id=THREAD, tool=tool)
        assert outcome.message is message and outcome.event is None
    raw = {"type": "file", "url": "http://x", "bytes": b"%PDF"}  # not JSON
    odd = _result([{"type": "text", "text": BIG}, {"type": "image", "url": "http://x"}, raw])
    outcome = engine.offload_tool_result_detailed(odd, thread_id=THREAD)
    assert outcome.message is odd  # a large result that cannot be saved says why
    assert outcome.event == OffloadFailed(
        tool_call_id="call_abc",
        reason=f"the result ({engine.token_counter.count_text(BIG):,} tokens) stays inline: "
        "block 3 has keys JSON cannot hold (Object of type bytes is not JSON serializable)",
    )
    assert snapshot(engine.workspace) == {}
    # the name alone exempts nothing: only ctxfs's own read_file pages instead
    named = engine.offload_tool_result_detailed(exempt, thread_id=THREAD)
    assert isinstance(named.event, ToolResultOffloaded)


def test_nul_characters_are_saved_as_a_stand_in_and_come_back() -> None:
    engine = ContextEngine(Workspace("memory://nul"), _policy())
    message = _result(BIG + "\x00end\x00")
    out = engine.offload_tool_result(message, thread_id=THREAD)
    held = pointer_of(out)
    assert held is not None
    assert engine.workspace.read_text(held.path) == BIG + "\u2400end\u2400"  # readable
    assert resolve_pointers([out], engine.workspace)[0] == message


def test_text_blocks_with_other_keys_are_saved_and_come_back_exactly() -> None:
    engine = ContextEngine(Workspace("memory://keys"), _policy())
    blocks: list[str | dict[str, Any]] = [
        {"id": "lc_1", "type": "text", "text": BIG},
        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "c", "annotations": [{"type": "citation", "start": 0}]},
    ]
    out = engine.offload_tool_result(_result(blocks), thread_id=THREAD)
    held = pointer_of(out)
    assert held is not None
    assert engine.workspace.read_text(held.path) == BIG + "bc"
    back = resolve_pointers([out], engine.workspace)[0].content
    assert back == blocks
    assert [list(b) for b in back] == [list(b) for b in blocks]  # keys in their order


def test_all_text_blocks_are_offloaded_as_their_text() -> None:
    engine = ContextEngine(Workspace("memory://blocks"), _policy())
    blocks = [{"type": "text", "text": BIG}, "tail\n"]
    assert offloadable_text(blocks) == BIG + "tail\n"
    out = engine.offload_tool_result(_result(blocks), thread_id=THREAD)
    held = pointer_of(out)
    assert held is not None
    assert engine.workspace.read_text(held.path) == BIG + "tail\n"
    # the blocks come back laid out as they were
    assert resolve_pointers([out], engine.workspace)[0].content == blocks


# A result just over the threshold, made of a few long lines: its preview alone (10 lines of
# up to 200 characters) costs about as much as the result, so its pointer would be larger.
JUST_OVER = "".join(f"row {i} " + "abcdefghijklmnopqrstuvwxyz" * 12 + "\n" for i in range(10))


def test_a_pointer_never_costs_more_than_the_result() -> None:
    engine = ContextEngine(
        Workspace("memory://bigger"), _policy(threshold={"tokens": 200}, preview_lines=10)
    )
    counter = engine.token_counter
    assert counter.count_text(JUST_OVER) == 210
    message = _result(JUST_OVER)
    first = result_path(THREAD, "call_abc", JUST_OVER)
    pointer = render_result(
        _stats(first, JUST_OVER, 210), JUST_OVER, preview_lines=10, preview_line_chars=200
    )
    assert counter.count_text(pointer) == 278  # what offloading would have put in its place
    for _ in range(2):  # and again: the same decision, still nothing written
        outcome = engine.offload_tool_result_detailed(message, thread_id=THREAD)
        assert outcome.message is message
        assert outcome.event is None
        assert snapshot(engine.workspace) == {}


def test_a_smaller_pointer_for_the_same_result_is_used() -> None:
    engine = ContextEngine(
        Workspace("memory://smaller"), _policy(threshold={"tokens": 200}, preview_lines=2)
    )
    outcome = engine.offload_tool_result_detailed(_result(JUST_OVER), thread_id=THREAD)
    event = outcome.event
    assert isinstance(event, ToolResultOffloaded)
    assert event.tokens_after < event.tokens == 210
    assert engine.workspace.read_text(event.path) == JUST_OVER


def test_a_pointer_grown_by_a_name_collision_keeps_the_result_inline() -> None:
    # The pointer is sized with the first-choice path; when that name is taken, the next one
    # (named by the content's digest) makes it longer, and with this preview that tips it over.
    policy = _policy(threshold={"tokens": 200}, preview_lines=6, preview_line_chars=163)
    counter = ContextEngine(Workspace("memory://probe"), policy).token_counter
    first = result_path(THREAD, "call_abc", JUST_OVER)
    second = list(candidate_paths(first, JUST_OVER, limit=2))[1]

    def cost(path: str) -> int:
        pointer = render_result(
            _stats(path, JUST_OVER, 210), JUST_OVER, preview_lines=6, preview_line_chars=163
        )
        return counter.count_text(pointer)

    assert (cost(first), cost(second)) == (202, 213)
    workspace = Workspace("memory://collide")
    workspace.write_text(first, "someone else's result")
    engine = ContextEngine(workspace, policy)
    message = _result(JUST_OVER)
    for _ in range(2):  # and again: the same decision, and the copy is not written twice
        outcome = engine.offload_tool_result_detailed(message, thread_id=THREAD)
        assert outcome.message is message
        assert outcome.event is None
    # the copy written before the pointer was re-sized stays: unreferenced but harmless
    assert workspace.read_text(second) == JUST_OVER
    assert set(snapshot(workspace)) == {first, second}


def test_disabled_result_offload() -> None:
    engine = ContextEngine(Workspace("memory://off"), _policy(enabled=False))
    message = _result()
    assert engine.offload_tool_result(message, thread_id=THREAD) is message


class _BrokenWorkspace(Workspace):
    """A real memory workspace whose writes fail, as a full or unreachable store would."""

    def write_bytes(self, path: str, data: bytes, *, create_only: bool = False) -> Any:
        raise BackendError("the storage could not be reached", path=path)


class _CorruptingWorkspace(Workspace):
    """A real memory workspace that stores something else than it was given."""

    def write_bytes(self, path: str, data: bytes, *, create_only: bool = False) -> Any:
        return super().write_bytes(path, data[:-1], create_only=create_only)


@pytest.mark.parametrize(
    ("workspace_class", "reason"),
    [
        (_BrokenWorkspace, "could not write /tool_results/"),
        (_CorruptingWorkspace, "did not read back identical after writing"),
    ],
)
def test_failed_writes_keep_the_content_inline(
    workspace_class: type[Workspace], reason: str
) -> None:
    engine = ContextEngine(workspace_class("memory://broken"), _policy())
    message = _result()
    outcome = engine.offload_tool_result_detailed(message, thread_id=THREAD)
    assert outcome.message is message
    assert isinstance(outcome.event, OffloadFailed)
    assert reason in outcome.event.reason
    assert outcome.event.tool_call_id == "call_abc"


# -- input offload -------------------------------------------------------------------------


def _write_history(content: str, *, call_id: str = "call_w") -> list[BaseMessage]:
    call = {"name": "write_file", "args": {"file_path": "/src/app.py", "content": content}}
    return [
        HumanMessage("write the app", id="h1"),
        AIMessage(content="", tool_calls=[{**call, "id": call_id}], id="a1"),
        ToolMessage("written", tool_call_id=call_id, name="write_file", id="t1"),
        HumanMessage("thanks", id="h2"),
        AIMessage("done", id="a2"),
    ]


def test_input_offload_replaces_old_arguments_only() -> None:
    engine = ContextEngine(Workspace("memory://in"), _policy())
    content = "x = 1\n" * 100
    recent = AIMessage(
        content="",
        tool_calls=[{"name": "write_file", "args": {"content": content}, "id": "new"}],
        id="a3",
    )
    history = [*_write_history(content), recent]
    result = engine.offload_tool_inputs(history, thread_id=THREAD)
    assert [type(e) for e in result.events] == [ToolInputOffloaded]
    event = result.events[0]
    assert isinstance(event, ToolInputOffloaded)
    assert (event.tool_call_id, event.arg, event.target_path) == (
        "call_w",
        "content",
        "/src/app.py",
    )
    assert engine.workspace.read_text(event.path) == content
    assert result.messages[-1] is history[-1]  # inside the keep window
    assert result.messages[0] is history[0]
    assert result.messages[1].id == "a1"
    assert history[1].tool_calls[0]["args"]["content"] == content  # type: ignore[attr-defined]
    assert result.tokens_after < result.tokens_before
    again = engine.offload_tool_inputs(result.messages, thread_id=THREAD)
    assert again.messages == result.messages
    assert again.events == ()


def test_below_the_trigger_nothing_moves() -> None:
    policy = ContextPolicy(max_input_tokens=100_000)
    engine = ContextEngine(Workspace("memory://below"), policy)
    history = _write_history("x = 1\n" * 1_000)
    result = engine.offload_tool_inputs(history, thread_id=THREAD)
    assert result.messages == history
    assert result.events == ()
    assert result.tokens_before == result.tokens_after


def test_short_arguments_stay_inline() -> None:
    engine = ContextEngine(Workspace("memory://short"), _policy())
    history = _write_history("tiny")
    assert engine.offload_tool_inputs(history, thread_id=THREAD).events == ()


def test_arguments_cheaper_than_their_pointer_stay_inline() -> None:
    engine = ContextEngine(Workspace("memory://cheap"), _policy())
    content = "a" * 200  # over min_chars=50, but only a few tokens
    history = _write_history(content)
    assert engine.token_counter.count_text(content) < 60
    result = engine.offload_tool_inputs(history, thread_id=THREAD)
    assert result.messages == history
    assert result.events == ()
    assert snapshot(engine.workspace) == {}


def test_provider_copies_of_the_arguments_stay_consistent() -> None:
    engine = ContextEngine(Workspace("memory://prov"), _policy())
    content = "y = 2\n" * 50
    args = {"file_path": "/b.py", "content": content}
    message = AIMessage(
        content=[
            {"type": "text", "text": "Writing."},
            {"type": "tool_use", "id": "c9", "name": "write_file", "input": args},
        ],
        tool_calls=[{"name": "write_file", "args": args, "id": "c9"}],
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "c9",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": json.dumps(args)},
                }
            ]
        },
        id="a1",
    )
    history: list[BaseMessage] = [message, HumanMessage("1"), HumanMessage("2")]
    out = engine.offload_tool_inputs(history, thread_id=THREAD).messages[0]
    assert isinstance(out, AIMessage)
    pointer = out.tool_calls[0]["args"]["content"]
    assert input_pointers(out)[0, "content"].path.startswith("/tool_inputs/")
    assert out.content[1]["input"]["content"] == pointer  # type: ignore[index]
    raw = out.additional_kwargs["tool_calls"][0]["function"]["arguments"]
    assert json.loads(raw) == {"file_path": "/b.py", "content": pointer}
    assert message.content[1]["input"]["content"] == content  # type: ignore[index]


def test_failed_input_write_keeps_the_argument() -> None:
    engine = ContextEngine(_BrokenWorkspace("memory://broken-in"), _policy())
    history = _write_history("z" * 500)
    result = engine.offload_tool_inputs(history, thread_id=THREAD)
    assert result.messages == history
    assert len(result.events) == 1
    event = result.events[0]
    assert isinstance(event, OffloadFailed)
    assert (event.tool_call_id, event.arg) == ("call_w", "content")


def test_any_large_string_argument_of_any_tool_is_offloaded_unless_args_narrows_it() -> None:
    heredoc = "cat > run.sh <<'EOF'\n" + "echo step\n" * 400 + "EOF"
    call: Any = {"name": "bash", "args": {"command": heredoc, "timeout": 30}, "id": "b1"}
    history: list[BaseMessage] = [
        AIMessage("", tool_calls=[call], id="a1"),
        ToolMessage("ok", tool_call_id="b1", name="bash"),
        HumanMessage("1"),
        HumanMessage("2"),
    ]
    engine = ContextEngine(Workspace("memory://generic"), _policy())
    out = engine.offload_tool_inputs(history, thread_id=THREAD)
    (event,) = out.events
    assert isinstance(event, ToolInputOffloaded) and (event.tool_name, event.arg) == (
        "bash",
        "command",
    )
    moved = out.messages[0]
    assert isinstance(moved, AIMessage) and moved.tool_calls[0]["args"]["timeout"] == 30
    assert resolve_pointers(out.messages, engine.workspace)[0].tool_calls == history[0].tool_calls  # type: ignore[attr-defined]
    narrowed = ContextPolicy(
        max_input_tokens=100_000,
        tool_inputs={
            "trigger": {"tokens": 10},
            "keep_messages": 2,
            "min_chars": 50,
            "args": {"bash": ["stdin"]},
        },
    )
    untouched = ContextEngine(Workspace("memory://narrow"), narrowed)
    assert untouched.offload_tool_inputs(history, thread_id=THREAD).events == ()
