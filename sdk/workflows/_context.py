"""What one stage's agent is given, fitted to its token budgets.

A stage sees only: its prompt, the task, the earlier stages' validated outputs and the
long-term memory retrieved for the task. The earlier outputs are packed into
``previous_outputs_tokens`` and the memory into ``memory_tokens``, each counted exactly on the
text the agent receives (:attr:`StageInput.previous_text`, :attr:`StageInput.memory_text`).

Packing goes from the most recent stage backwards, since the stage just before usually
matters most: each output is shown whole if it fits, else as its summary (cut to what fits)
with the path of the whole output, else not at all. The block's first line says where every
full output lives, so nothing is out of reach. Memory items are taken in the retriever's
order, each whole or not at all.

What a stage's agent reads of them is framed by :mod:`ctxfs._sections`: the earlier outputs
sit in one ``<previous_stages>`` block, each under a heading ctxfs writes (``## <stage>``, its
confidence, where its full output is) with what the stage wrote quoted in a
``<stage_output>`` section; the memory items are bullets of one ``<memory>`` block. Quoted
text cannot close either frame, start a heading or a bullet, or pass for another stage.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from ctxfs._sections import neutralize, one_line, quote_lines, section
from ctxfs._tokens import TokenCounter

__all__ = [
    "PriorOutput",
    "StageInput",
    "StoredOutput",
    "pack_memory",
    "pack_previous",
]

Form = Literal["full", "summary"]
_FORMS: tuple[Form, ...] = ("full", "summary")


@dataclass(frozen=True)
class StoredOutput:
    """A completed stage's output as the packer needs it."""

    stage: str
    output: Mapping[str, Any]
    path: str
    summary: str | None
    confidence: str | None


@dataclass(frozen=True)
class PriorOutput:
    """An earlier stage's output as one stage was shown it.

    Attributes:
        stage: The earlier stage's name.
        form: ``full`` (the whole output) or ``summary`` (its summary, perhaps cut, and where
            the whole output is).
        path: The workspace file holding the whole validated output.
        confidence: The output's confidence, when its schema has one.
        text: Exactly what the stage was shown for it.
    """

    stage: str
    form: Form
    path: str
    confidence: str | None
    text: str


@dataclass(frozen=True)
class StageInput:
    """Everything one stage's agent gets, and nothing else.

    Attributes:
        workflow_id: The workflow's id.
        stage: This stage's name.
        prompt: This stage's prompt (its instructions).
        task: The workflow's task.
        previous: The earlier stages' outputs that fit the budget, most recent last.
        previous_text: Exactly the text of the earlier outputs, within
            ``previous_outputs_tokens`` (empty for the first stage).
        memory: The long-term memory items that fit ``memory_tokens``.
        memory_text: Exactly the text of those items (empty without memory).
        schema: The pydantic model the reply must match.
        attempt: 1, plus the number of times this stage failed or halted before (a retry
            after a halt is attempt 2).
        checkpoint: Report progress inside a long stage (``checkpoint("3 of 8 sources
            read")``); the runner writes the state file when the policy's
            ``checkpoint_interval`` has passed since its last write.
    """

    workflow_id: str
    stage: str
    prompt: str
    task: str
    previous: tuple[PriorOutput, ...]
    previous_text: str
    memory: tuple[str, ...]
    memory_text: str
    schema: type[BaseModel]
    attempt: int
    checkpoint: Callable[[str], None] = field(repr=False, compare=False)

    def render(self) -> str:
        """The task, the earlier outputs and the memory as one text (a model's user message).

        The task is the caller's text, kept as written but for a ``<`` that would open or
        close a ctxfs section: it cannot start a ``<previous_stages>`` block of its own before
        the real one.
        """
        parts = [f"Task:\n{neutralize(self.task)}"]
        parts += [text for text in (self.previous_text, self.memory_text) if text]
        return "\n\n".join(parts)

    def instructions(self) -> str:
        """The prompt, plus the JSON schema the reply must match (a model's system message)."""
        schema = json.dumps(self.schema.model_json_schema(), indent=2, ensure_ascii=False)
        return (
            f"{self.prompt}\n\nReply with one JSON object, and nothing else, that matches "
            f"this JSON schema:\n{schema}"
        )


def _confidence_line(confidence: str | None) -> str:
    if confidence is None:
        return ""
    if confidence == "low":
        return " (confidence: LOW, check it before relying on it)"
    return f" (confidence: {confidence})"


