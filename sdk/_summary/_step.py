"""The summarization step: cut, archive, summarize; once for sync and async.

:func:`summarize_steps` is a generator holding all of the logic. It yields only when it needs
the summary model, with the prompt, and receives ``(answer, error)``; the engine's
``compact`` answers with :func:`ctxfs._summary._body.call_model` and ``acompact`` with
:func:`ctxfs._summary._body.acall_model`. Nothing else differs between the two. It takes the
values it needs (the policy's budget, token counter, archive), never the engine.

1. Choose the cut on block boundaries (see :mod:`ctxfs._summary._cut`) so that the protected
   recent window stays, and drop the messages between the prefix (system prompt and previous
   summary) and the cut. With a ``messages`` trigger the window is narrowed so that the
   result holds at most half of ``trigger.messages``
   (:meth:`~ctxfs._policy._budget.Budget.summary_message_room`): each summary then buys at
   least that many new messages, instead of firing again on every turn.
2. Archive them (:class:`ctxfs.TranscriptArchive`): written and read back before anything is
   dropped. On any archive failure nothing is dropped and the outcome says why.
3. Summarize (model or extractive), record the summary in the index, and return
   ``[system..., summary, in view..., kept...]``, where *in view* is what
   :mod:`ctxfs._summary._pins` puts back: the user's words verbatim, the plan, the notes.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from ctxfs._archive._segment import ArchiveSegment
from ctxfs._archive._transcripts import ArchiveError, TranscriptArchive
from ctxfs._errors import WorkspaceError
from ctxfs._events import Summarized
from ctxfs._layout import safe_name
from ctxfs._pointers._moved import moved_texts, resolve_moved
from ctxfs._policy._budget import Budget
from ctxfs._policy._settings import ContextPolicy
from ctxfs._summary._body import ModelAnswer, extractive_body, format_prompt, render_for_model
from ctxfs._summary._cut import choose_cut, prefix_end, split_blocks
from ctxfs._summary._message import (
    SummaryState,
    build_summary_message,
    next_state,
    summary_state,
)
from ctxfs._summary._pins import (
    Candidate,
    Earlier,
    in_view_message,
    notes_text,
    recalled,
    render_plan,
    select_pins,
    user_candidates,
)
from ctxfs._tokens import TokenCounter
from ctxfs._workspace._workspace import Workspace

__all__ = ["SummaryOutcome", "next_summary", "summarize_steps", "summary_message_id"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryOutcome:
    """What the summarization step did.

    Attributes:
        messages: The new history (the input when nothing was summarized).
        event: What was archived and summarized, or ``None``.
        failed: Why the archive could not be written (nothing was dropped), or ``None``.
        why_not: Why nothing could be summarized, or why the result is still over the
            target, or ``None``.
        repairs: What was wrong with the transcript index and rebuilt.
    """

    messages: list[BaseMessage]
    event: Summarized | None = None
    failed: str | None = None
    why_not: str | None = None
    repairs: tuple[str, ...] = ()


def summary_message_id(thread_id: str, segment_number: int) -> str:
    """Returns the id of the summary that replaces a segment: stable across re-runs."""
    return f"ctxfs-summary-{safe_name(thread_id)}-{segment_number:04d}"


def summarize_steps(
    messages: Sequence[BaseMessage],
    *,
    budget: Budget[ContextPolicy],
    counter: TokenCounter,
    archive: TranscriptArchive,
    thread_id: str,
    tokens: int,
    fixed: int = 0,
    plan: Sequence[Mapping[str, Any]] | str | None = None,
    notes: tuple[str, str] | None = None,
    at_least: int = 0,
    asked: bool = False,
) -> Generator[str, ModelAnswer, SummaryOutcome]:
    """Summarizes ``messages``; yields a prompt whenever the summary model must be asked.

    Call it when a summarization trigger fires.

    Args:
        messages: The history; never mutated.
        budget: The policy's numbers for the window (its settings: ``budget.policy``).
        counter: Counts the messages (its per-message cache answers).
        archive: The thread's transcript archive.
        thread_id: The conversation (names the summary message).
        tokens: Tokens of ``messages``.
        fixed: Tokens of the parts of the request sent apart from the messages (a system
            message, tool schemas): the target holds for the whole request.
        plan: The live todo state, put back after the summary (see
            :mod:`ctxfs._summary._pins`); ``None`` when there is none.
        notes: The agent's notes file, ``(path, text)``, put back after the plan.
        at_least: Summarize only if the messages to archive hold at least this many tokens
            (a compaction asked for now, not by a trigger).
        asked: The caller asked for this summary (a forced compaction, ``compact_now``).
            Otherwise a summary that cannot help is not made and nothing is archived: when
            the part it keeps is alone over the request limit, or when a first summary fired
            by tokens would replace no more than it adds (:func:`_least_cost`).

    Returns:
        (as the generator's return value) The :class:`SummaryOutcome`.
    """
    policy = budget.policy
    settings = policy.summarization
    current = list(messages)
    counts = [counter.count_message(m) for m in current]
    blocks = split_blocks(current)
    start = prefix_end(blocks)
    system_end = blocks[0].stop if blocks and blocks[0].kind == "system" else 0
    message_room = room = budget.summary_message_room(system_end)
    if room is not None and policy.pinning.enabled and room >= 4:
        room -= 2  # the task statement's pin and the in-view message
    cut = choose_cut(blocks, counts, budget.keep_window, at_most=room)
    if cut <= start:
        return SummaryOutcome(
            messages=current,
            why_not=(
                f"the protected recent window (keep {settings.keep.describe()}) holds every "
                f"message after the system prompt and summary ({sum(counts[start:]):,} tokens)"
            ),
        )

    if sum(counts[start:cut]) < at_least:
        return SummaryOutcome(
            messages=current,
            why_not=(
                f"only {sum(counts[start:cut]):,} tokens lie outside the protected recent "
                f"window (keep {settings.keep.describe()}); a summary is worth it from "
                f"{at_least:,}"
            ),
        )
    kept_alone = fixed + sum(counts[:system_end]) + sum(counts[cut:])
    if not asked and kept_alone > budget.request_limit:
        # No summary can bring this request within its limit: archiving would only write a
        # segment for a request that stays over it (and a summary may cost more than the
        # little before the cut). What is over is said instead.
        system = [*counts[:system_end], fixed]
        return SummaryOutcome(messages=current, why_not=_why_over(budget, system, 0, counts[cut:]))
    if not asked and start == system_end and not budget.summary_fires(0, len(current)):
        # A first summary fired by tokens must free more than it costs, or each compaction
        # would archive the little before the recent window only to hold the request higher.
        costs = _least_cost(budget, counter, current[start:cut], thread_id, archive.directory)
        if sum(counts[start:cut]) <= costs:
            return SummaryOutcome(
                messages=current,
                why_not=(
                    f"only {sum(counts[start:cut]):,} tokens lie outside the protected recent "
                    f"window (keep {settings.keep.describe()}), no more than a summary of "
                    f"them would take ({costs:,})"
                ),
            )
    previous = summary_state(current[system_end]) if start > system_end else None
    earlier = current[system_end + 1 : start]  # what the previous summary put back
    dropped = current[start:cut]
    first_index = previous.next_index if previous is not None else start
    try:
        # read once; write_segment and commit share it
        index = archive.recent(expected=previous.transcripts if previous else ())
    except ArchiveError as exc:
        return SummaryOutcome(messages=current, failed=str(exc), repairs=archive.repairs)

    def assemble(summary: BaseMessage, segment: str, segment_start: int) -> list[BaseMessage]:
        """The summarized history: ``summary``, what it puts back, the recent window."""
        in_view = _in_view(
            budget,
            counter,
            thread_id=thread_id,
            dropped=dropped,
            earlier=earlier,
            first_index=first_index,
            segment=segment,
            segment_start=segment_start,
            always=fixed + sum(counts[:system_end]) + counter.count_message(summary),
            kept=sum(counts[cut:]),
            free_messages=_free_messages(message_room, len(current) - cut, cut - system_end - 1),
            room_messages=_room_left(message_room, len(current) - cut),
            plan=plan,
            notes=notes,
            read_segment=lambda path: _archived(archive, path),
            as_written=lambda message: _as_written(message, archive.workspace),
        )
        return [*current[:system_end], summary, *in_view, *current[cut:]]

    if not asked and settings.model is None:
        # Without a model the summary is known before anything is archived: one that cannot
        # help is not made. Folded into a previous summary and fired by tokens, it must make
        # the request smaller (or each compaction would fold in a little more only to hold
        # the request higher; a first one is weighed above, its pins being what it is for);
        # fired by any trigger, it must not leave the request over its limit and no smaller.
        prospect = _prospect(archive, index, thread_id, previous, dropped, first_index, assemble)
        # counted one by one: the history's own record (keyed by its first message) is kept
        added = prospect[system_end : len(prospect) - (len(current) - cut)]
        would_be = sum(counts[:system_end]) + sum(map(counter.count_message, added))
        would_be += sum(counts[cut:])
        now = sum(counts)
        by_tokens = previous is not None and not budget.summary_fires(0, len(current))
        beyond = would_be + fixed > budget.request_limit and would_be >= now
        if (by_tokens and would_be >= now) or beyond:
            return SummaryOutcome(
                messages=current,
                why_not=(
                    f"{sum(counts[start:cut]):,} tokens lie outside the protected recent window "
                    f"(keep {settings.keep.describe()}); summarized, the request would hold "
                    f"{would_be + fixed:,} tokens, against {now + fixed:,} now"
                    + (f" and a limit of {budget.request_limit:,}" if beyond else "")
                ),
            )
    try:
        segment, committed = archive.write_segment(
            dropped, start=first_index, tokens=sum(counts[start:cut]), committed=index
        )
    except ArchiveError as exc:
        return SummaryOutcome(messages=current, failed=str(exc), repairs=archive.repairs)

    message_id = summary_message_id(thread_id, segment.number)
    reused = archive.summary_of(segment) if committed else None
    between = archive.continued(segment, index) if previous is not None else ()
    if previous is not None and between:  # the branch's segments that held the first ones
        count = previous.segment_count + len(between)
        previous = replace(previous, transcripts=(*previous.transcripts, *between), segments=count)
    model_error: str | None = None
    if isinstance(reused, HumanMessage) and reused.id == message_id:
        summary, source = reused, "index"
    else:
        state, summary = _extractive(
            archive, thread_id, previous, dropped, first_index, segment.number,
            segment.markdown_path,
        )  # fmt: skip
        body: str | None = None
        if settings.model is not None:
            rendered = render_for_model(
                dropped,
                previous=previous,
                counter=counter,
                trim_tokens=settings.trim_tokens_to_summarize,
            )
            body, model_error = yield format_prompt(settings.prompt, rendered)
        if body is not None:
            answered = build_summary_message(
                body=body,
                message_id=message_id,
                state=state,
                first_index=first_index,
                transcript_dir=archive.directory,
                source="model",
            )
            # A model may answer far longer than asked: a summary over its share of the room
            # would hold every later request over the window (and fire again each turn).
            share = _summary_share(budget, fixed + sum(counts[:system_end]) + sum(counts[cut:]))
            size = counter.count_message(answered)
            if size > share and counter.count_message(summary) < size:
                body = None  # the extractive summary stands in
                model_error = (
                    f"the summary model's answer ({size:,} tokens) does not fit the "
                    f"{max(share, 0):,} tokens a summary may take here; the extractive "
                    "summary stands in"
                )
            else:
                summary = answered
        source = "model" if body is not None else "extractive"
        try:
            final = archive.commit(segment, summary=summary, committed=index)
        except ArchiveError as exc:
            return SummaryOutcome(messages=current, failed=str(exc), repairs=archive.repairs)
        recorded = archive.summary_of(final)
        if isinstance(recorded, HumanMessage) and recorded.id == message_id:
            summary = recorded  # committed first by an earlier run or a twin writer

    summarized = assemble(summary, segment.jsonl_path, segment.start)
    after = counter.count_messages(summarized)
    event = Summarized(
        segment_paths=(segment.jsonl_path, segment.markdown_path),
        messages_archived=len(dropped),
        first_index=first_index,
        tokens_before=tokens,
        tokens_after=after,
        summary_chars=len(str(summary.content)),
        source=source,
        model_error=model_error,
    )
    over = None
    if after + fixed > budget.summary_target:
        system = [*counts[:system_end], fixed]
        over = _why_over(budget, system, counter.count_message(summary), counts[cut:])
    return SummaryOutcome(messages=summarized, event=event, why_not=over, repairs=archive.repairs)


def _prospect(
    archive: TranscriptArchive,
    index: Sequence[ArchiveSegment],
    thread_id: str,
    previous: SummaryState | None,
    dropped: Sequence[BaseMessage],
    first_index: int,
    assemble: Callable[[BaseMessage, str, int], list[BaseMessage]],
) -> list[BaseMessage]:
    """The history an extractive summary of ``dropped`` would leave, built before anything
    is archived: its segment takes the next free number (as it does unless a writer races)."""
    number = max((s.number for s in index), default=0) + 1
    jsonl_path, markdown_path = archive.segment_paths(number)
    _, summary = _extractive(
        archive, thread_id, previous, dropped, first_index, number, markdown_path
    )
    return assemble(summary, jsonl_path, first_index)


def _extractive(
    archive: TranscriptArchive,
    thread_id: str,
    previous: SummaryState | None,
    dropped: Sequence[BaseMessage],
    first_index: int,
    number: int,
    transcript: str,
) -> tuple[SummaryState, HumanMessage]:
    """The state of the summary that replaces ``dropped`` as segment ``number`` (its
    Markdown at ``transcript``), and its extractive summary
    (:func:`~ctxfs._summary._body.extractive_body`, no model)."""
    extract = extractive_body(dropped, first_index=first_index, previous=previous)
    state = next_state(
        previous,
        dropped,
        next_index=first_index + len(dropped),
        transcript=transcript,
        intent=extract[0],
    )
    summary = build_summary_message(
        body=extract,
        message_id=summary_message_id(thread_id, number),
        state=state,
        first_index=first_index,
        transcript_dir=archive.directory,
        source="extractive",
    )
    return state, summary


def _least_cost(
    budget: Budget[ContextPolicy],
    counter: TokenCounter,
    dropped: Sequence[BaseMessage],
    thread_id: str,
    directory: str,
) -> int:
    """The fewest tokens a first summary of ``dropped`` adds: its frame (the header, the
    headings and the artifacts lines of an empty summary) and, when pinning is on, the task
    statement put back after it (up to the pins' budget)."""
    state = next_state(None, [], next_index=len(dropped), transcript=f"{directory}/segment-0001.md")
    frame = build_summary_message(
        body=("", "", ""),
        message_id=summary_message_id(thread_id, 1),
        state=state,
        first_index=0,
        transcript_dir=directory,
        source="extractive",
    )
    task = next((m for m in dropped if isinstance(m, HumanMessage)), None)
    pinned = 0
    if task is not None and budget.policy.pinning.enabled:
        pinned = min(counter.count_message(task), budget.pinned)
    return counter.count_message(frame) + pinned


def _in_view(
    budget: Budget[ContextPolicy],
    counter: TokenCounter,
    *,
    thread_id: str,
    dropped: Sequence[BaseMessage],
    earlier: Sequence[BaseMessage],
    first_index: int,
    segment: str,
    segment_start: int,
    always: int,
    kept: int,
    free_messages: int,
    room_messages: int | None,
    plan: Sequence[Mapping[str, Any]] | str | None,
    notes: tuple[str, str] | None,
    read_segment: Callable[[str], Sequence[BaseMessage]],
    as_written: Callable[[BaseMessage], BaseMessage] = lambda message: message,
) -> list[BaseMessage]:
    """What the summary puts back after itself: pinned user messages, then one message with
    the pointers, the plan and the notes (see :mod:`ctxfs._summary._pins`).

    ``always`` is what every request holds until the next summary, whatever the turns add
    (system prompt, tool schemas, this summary); ``kept`` the recent window it keeps.
    ``free_messages``: how many messages it may put back (:func:`_free_messages`);
    ``room_messages``: under a ``messages`` trigger, the room the kept window left.
    ``read_segment``: the messages of one of the thread's segments (by its ``.jsonl`` path).
    ``as_written``: a user message as the user wrote it, its texts a lossless step moved to
    files read back (the task statement moved out of an earlier request is still the task).
    """
    settings = budget.policy.pinning
    if not settings.enabled:
        return []
    candidates, counted = user_candidates(
        [as_written(m) for m in dropped],
        first_index=first_index,
        segment=segment,
        segment_start=segment_start,
        machine_made=settings.machine_made,
        earlier=earlier,
    )
    # The task statement, pointed to by a summary that had no room for it, comes back
    # verbatim from its archived copy once there is room again.
    candidates = [
        recalled(c, [as_written(m) for m in read_segment(c.segment)])
        if c.first and c.message is None
        else c
        for c in candidates
    ]
    earlier_counted = counted
    frame = _frame(
        counter, thread_id, {segment, *counted.segments, *(c.segment for c in candidates)}
    )

    def select(max_pins: int) -> tuple[list[HumanMessage], list[Candidate], Earlier]:
        return select_pins(
            candidates,
            earlier=earlier_counted,
            thread_id=thread_id,
            counter=counter,
            budget=budget.pinned,
            first_room=budget.request_limit - always - kept,
            turns_room=next_summary(budget) - always,
            kept=kept,
            frame=frame,
            pointers=settings.pointers,
            max_pins=max_pins,
        )

    most = max(0, free_messages - 1) if free_messages > 1 else free_messages
    pins, pointed, counted = select(most)
    kept_notes = None
    if notes is not None:
        path, text = notes
        cut = notes_text(text, path=path, counter=counter, max_tokens=settings.notes_tokens)
        kept_notes = None if cut is None else (path, cut)
    extra = in_view_message(
        pointed=pointed, counted=counted, plan=plan, notes=kept_notes, thread_id=thread_id
    )
    if extra is not None and len(pins) >= free_messages:
        # No room left: the pins come first. But what the in-view message holds (user
        # messages that did not fit, the plan, the notes) has no other trace in view, so one
        # message more than the summary replaces (not beyond a ``messages`` trigger's room)
        # goes to it; or, when it would only point to user messages, to a pin that leaves
        # none out (the task statement alone, short).
        names_users = bool(pointed) or counted.count > 0
        if room_messages is not None and len(pins) >= room_messages:
            extra = None
        elif names_users and (plan is None or not render_plan(plan).strip()) and not kept_notes:
            more, more_pointed, more_counted = select(most + 1)
            if len(more) > len(pins) and not more_pointed and not more_counted.count:
                pins, extra = more, None
    return [*pins, *([extra] if extra is not None else [])]


def _as_written(message: BaseMessage, workspace: Workspace) -> BaseMessage:
    """A user message with the texts a lossless step moved to files read back; as it is
    when none was moved or a file cannot be read (then it is not put back verbatim)."""
    if not isinstance(message, HumanMessage) or not moved_texts(message):
        return message
    try:
        return resolve_moved(message, workspace)
    except WorkspaceError:
        return message


def _archived(archive: TranscriptArchive, path: str) -> list[BaseMessage]:
    """The messages of the thread's committed segment at ``path``; none when it cannot be
    read (then what pointed to them stays a pointer)."""
    try:
        found = next((s for s in archive.segments() if s.jsonl_path == path), None)
        return archive.read_segment(found) if found is not None else []
    except WorkspaceError:
        return []


def _frame(counter: TokenCounter, thread_id: str, segments: Iterable[str]) -> int:
    """What the in-view message costs besides its pointer lines, at most: its header and the
    line counting older user messages, with the widest numbers and the three segment names
    (of those it may name) that take the most tokens."""
    names = sorted(segments, key=counter.count_text, reverse=True)
    widest = Earlier(10**9, 10**9, 10**9, tuple((names + names[:1] * 3)[:3]))
    frame = in_view_message(pointed=(), counted=widest, plan=None, notes=None, thread_id=thread_id)
    return 0 if frame is None else counter.count_message(frame)


def next_summary(budget: Budget[ContextPolicy]) -> int:
    """The request size at which the next summary fires at the earliest: the high-water mark
    (never above a token trigger), or the summary's target when that is lower.

    What a summary leaves below this is the room new turns have before the next one; the
    target alone overstates it whenever the high-water mark is lower (at the defaults, 63 %
    of the window against 85 %).
    """
    return min(budget.summary_target, budget.high_water)


def _summary_share(budget: Budget[ContextPolicy], held: int) -> int:
    """The most tokens a model's summary may take: half of what is left below where the
    next summary fires, beside ``held`` (the system prompt, tool schemas and the recent
    window kept); the other half is the pins' and the new turns'."""
    return (next_summary(budget) - held) // 2


def _free_messages(room: int | None, kept: int, replaced: int) -> int:
    """How many messages a summary may put back after itself.

    Never more than the messages it replaces besides the one the summary takes (so the graph
    state is updated in place: each new message takes the place of one it replaces; but see
    :func:`_in_view` for the in-view message), except one for the task statement's pin when
    the summary replaces a single message (the task statement itself, under a trigger of a
    few messages); and under a ``messages`` trigger never more than the room the kept window
    left (:func:`_room_left`).
    """
    free = max(1, replaced)
    left = _room_left(room, kept)
    return free if left is None else max(0, min(free, left))


ALWAYS_IN_VIEW = 2
"""Messages a summary may put back beyond a ``messages`` trigger's room: the task
statement's pin and the in-view message (the pointers, the plan). A trigger so small that
its half cannot hold the system prompt, the summary and the latest block (a handful of
messages) would otherwise leave none of them in view: the trigger's half yields, not the
task."""


def _room_left(room: int | None, kept: int) -> int | None:
    """Under a ``messages`` trigger, the messages a summary may put back after the recent
    window it keeps: the room left, and never fewer than :data:`ALWAYS_IN_VIEW`."""
    return None if room is None else max(room - kept, ALWAYS_IN_VIEW)


def _why_over(
    budget: Budget[ContextPolicy], system: Sequence[int], summary: int, kept: Sequence[int]
) -> str:
    target = budget.summary_target
    keep = budget.policy.summarization.keep.describe()
    if sum(system) > target:
        return (
            f"the system prompt and tool schemas alone are {sum(system):,} tokens, over the "
            f"target {target:,}"
        )
    if sum(kept) > target:
        return (
            f"the protected recent window alone (keep {keep}, at least the latest block) is "
            f"{sum(kept):,} tokens, over the target {target:,}"
        )
    return (
        f"the system prompt and tool schemas ({sum(system):,} tokens), the summary "
        f"({summary:,}) and the protected recent window (keep {keep}: {sum(kept):,}) "
        f"together exceed the target {target:,}"
    )
