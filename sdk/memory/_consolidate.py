"""Consolidation: an explicit pass that merges duplicate facts and drops expired ones.

Learning merges only facts with the same normalized content. Over many sessions a memory
also gathers near-duplicates ("Alice uses vim." and "Alice uses vim daily."), facts that
contradict each other, and facts whose expiry has passed. :func:`consolidate_document` is
the pure, deterministic part of the pass:

- expired facts go;
- within one scope (the same ``scope`` and ``scope_id``), facts whose content words (case
  folded, stop words left out) overlap by at least ``similarity`` (Jaccard) are merged into
  the most confident of them (then the newest): its content, the highest confidence, the
  union of the tags, the earliest ``created_at`` and the latest expiry.

Contradictions need judgement: :meth:`~ctxfs.memory.LongTermMemory.consolidate` with a
model asks it for a :class:`ConsolidationPlan` (groups to merge into one new fact, facts
to drop) first. Either way the result is written as a new version (``kind
"consolidate"``): nothing is edited in place, and a consolidation can be rolled back.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ctxfs._sections import one_line
from ctxfs.memory._document import Fact, FactCategory, MemoryDocument, fact_id, normalize_fact
from ctxfs.memory._extract import later

__all__ = [
    "CONSOLIDATION_PROMPT",
    "Consolidation",
    "ConsolidationPlan",
    "FactMerge",
    "apply_plan",
    "consolidate_document",
    "plan_consolidation",
]

_log = logging.getLogger("ctxfs.memory")

_WORD = re.compile(r"\w+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "with",
        "by",
        "as",
        "it",
        "its",
        "this",
        "that",
        "their",
        "they",
        "he",
        "she",
        "his",
        "her",
        "them",
        "from",
        "into",
        "than",
        "then",
        "so",
    ]
)


@dataclass(frozen=True, slots=True)
class Consolidation:
    """What a consolidation pass did.

    Attributes:
        document: The consolidated document (not written yet by the pure function).
        merged: Each group of fact ids merged, with the id of the fact it became.
        expired: Ids of the facts dropped for their expiry.
        dropped: Ids dropped as wrong or contradicted (by the model's plan).
    """

    document: MemoryDocument
    merged: tuple[tuple[tuple[str, ...], str], ...] = ()
    expired: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the pass changed anything."""
        return bool(self.merged or self.expired or self.dropped)

    def note(self) -> str:
        """What it did, in a few words."""
        parts = [
            f"merged {sum(len(ids) for ids, _ in self.merged)} facts into {len(self.merged)}",
            f"dropped {len(self.dropped)}",
            f"expired {len(self.expired)}",
        ]
        return ", ".join(parts)


def _words(content: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(normalize_fact(content)) if w not in _STOP)


def _similar(a: frozenset[str], b: frozenset[str], threshold: float) -> bool:
    if not a or not b:
        return a == b
    return len(a & b) / len(a | b) >= threshold


def _merge(group: Sequence[Fact], into: Fact) -> Fact:
    expires = into.expires_at
    for fact in group:
        expires = later(expires, fact.expires_at)
    return into.model_copy(
        update={
            "confidence": max(f.confidence for f in group),
            "tags": tuple(sorted({t for f in group for t in f.tags})),
            "created_at": min(f.created_at for f in group),
            "expires_at": expires,
        }
    )


def consolidate_document(
    document: MemoryDocument, *, now: datetime, similarity: float = 0.8
) -> Consolidation:
    """Drops expired facts and merges near-duplicates within each scope (pure; see the
    module docstring). The facts keep their order, each merged group at its first place."""
    if not 0.0 < similarity <= 1.0:
        raise ValueError("similarity must be in (0, 1]")
    expired = tuple(
        f.id for f in document.facts if f.expires_at is not None and f.expires_at <= now
    )
    facts = [f for f in document.facts if f.id not in expired]
    origin: dict[str, tuple[str, ...]] = {f.id: (f.id,) for f in facts}
    while True:  # until no two facts are alike: merging can make a fact like another
        groups = _groups(facts, similarity)
        if all(len(group) == 1 for group in groups):
            break
        facts = []
        for group in groups:
            best = max(group, key=lambda f: (f.confidence, f.created_at, f.id))
            if len(group) > 1:
                origin[best.id] = tuple(i for f in group for i in origin[f.id])
                best = _merge(group, best)
            facts.append(best)
    merged = tuple((origin[f.id], f.id) for f in facts if len(origin[f.id]) > 1)
    new = document.model_copy(update={"facts": tuple(facts)})
    return Consolidation(new, merged, expired)


def _groups(facts: Sequence[Fact], similarity: float) -> list[list[Fact]]:
    """Facts of one scope alike (by words) to a member of a group join it, in order."""
    words = {f.id: _words(f.content) for f in facts}
    groups: list[list[Fact]] = []
    for fact in facts:
        for group in groups:
            head = group[0]
            if (head.scope, head.scope_id) != (fact.scope, fact.scope_id):
                continue
            if any(_similar(words[g.id], words[fact.id], similarity) for g in group):
                group.append(fact)
                break
        else:
            groups.append([fact])
    return groups


class FactMerge(BaseModel):
    """Facts that say the same thing, or contradict each other, and the one fact they become."""

    model_config = ConfigDict(extra="forbid")

    ids: Annotated[list[str], Field(min_length=2, description="Ids of the facts merged.")]
    content: Annotated[str, Field(min_length=1, description="The fact they become.")]
    category: FactCategory
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]


