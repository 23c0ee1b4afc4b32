"""ContextEngine.compact / acompact: examples pinned around the escalation and the summary."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Sequence
from typing import Any

import pytest
from _runs import fixed_clock
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import ValidationError

from ctxfs import (
    ArchiveFailed,
    ContextEngine,
    ContextOverBudget,
    ContextPolicy,
    KeepRecent,
    Summarization,
    Summarized,
    SummaryTrigger,
    Threshold,
    TranscriptArchive,
    Workspace,
)
from ctxfs._policy._budget import KeepWindow
from ctxfs._summary._cut import choose_cut, split_blocks
from ctxfs._summary._message import SUMMARY_TAG, is_summary, summary_state
from ctxfs._summary._pins import in_view_kind, is_pinned
from ctxfs.testing import ScriptedChatModel
from ctxfs.tools import tool_functions

_fresh = itertools.count()
NEEDLE = "ZEBRA-7731\tunique line é"


def turn(n: int, output: str = "") -> list[BaseMessage]:
    call: list[Any] = [{"name": "bash", "args": {"command": f"step {n}"}, "id": f"c{n}"}]
    return [
        HumanMessage(f"request {n}: " + "please " * 30, id=f"h{n}"),
        AIMessage(f"working on {n}", tool_calls=call, id=f"a{n}"),
        ToolMessage(output or f"output {n} " * 40, tool_call_id=f"c{n}", name="bash", id=f"t{n}"),
    ]


def history(turns: int = 12) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    for n in range(turns):
        messages += turn(n, f"first line\n{NEEDLE}\nlast line" if n == 0 else "")
    return messages


def engine(policy: ContextPolicy | None = None, ws: Workspace | None = None) -> ContextEngine:
    policy = policy or ContextPolicy(max_input_tokens=2_000)
    return ContextEngine(ws or Workspace(f"memory://c{next(_fresh)}"), policy, clock=fixed_clock)


def test_defaults_turn_on_all_three_steps() -> None:
    policy = ContextPolicy(max_input_tokens=100_000)
    assert policy.summarization.enabled
    assert policy.summarization.trigger == SummaryTrigger(fraction=0.85)
    assert policy.summarization.keep == KeepRecent(fraction=0.1)
    assert policy.summarization.trim_tokens_to_summarize == 8_000
    assert policy.summarization.model is None
    assert policy.summary_target_tokens == 85_000
    assert policy.keep_window.tokens == 10_000


def test_below_every_trigger_nothing_changes() -> None:
    messages = history(2)
    result = engine().compact(messages, thread_id="t")
    assert result.messages == messages
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert result.events == ()
    assert result.reached_target and result.reason is None


def test_negative_added_tokens_are_refused_before_the_window_is_looked_for() -> None:
    windowless = ContextEngine(Workspace(f"memory://c{next(_fresh)}"), ContextPolicy())
    for call in (windowless.compact, windowless.compact_now):
        with pytest.raises(ValueError, match="added_tokens must be 0 or more, not -1"):
            call(history(2), thread_id="t", added_tokens=-1)
    with pytest.raises(ValueError, match="does not know the model's window"):
        windowless.compact(history(2), thread_id="t")


def test_compaction_archives_then_summarizes_and_keeps_the_recent_window() -> None:
    eng = engine()
    messages = history()
    result = eng.compact(messages, thread_id="t")
    assert result.tokens_before > 2_000 * 0.85 >= result.tokens_after
    assert result.reached_target and result.target == 1_700
    system, summary, *rest = result.messages
    kept = [m for m in rest if not is_pinned(m)]
    pins = [m.content for m in rest if in_view_kind(m) == "pinned"]
    assert pins[0] == messages[1].content  # the task statement, verbatim
    assert set(pins) <= {m.content for m in messages[1::3]}  # user messages only, verbatim
    assert system is messages[0]
    assert is_summary(summary) and str(summary.content).startswith(SUMMARY_TAG)
    assert kept == messages[len(messages) - len(kept) :]
    (event,) = [e for e in result.events if isinstance(e, Summarized)]
    assert event.messages_archived == len(messages) - 1 - len(kept)
    assert event.first_index == 1 and event.source == "extractive"
    archive = TranscriptArchive(eng.workspace, "t")
    assert archive.read_all() == messages[1 : 1 + event.messages_archived]
    assert event.segment_paths == (
        archive.segments()[0].jsonl_path,
        archive.segments()[0].markdown_path,
    )
    assert summary.id == f"ctxfs-summary-{archive.directory.rsplit('/', 1)[1]}-0001"


def test_a_previous_summary_is_folded_and_segments_chain() -> None:
    eng = engine()
    first = eng.compact(history(12), thread_id="t").messages
    more = [*first, *itertools.chain.from_iterable(turn(n) for n in range(12, 24))]
    second = eng.compact(more, thread_id="t")
    summaries = [m for m in second.messages if is_summary(m)]
    assert len(summaries) == 1
    state = summary_state(summaries[0])
    assert state is not None
    assert [p.rsplit("/", 1)[1] for p in state.transcripts] == [
        "segment-0001.md",
        "segment-0002.md",
    ]
    segments = TranscriptArchive(eng.workspace, "t").segments()
    assert segments[1].start == segments[0].stop  # absolute positions in the thread
    assert "request 0" in state.intent  # the intent survives the fold


def test_planted_text_is_found_with_grep_and_read_back_after_several_compactions() -> None:
    eng = engine()
    state: list[BaseMessage] = []
    for message in history(40):
        if isinstance(message, AIMessage) and state:
            state = eng.compact(state, thread_id="t").messages
        state = [*state, message]
    assert len(TranscriptArchive(eng.workspace, "t").segments()) >= 3
    assert not any(NEEDLE in str(m.content) for m in state)
    found = eng.workspace.grep(NEEDLE, "/", fixed_strings=True, output_mode="content")
    (hit,) = found.files
    assert hit.path.endswith("segment-0001.md")
    line = hit.lines[0].line_number
    page = eng.workspace.read_lines(hit.path, offset=line - 1, limit=1)
    assert page.lines == (NEEDLE,)
    tools = {f.name: f for f in tool_functions(eng.workspace)}
    assert NEEDLE in tools["grep"](pattern="ZEBRA-7731", path="/", output_mode="content")
    assert NEEDLE in tools["read_file"](file_path=hit.path, offset=line - 1, limit=1)


def test_a_failing_archive_returns_the_input_unchanged() -> None:
    base = Workspace("memory://compact-fail")
    eng = engine(ws=base.view(read_only=["/transcripts"]))
    messages = history()
    result = eng.compact(messages, thread_id="t")
    assert result.messages == messages
    event, *rest = result.events
    assert isinstance(event, ArchiveFailed)
    assert "nothing was dropped" in event.reason
    # still over the limit: said so, with the same reason
    assert all(isinstance(e, ContextOverBudget) for e in rest)
    assert all(
        isinstance(e, ContextOverBudget) and e.reason.startswith("the transcript could not")
        for e in rest
    )
    assert not result.reached_target
    assert result.reason is not None and result.reason.startswith(
        "the transcript could not be archived"
    )


def test_the_reason_names_a_protected_window_larger_than_the_target() -> None:
    policy = ContextPolicy(max_input_tokens=2_000, summarization={"keep": {"messages": 30}})
    result = engine(policy).compact(history(), thread_id="t")
    assert not result.reached_target
    assert result.reason is not None
    assert result.reason.startswith("the protected recent window alone (keep messages=30")


def test_a_messages_trigger_fires_on_its_own() -> None:
    policy = ContextPolicy(
        max_input_tokens=100_000,
        summarization={"trigger": {"messages": 10}, "keep": {"messages": 3}},
    )
    result = engine(policy).compact(history(), thread_id="t")
    assert result.summarized
    # the system prompt and the summary, the task statement's pin and the in-view message
    # (pointers to the later requests: half of the trigger has no room left for them), and
    # the last 3 messages
    assert len(result.messages) == 2 + 2 + 3
    assert [m.id for m in result.messages[-3:]] == ["h11", "a11", "t11"]
    assert result.messages[2].content == history()[1].content


def test_a_messages_trigger_with_a_token_keep_summarizes_once_per_half_trigger() -> None:
    # the review's reproduction: 2,000 tokens of small messages hold more than 40 messages
    policy = ContextPolicy(
        max_input_tokens=100_000,
        summarization={"trigger": {"messages": 40}, "keep": {"tokens": 2_000}},
    )
    eng = engine(policy)
    state: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys")]
    summarized_at: list[int] = []
    for n in range(60):
        for message in turn(n, output=f"ok {n}"):
            if isinstance(message, AIMessage):
                result = eng.compact(state, thread_id="t")
                if result.summarized:
                    summarized_at.append(n)
                    assert len(result.messages) <= 20  # half of the trigger
                state = result.messages
            state = [*state, message]
    assert len(summarized_at) >= 3
    assert all(b - a >= 20 // 3 for a, b in itertools.pairwise(summarized_at))  # 3 per turn
    assert len(TranscriptArchive(eng.workspace, "t").segments()) == len(summarized_at)


def test_the_window_is_narrowed_to_half_the_messages_trigger_but_keeps_the_latest_block() -> None:
    messages: list[BaseMessage] = [SystemMessage("s", id="sys")]
    for n in range(6):
        messages += turn(n)
    blocks = split_blocks(messages)
    counts = [1] * len(messages)
    assert choose_cut(blocks, counts, KeepWindow(tokens=1_000)) == 1
    assert choose_cut(blocks, counts, KeepWindow(tokens=1_000), at_most=4) == 16  # 2 left
    assert choose_cut(blocks, counts, KeepWindow(tokens=1_000), at_most=1) == 17  # latest
    assert choose_cut(blocks, counts, KeepWindow(messages=0), at_most=4) == 19  # keeps none
    assert choose_cut(blocks, counts, KeepWindow(messages=1), at_most=4) == 17  # not wider


def _model_policy(model: Any) -> ContextPolicy:
    return ContextPolicy(
        max_input_tokens=2_000,
        summarization={"model": model, "trim_tokens_to_summarize": 300},
    )


def test_a_model_writes_the_summary_from_a_bounded_prompt() -> None:
    seen: list[Sequence[BaseMessage]] = []

    def reply(messages: Sequence[BaseMessage]) -> str:
        seen.append(messages)
        return "## Session intent\nDo requests.\n\n## Summary\nDid 0-8.\n\n## Next steps\nGo on."

    eng = engine(_model_policy(ScriptedChatModel(responses=[reply])))
    result = eng.compact(history(), thread_id="t")
    summary = result.messages[1]
    assert "## Summary\nDid 0-8." in str(summary.content)
    assert "## Artifacts\n" in str(summary.content)
    (event,) = [e for e in result.events if isinstance(e, Summarized)]
    assert event.source == "model" and event.model_error is None
    (prompt,) = seen
    text = str(prompt[-1].content)
    assert "request 0" in text  # the beginning is kept
    assert eng.token_counter.count_text(text) < 300 + 400  # trimmed (+ the prompt itself)


def test_a_failing_or_empty_model_falls_back_to_the_extractive_summary() -> None:
    eng = engine(_model_policy(FakeListChatModel(responses=["  "])))
    result = eng.compact(history(), thread_id="t")
    (event,) = [e for e in result.events if isinstance(e, Summarized)]
    assert event.source == "extractive"
    assert event.model_error == "the summary model answered nothing"
    assert "The user's first request: request 0" in str(result.messages[1].content)


def test_acompact_gives_the_same_result_as_compact() -> None:
    sync = engine(_model_policy(FakeListChatModel(responses=["## Summary\nS"])))
    asyn = engine(_model_policy(FakeListChatModel(responses=["## Summary\nS"])))
    one = sync.compact(history(), thread_id="t")
    two = asyncio.run(asyn.acompact(history(), thread_id="t"))
    assert one.messages == two.messages
    assert one.events == two.events


def test_a_rerun_reuses_the_recorded_summary_without_asking_the_model() -> None:
    calls: list[int] = []

    def reply(messages: Sequence[BaseMessage]) -> str:
        calls.append(len(messages))
        return f"## Summary\ncall {len(calls)}"

    eng = engine(_model_policy(ScriptedChatModel(responses=[reply, reply])))
    one = eng.compact(history(), thread_id="t")
    two = eng.compact(history(), thread_id="t")  # same input, e.g. after a crash-resume
    assert two.messages == one.messages
    assert [e.source for e in two.events if isinstance(e, Summarized)] == ["index"]
    assert len(calls) == 1


# -- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"trigger": {}}, "set at least one of fraction"),
        ({"trigger": {"fraction": 85}}, "write fraction=0.85"),
        ({"trigger": {"messages": 0}}, "messages must be at least 1"),
        ({"keep": {"messages": 5, "tokens": 10}}, "set exactly one of messages"),
        ({"keep": {"fraction": 0.9}}, "is not smaller than the target"),
        (
            {"trigger": {"messages": 40}, "keep": {"messages": 40}},
            "keep (messages=40) must be smaller than trigger messages=40, or every new "
            "message would fire the trigger again; a summary keeps at most half of "
            "trigger.messages (system prompt and summary included), so write e.g. "
            "keep={'messages': 18}",
        ),
        ({"trim_tokens_to_summarize": 10}, "at least 100 tokens"),
        ({"prompt": "Summarize."}, "must contain the placeholder {messages}"),
        ({"model": "gpt-4o"}, "must be a langchain chat model"),
        ({"triger": {"fraction": 0.5}}, "did you mean 'trigger'?"),
    ],
)
def test_invalid_summarization_settings_say_what_to_write(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        ContextPolicy(max_input_tokens=100_000, summarization=settings)


def test_settings_objects_and_dicts_are_equivalent() -> None:
    a = ContextPolicy(
        max_input_tokens=10_000,
        summarization=Summarization(
            trigger=SummaryTrigger(tokens=9_000, messages=50), keep=KeepRecent(messages=10)
        ),
    )
    b = ContextPolicy(
        max_input_tokens=10_000,
        summarization={"trigger": {"tokens": 9_000, "messages": 50}, "keep": {"messages": 10}},
    )
    assert a == b
    assert a.summary_target_tokens == 9_000
    assert a.summarization.trigger.describe() == "tokens=9000, messages=50"
    assert Threshold(fraction=0.5).resolve(10) == 5
