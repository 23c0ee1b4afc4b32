"""The working-memory budget per stage holds, counted exactly, over generated stage outputs."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs._sections import quote_lines
from ctxfs._tokens import TiktokenCounter
from ctxfs.workflows._context import StoredOutput, _memory_block, pack_memory, pack_previous

COUNTER = TiktokenCounter()
FOLDER = "/sessions/w/stages"

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)


@st.composite
def outputs(draw: st.DrawFn) -> list[StoredOutput]:
    count = draw(st.integers(0, 6))
    made = []
    for index in range(count):
        output: dict[str, Any] = {
            "summary": draw(_text),
            "key_findings": [
                {"fact": draw(_text), "source": draw(_text)} for _ in range(draw(st.integers(0, 3)))
            ],
            "confidence": draw(st.sampled_from(["high", "medium", "low"])),
        }
        with_summary = draw(st.booleans())  # a custom schema may have no summary field
        made.append(
            StoredOutput(
                stage=f"s{index}",
                output=output,
                path=f"{FOLDER}/{index + 1:02d}-s{index}.json",
                summary=output["summary"] if with_summary else None,
                confidence=output["confidence"] if draw(st.booleans()) else None,
            )
        )
    return made


@settings(max_examples=150, deadline=None)
@given(entries=outputs(), budget=st.integers(0, 700))
def test_earlier_outputs_fit_the_budget_exactly(entries: list[StoredOutput], budget: int) -> None:
    shown, text = pack_previous(entries, budget, COUNTER, FOLDER)
    assert COUNTER.count_text(text) <= budget
    by_stage = {entry.stage: entry for entry in entries}
    assert [p.stage for p in shown] == [
        e.stage for e in entries if e.stage in {p.stage for p in shown}
    ]  # stage order, each at most once
    if shown:
        header = f"Earlier stages (each stage's full output is in {FOLDER}/):"
        assert (
            text
            == "\n\n".join([f"<previous_stages>\n{header}", *(p.text for p in shown)])
            + "\n</previous_stages>"
        )
    else:
        assert text == ""
    for prior in shown:
        entry = by_stage[prior.stage]
        assert prior.path == entry.path and prior.path in prior.text  # the full output's place
        if prior.form == "full":
            full = json.dumps(dict(entry.output), indent=2, ensure_ascii=False)
            assert quote_lines(full) in prior.text
        if entry.confidence == "low":
            assert "confidence: LOW" in prior.text
    # The most recent stage comes first: whole whenever it fits whole on its own.
    if entries:
        alone = pack_previous(entries[-1:], budget, COUNTER, FOLDER)[0]
        if alone and alone[0].form == "full":
            assert shown[-1].stage == entries[-1].stage and shown[-1].form == "full"
    roomy = COUNTER.count_text(pack_previous(entries, 10**6, COUNTER, FOLDER)[1])
    if budget >= roomy:
        assert [p.form for p in shown] == ["full"] * len(entries)


@settings(max_examples=150, deadline=None)
@given(items=st.lists(_text, max_size=8), budget=st.integers(0, 200))
def test_memory_fits_its_budget_exactly_whole_items_in_order(items: list[str], budget: int) -> None:
    kept, text = pack_memory(items, budget, COUNTER)
    assert COUNTER.count_text(text) <= budget
    # Taken greedily in order: each item is kept exactly when it fits after those kept before.
    expected: list[str] = []
    for item in items:
        block = _memory_block("Long-term memory retrieved for this task:", [*expected, item])
        if COUNTER.count_text(block) <= budget:
            expected.append(item)
    assert list(kept) == expected
    if kept:
        assert text.split("\n")[:2] == ["<memory>", "Long-term memory retrieved for this task:"]
    else:
        assert text == ""