def _render_entry(entry: StoredOutput, form: Form, summary_chars: int | None = None) -> str:
    # The heading and the path are ctxfs's (stage names are file names; the confidence is
    # kept to one line); what the stage wrote is quoted in its own section, so it cannot end
    # the section or pass for another stage's heading.
    head = one_line(f"## {entry.stage}{_confidence_line(entry.confidence)}")
    if form == "full":
        body = json.dumps(dict(entry.output), indent=2, ensure_ascii=False)
        where = one_line(f"Full output: {entry.path}")
    else:
        body = _summary_text(entry)
        if summary_chars is not None and summary_chars < len(body):
            body = body[:summary_chars] + "…"
        where = one_line(f"Summarized to fit; the full output is in {entry.path}")
    quoted = section("stage_output", body, {"stage": entry.stage, "form": form})
    return f"{head}\n{where}\n{quoted}"


def _summary_text(entry: StoredOutput) -> str:
    if entry.summary is not None:
        return entry.summary
    return json.dumps(dict(entry.output), ensure_ascii=False, separators=(",", ":"))


def _block(header: str, entries: Sequence[str]) -> str:
    # Every entry is quoted already (no section tag survives in it), so the frame holds.
    if not entries:
        return ""
    return "\n\n".join([f"<previous_stages>\n{header}", *entries]) + "\n</previous_stages>"


def pack_previous(
    entries: Sequence[StoredOutput], budget: int, counter: TokenCounter, folder: str
) -> tuple[tuple[PriorOutput, ...], str]:
    """Fits the earlier stages' outputs into ``budget`` tokens (see the module docstring).

    Args:
        entries: The completed stages' outputs, in stage order.
        budget: The most tokens the returned text may count.
        counter: Counts the text exactly.
        folder: Where every full output lives (named in the block's first line).

    Returns:
        What is shown of each stage that fits (in stage order), and the text itself, whose
        ``counter.count_text`` is at most ``budget``.
    """
    header = f"Earlier stages (each stage's full output is in {folder}/):"
    chosen: dict[int, PriorOutput] = {}

    def text_with(index: int, candidate: str) -> str:
        shown = {i: p.text for i, p in chosen.items()} | {index: candidate}
        return _block(header, [shown[i] for i in sorted(shown)])

    def fits(index: int, candidate: str) -> bool:
        return counter.count_text(text_with(index, candidate)) <= budget

    for index in reversed(range(len(entries))):
        entry = entries[index]
        picked: tuple[Form, str] | None = None
        for form in _FORMS:
            candidate = _render_entry(entry, form)
            if fits(index, candidate):
                picked = (form, candidate)
                break
        if picked is None:
            picked = _cut_summary(entry, functools.partial(fits, index))
        if picked is not None:
            form, text = picked
            chosen[index] = PriorOutput(entry.stage, form, entry.path, entry.confidence, text)
    shown = tuple(chosen[i] for i in sorted(chosen))
    return shown, _block(header, [p.text for p in shown])


def _cut_summary(entry: StoredOutput, fits: Callable[[str], bool]) -> tuple[Form, str] | None:
    """The longest cut of the summary that fits, or ``None`` when even an empty one does not."""
    if not fits(_render_entry(entry, "summary", 0)):
        return None
    low, high = 0, len(_summary_text(entry))  # low always fits; high need not
    while high - low > 1:
        middle = (low + high) // 2
        if fits(_render_entry(entry, "summary", middle)):
            low = middle
        else:
            high = middle
    return "summary", _render_entry(entry, "summary", low)


def pack_memory(
    items: Sequence[str], budget: int, counter: TokenCounter
) -> tuple[tuple[str, ...], str]:
    """Fits memory items into ``budget`` tokens, each whole or not at all, in the given order.

    Returns:
        The items shown and their text, whose ``counter.count_text`` is at most ``budget``.
    """
    header = "Long-term memory retrieved for this task:"
    kept: list[str] = []
    for item in items:
        candidate = _memory_block(header, [*kept, item])
        if counter.count_text(candidate) <= budget:
            kept.append(item)
    return tuple(kept), _memory_block(header, kept)


def _memory_block(header: str, items: Sequence[str]) -> str:
    if not items:
        return ""
    # One bullet per item; an item's further lines are indented under it, so a line break in
    # an item cannot start a bullet (or anything else) of its own.
    bullets = ["- " + "\n  ".join(quote_lines(item).split("\n")) for item in items]
    return "\n".join(["<memory>", header, *bullets, "</memory>"])