class ConsolidationPlan(BaseModel):
    """What the consolidation model proposes: merges, and facts to drop."""

    model_config = ConfigDict(extra="forbid")

    merges: list[FactMerge] = Field(default_factory=list)
    remove_fact_ids: list[str] = Field(
        default_factory=list, description="Ids of facts that are wrong or contradicted."
    )


CONSOLIDATION_PROMPT = """\
You keep an assistant's long-term memory about its user tidy. Below are the stored facts, \
each with its id, scope and date. Call ConsolidationPlan with:
- merges: groups of two or more facts that say the same thing or contradict each other, \
each with the one fact they become (for a contradiction, what is true now: usually the \
newer fact), its category and confidence; merge only facts of the same scope;
- remove_fact_ids: facts that are plainly wrong or no longer true.
Leave everything else alone; an empty plan is a good answer."""


def _plan_messages(document: MemoryDocument, prompt: str) -> list[BaseMessage]:
    # one line per fact, its id first: a fact's text cannot start a line of its own (a
    # forged id the plan would then merge or drop)
    lines = [
        f"{f.id} [{one_line(f.scope + (':' + f.scope_id if f.scope_id else ''))}, "
        f"{f.created_at.date().isoformat()}] {one_line(f.content)}"
        for f in document.facts
    ]
    return [SystemMessage(prompt), HumanMessage("Facts:\n" + "\n".join(lines))]


def plan_consolidation(
    model: BaseChatModel, document: MemoryDocument, *, prompt: str = CONSOLIDATION_PROMPT
) -> ConsolidationPlan | None:
    """Asks ``model`` for a plan; ``None`` (logged) when it fails or its output is invalid."""
    structured = model.with_structured_output(ConsolidationPlan, include_raw=True)
    try:
        out: Any = structured.invoke(_plan_messages(document, prompt))
    except (ValidationError, ValueError) as exc:
        _log.warning("ctxfs memory: the consolidation plan is invalid and was dropped: %s", exc)
        return None
    except Exception as exc:
        _log.warning(
            "ctxfs memory: the consolidation model failed (%s: %s)", type(exc).__name__, exc
        )
        return None
    parsed = out.get("parsed") if isinstance(out, dict) else out
    if not isinstance(parsed, ConsolidationPlan):
        _log.warning("ctxfs memory: the consolidation output is invalid and was dropped")
        return None
    return parsed


def apply_plan(document: MemoryDocument, plan: ConsolidationPlan) -> Consolidation:
    """Applies a model's plan (pure). Ids that are not there are ignored; a merge across
    scopes, or of fewer than two known facts, is skipped."""
    known = {f.id: f for f in document.facts}
    gone: set[str] = set()
    merged: list[tuple[tuple[str, ...], str]] = []
    added: list[Fact] = []
    for merge in plan.merges:
        group = [known[i] for i in dict.fromkeys(merge.ids) if i in known and i not in gone]
        if len(group) < 2 or len({(f.scope, f.scope_id) for f in group}) != 1:
            continue
        head = group[0]
        new_id = fact_id(merge.content, head.scope, head.scope_id)
        fact = _merge(group, head).model_copy(
            update={
                "id": new_id,
                "content": merge.content.strip(),
                "category": merge.category,
                "confidence": merge.confidence,
                "source": "consolidation",
            }
        )
        gone.update(f.id for f in group)
        added.append(fact)
        merged.append((tuple(f.id for f in group), new_id))
    dropped = tuple(i for i in dict.fromkeys(plan.remove_fact_ids) if i in known and i not in gone)
    gone.update(dropped)
    facts: dict[str, Fact] = {f.id: f for f in document.facts if f.id not in gone}
    for fact in added:
        facts.setdefault(fact.id, fact)
    new = document.model_copy(update={"facts": tuple(facts.values())})
    return Consolidation(new, tuple(merged), (), dropped)
