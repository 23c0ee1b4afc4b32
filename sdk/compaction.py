"""Compaction: the escalation from offloading to clearing to summarizing, once for sync and async.

:func:`compaction_steps` is a generator holding all of the logic. It yields only when it needs
the summary model, with the prompt, and receives ``(answer, error)``; the engine's ``compact``
answers with :func:`ctxfs.summary.call_model` and ``acompact`` with
:func:`ctxfs.summary.acall_model`. Nothing else differs between the two.

The steps, for ``compact(messages, thread_id=...)``:

1. Offload old tool inputs if their trigger is reached (step 2 of DESIGN.md), then clear old
   tool results to pointers if theirs is (step 3, :mod:`ctxfs.clearing`). The clearing
   trigger is never above the summarization token trigger, so clearing is always tried
   before a summary, and a summary is made only if it did not get the history under the
   trigger.
2. If a summarization trigger still fires, choose the cut on block boundaries (see
   :mod:`ctxfs.blocks`) so that the protected recent window stays, and drop the messages
   between the prefix (system prompt and previous summary) and the cut. With a
   ``messages`` trigger the window is narrowed so that the result holds at most half of
   ``trigger.messages`` (:func:`message_room`): each summary then buys at least that many
   new messages, instead of firing again on every turn.
3. Archive them (:class:`ctxfs.archive.TranscriptArchive`): written and read back before
   anything is dropped. On any archive failure the input is returned unchanged with an
   :class:`~ctxfs.events.ArchiveFailed` event.
4. Summarize (model or extractive), record the summary in the index, and return
   ``[system..., summary, kept...]``.
5. Offload old tool inputs and clear old results once more on that result if it reaches
   their triggers, so that compacting the result again changes nothing.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage, HumanMessage

from ctxfs.archive import ArchiveError, TranscriptArchive
from ctxfs.blocks import choose_cut, prefix_end, split_blocks
from ctxfs.events import ArchiveFailed, CompactionResult, ContextEvent, Summarized
from ctxfs.offload import safe_name
from ctxfs.policy import ContextPolicy
from ctxfs.summary import (
    SummaryState,
    build_summary_message,
    collect_artifacts,
    extractive_body,
    format_prompt,
    render_for_model,
    summary_state,
)

if TYPE_CHECKING:
    from ctxfs.engine import ContextEngine

__all__ = [
    "ModelAnswer",
    "compaction_steps",
    "message_room",
    "summary_message_id",
    "trigger_fires",
]

ModelAnswer = tuple[str | None, str | None]
"""What the driver sends back: the usable summary text or ``None``, and why not."""


def summary_message_id(thread_id: str, segment_number: int) -> str:
    """Returns the id of the summary that replaces a segment: stable across re-runs."""
    return f"ctxfs-summary-{safe_name(thread_id)}-{segment_number:04d}"


def trigger_fires(policy: ContextPolicy, tokens: int, messages: int) -> bool:
    """Returns whether a summarization trigger fires for a history of this size."""
    settings = policy.summarization
    if not settings.enabled:
        return False
    limit = settings.trigger.token_limit(policy.max_input_tokens)
    if limit is not None and tokens >= limit:
        return True
    return settings.trigger.messages is not None and messages >= settings.trigger.messages


def message_room(policy: ContextPolicy, system_messages: int) -> int | None:
    """Returns how many messages a summary may keep after it under a ``messages`` trigger.

    The history a summary leaves (system prompt, summary and kept messages) holds at most
    half of ``trigger.messages``, so at least that many new messages come before the next
    summary; without the cap a kept window near the trigger would fire it on every turn,
    rewriting the summary (and the prompt prefix a provider caches) each time. The same
    margin as for tokens, where the default keep (30 % of the window) is well under the
    trigger (85 %). ``None`` without a ``messages`` trigger.
    """
    limit = policy.summarization.trigger.messages
    if limit is None:
        return None
    return max(0, limit // 2 - system_messages - 1)


def compaction_steps(
    engine: ContextEngine, messages: Sequence[BaseMessage], thread_id: str
) -> Generator[str, ModelAnswer, CompactionResult]:
    """Compacts ``messages``; yields a prompt whenever the summary model must be asked.

    Args:
        engine: Supplies the workspace, policy, token counter and clock.
        messages: The history; never mutated.
        thread_id: The conversation; names the folders written.

    Returns:
        (as the generator's return value) The :class:`~ctxfs.events.CompactionResult`.
    """
    policy = engine.policy
    settings = policy.summarization
    counter = engine.token_counter
    original = list(messages)
    step2 = engine.offload_tool_inputs(original, thread_id=thread_id)
    step3 = engine.clear_tool_results(step2.messages, thread_id=thread_id)
    current, events = step3.messages, [*step2.events, *step3.events]
    before = step2.tokens_before
    if not trigger_fires(policy, step3.tokens_after, len(current)):
        quiet = "summarization is off" if not settings.enabled else "no summarization trigger fired"
        return _result(policy, current, events, before, step3.tokens_after, quiet)

    counts = [counter.count_message(m) for m in current]
    blocks = split_blocks(current)
    start = prefix_end(blocks)
    system_end = blocks[0].stop if blocks[0].kind == "system" else 0
    cut = choose_cut(blocks, counts, policy.keep_window, at_most=message_room(policy, system_end))
    if cut <= start:
        protected = (
            f"the protected recent window (keep {settings.keep.describe()}) holds every "
            f"message after the system prompt and summary ({sum(counts[start:]):,} tokens)"
        )
        return _result(policy, current, events, before, step3.tokens_after, protected)

    previous = summary_state(current[start - 1]) if start > system_end else None
    dropped = current[start:cut]
    first_index = previous.next_index if previous is not None else start
    archive = TranscriptArchive(engine.workspace, thread_id, clock=engine.clock)
    try:
        index = archive.segments()  # read once; write_segment and commit share it
        segment, committed = archive.write_segment(
            dropped, start=first_index, tokens=sum(counts[start:cut]), committed=index
        )
    except ArchiveError as exc:
        return _failed(policy, original, before, str(exc))

    message_id = summary_message_id(thread_id, segment.number)
    reused = archive.summary_of(segment) if committed else None
    model_error: str | None = None
    if isinstance(reused, HumanMessage) and reused.id == message_id:
        summary, source = reused, "index"
    else:
        files, offloaded = collect_artifacts(dropped, previous)
        state = SummaryState(
            next_index=first_index + len(dropped),
            transcripts=(*(previous.transcripts if previous else ()), segment.markdown_path),
            files=files,
            offloaded=offloaded,
        )
        extract = extractive_body(dropped, first_index=first_index, previous=previous)
        state = replace(state, intent=extract[0])
        body: str | None = None
        if settings.model is not None:
            rendered = render_for_model(
                dropped,
                previous=previous,
                counter=counter,
                trim_tokens=settings.trim_tokens_to_summarize,
            )
            body, model_error = yield format_prompt(settings.prompt, rendered)
        source = "model" if body is not None else "extractive"
        summary = build_summary_message(
            body=body if body is not None else extract,
            message_id=message_id,
            state=state,
            first_index=first_index,
            transcript_dir=archive.directory,
            source="model" if body is not None else "extractive",
        )
        try:
            archive.commit(segment, summary=summary, committed=index)
        except ArchiveError as exc:
            return _failed(policy, original, before, str(exc))

    summarized = [*current[:system_end], summary, *current[cut:]]
    inputs = engine.offload_tool_inputs(summarized, thread_id=thread_id)
    final = engine.clear_tool_results(inputs.messages, thread_id=thread_id)
    events.append(
        Summarized(
            segment_paths=(segment.jsonl_path, segment.markdown_path),
            messages_archived=len(dropped),
            first_index=first_index,
            tokens_before=step3.tokens_after,
            tokens_after=inputs.tokens_before,
            summary_chars=len(str(summary.content)),
            source=source,
            model_error=model_error,
        )
    )
    events += inputs.events
    events += final.events
    after = final.tokens_after
    over = None
    if after > policy.summary_target_tokens:
        over = _why_over(policy, counts[:system_end], counter.count_message(summary), counts[cut:])
    return _result(policy, final.messages, events, before, after, over)


def _why_over(
    policy: ContextPolicy, system: Sequence[int], summary: int, kept: Sequence[int]
) -> str:
    target = policy.summary_target_tokens
    keep = policy.summarization.keep.describe()
    if sum(system) > target:
        return f"the system prompt alone is {sum(system):,} tokens, over the target {target:,}"
    if sum(kept) > target:
        return (
            f"the protected recent window alone (keep {keep}, at least the latest block) is "
            f"{sum(kept):,} tokens, over the target {target:,}"
        )
    return (
        f"the system prompt ({sum(system):,} tokens), the summary ({summary:,}) and the "
        f"protected recent window (keep {keep}: {sum(kept):,}) together exceed the target "
        f"{target:,}"
    )


def _result(
    policy: ContextPolicy,
    messages: list[BaseMessage],
    events: Sequence[ContextEvent],
    before: int,
    after: int,
    why_not: str | None,
) -> CompactionResult:
    target = policy.summary_target_tokens
    reached = after <= target
    return CompactionResult(
        messages=messages,
        events=tuple(events),
        tokens_before=before,
        tokens_after=after,
        target=target,
        reached_target=reached,
        reason=None if reached else why_not,
    )


def _failed(
    policy: ContextPolicy, original: list[BaseMessage], before: int, reason: str
) -> CompactionResult:
    event = ArchiveFailed(reason=f"{reason}; nothing was dropped")
    why = f"the transcript could not be archived ({reason}), so nothing was dropped"
    return _result(policy, original, [event], before, before, why)
