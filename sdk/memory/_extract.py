"""Learning from conversations: a chat model proposes an update, pure code applies it.

The model is asked for a :class:`MemoryUpdate` through LangChain's structured output
(``with_structured_output``, validated by pydantic). Output that does not validate is logged
on the ``ctxfs.memory`` logger and dropped: the stored memory is not touched. The update is
then applied by :func:`apply_update`, a pure function: facts under the confidence threshold
are not stored, duplicates (same normalized content) merge into the fact already there (its
confidence raised to the higher of the two, tags joined), and at most ``max_facts`` are kept,
the lowest-confidence (then oldest) going first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ctxfs._errors import WorkspaceError
from ctxfs._messages import message_text
from ctxfs._sections import quote_lines
from ctxfs.memory._document import (
    Fact,
    FactCategory,
    FactScope,
    History,
    MemoryDocument,
    UserContext,
    fact_id,
)
from ctxfs.memory._settings import MemorySettings

__all__ = [
    "EXTRACTION_PROMPT",
    "AppliedUpdate",
    "ExtractedFact",
    "MemoryUpdate",
    "apply_update",
    "extract_update",
]

_log = logging.getLogger("ctxfs.memory")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExtractedFact(_Strict):
    """A fact the extraction model proposes."""

    content: Annotated[str, Field(min_length=1, description="The fact, one sentence.")]
    category: FactCategory = Field(description="preference, knowledge, context, behavior, goal")
    confidence: Annotated[float, Field(ge=0.0, le=1.0, description="How sure, 0 to 1.")]
    tags: list[str] = Field(default_factory=list, description="Topics, lowercase words.")
    scope: FactScope = Field(
        default="user",
        description="user: true across all their work; project: true for the current "
        "project only; task: true for the current task only.",
    )
    expires_in_days: Annotated[float | None, Field(ge=0.0, le=36_500.0)] = Field(
        default=None, description="Days until it stops being true; null if it does not."
    )


class UserContextUpdate(_Strict):
    """New user-context summaries; a field left null keeps the current one."""

    work: str | None = None
    personal: str | None = None
    top_of_mind: str | None = None


class HistoryUpdate(_Strict):
    """New history summaries; a field left null keeps the current one."""

    recent: str | None = None
    earlier: str | None = None
    background: str | None = None


class MemoryUpdate(_Strict):
    """What the extraction model returns: new summaries, new facts, facts to drop."""

    user: UserContextUpdate = Field(default_factory=UserContextUpdate)
    history: HistoryUpdate = Field(default_factory=HistoryUpdate)
    new_facts: list[ExtractedFact] = Field(default_factory=list)
    remove_fact_ids: list[str] = Field(
        default_factory=list, description="Ids of stored facts that are wrong or outdated."
    )


EXTRACTION_PROMPT = """\
You maintain the long-term memory of an assistant about its user. Read the conversation \
below and the current memory, and call MemoryUpdate with:
- user: new one-paragraph summaries of the user's work, personal context and what is top of \
mind, only where the conversation changes them (null keeps the current text);
- history: the same for recent months, earlier context and long-term background;
- new_facts: durable facts worth remembering across sessions (preferences, knowledge about \
their work, goals, habits), one sentence each, with a category and a confidence from 0 to 1, \
a scope (user: true across all their work; project: only for the current project; task: \
only for the current task, such as its constraints) and, if it stops being true at a known \
time, expires_in_days; do not repeat facts already in memory;
- remove_fact_ids: ids of stored facts the conversation shows to be wrong or outdated.
Ignore small talk."""


def _conversation(messages: Sequence[BaseMessage]) -> str:
    # The role prefixes are ctxfs's; a message's text is quoted, so a line of it (a tool
    # result the assistant repeats) cannot pass for a turn of the user's ("User: ...").
    lines = []
    for message in messages:
        role = "User" if isinstance(message, HumanMessage) else "Assistant"
        lines.append(f"{role}: {quote_lines(message_text(message))}")
    return "\n\n".join(lines)


def extraction_messages(
    messages: Sequence[BaseMessage], document: MemoryDocument, prompt: str = EXTRACTION_PROMPT
) -> list[BaseMessage]:
    """The messages sent to the extraction model."""
    memory = document.model_dump(mode="json", include={"user", "history", "facts"})
    for fact in memory["facts"]:
        for key in ("created_at", "source", "scope_id"):
            fact.pop(key, None)
    return [
        SystemMessage(prompt),
        HumanMessage(
            "Current memory:\n"
            + json.dumps(memory, ensure_ascii=False, indent=1)
            + "\n\nConversation:\n"
            + _conversation(messages)
        ),
    ]


class ExtractionModelError(WorkspaceError):
    """The extraction model could not be called (its exception is the cause): nothing was
    learned from the turns, which the memory's queue keeps for the next try."""


def extract_update(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    document: MemoryDocument,
    *,
    prompt: str = EXTRACTION_PROMPT,
    strict: bool = False,
) -> MemoryUpdate | None:
    """Asks ``model`` what to learn from ``messages``.

    Returns:
        The validated update, or ``None`` (logged as a warning) when the model failed or its
        output did not validate: nothing is to be written then.

    Raises:
        ExtractionModelError: With ``strict``, the model could not be called (a provider
            outage, a timeout): the turns are worth trying again, unlike a reply that does
            not validate, which is dropped.
    """
    structured = model.with_structured_output(MemoryUpdate, include_raw=True)
    try:
        out: Any = structured.invoke(extraction_messages(messages, document, prompt))
    except (ValidationError, ValueError) as exc:
        _log.warning("ctxfs memory: the extraction output is invalid and was dropped: %s", exc)
        return None
    except Exception as exc:
        if strict:
            raise ExtractionModelError(
                f"the extraction model failed ({type(exc).__name__}: {exc}); nothing learned"
            ) from exc
        _log.warning(
            "ctxfs memory: the extraction model failed (%s: %s); nothing learned",
            type(exc).__name__,
            exc,
        )
        return None
    parsed = out.get("parsed") if isinstance(out, dict) else out
    error = out.get("parsing_error") if isinstance(out, dict) else None
    if error is not None or not isinstance(parsed, MemoryUpdate):
        raw = out.get("raw") if isinstance(out, dict) else None
        shown = raw.content if isinstance(raw, AIMessage) and not raw.tool_calls else raw
        _log.warning(
            "ctxfs memory: the extraction output is invalid and was dropped (%s): %.500s",
            error or "no MemoryUpdate call",
            shown,
        )
        return None
    return parsed


@dataclass(frozen=True, slots=True)
class AppliedUpdate:
    """What applying an update did.

    Attributes:
        document: The new document.
        added: Ids of facts added.
        merged: Ids of existing facts a duplicate merged into.
        below_threshold: Contents of proposed facts under the confidence threshold.
        removed: Ids removed on the model's request.
        evicted: Ids dropped to keep ``max_facts``.
    """

    document: MemoryDocument
    added: tuple[str, ...] = ()
    merged: tuple[str, ...] = ()
    below_threshold: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    evicted: tuple[str, ...] = ()


def _merged_text(current: str, new: str | None) -> str:
    return current if new is None else new.strip()


def apply_update(
    document: MemoryDocument,
    update: MemoryUpdate,
    *,
    settings: MemorySettings,
    now: datetime,
    source: str,
    task: str | None = None,
    project: str | None = None,
) -> AppliedUpdate:
    """Applies ``update`` to ``document`` (pure: same inputs, same result).

    Args:
        document: The current memory.
        update: What the model proposed.
        settings: Threshold and cap.
        now: The ``created_at`` of new facts (and the start of their expiry).
        source: Where they were learned (the thread id).
        task: The task a ``"task"`` fact belongs to (``source`` when ``None``).
        project: The project a ``"project"`` fact belongs to (``""`` when ``None``).
    """
    user = UserContext(
        work=_merged_text(document.user.work, update.user.work),
        personal=_merged_text(document.user.personal, update.user.personal),
        top_of_mind=_merged_text(document.user.top_of_mind, update.user.top_of_mind),
    )
    history = History(
        recent=_merged_text(document.history.recent, update.history.recent),
        earlier=_merged_text(document.history.earlier, update.history.earlier),
        background=_merged_text(document.history.background, update.history.background),
    )
    drop = set(update.remove_fact_ids)
    removed = tuple(f.id for f in document.facts if f.id in drop)
    facts: dict[str, Fact] = {f.id: f for f in document.facts if f.id not in drop}
    added: list[str] = []
    merged: list[str] = []
    low: list[str] = []
    for proposed in update.new_facts:
        content = proposed.content.strip()
        if not content:
            continue
        if proposed.confidence < settings.confidence_threshold:
            low.append(content)
            continue
        scope_id = {"user": "", "project": project or "", "task": task or source}[proposed.scope]
        key = fact_id(content, proposed.scope, scope_id)
        tags = tuple(sorted({t.strip().lower() for t in proposed.tags if t.strip()}))
        expires = None
        if proposed.expires_in_days is not None:
            expires = now + timedelta(days=proposed.expires_in_days)
        existing = facts.get(key)
        if existing is not None:
            facts[key] = existing.model_copy(
                update={
                    "confidence": max(existing.confidence, proposed.confidence),
                    "tags": tuple(sorted({*existing.tags, *tags})),
                    "expires_at": later(existing.expires_at, expires),
                }
            )
            if key not in added:
                merged.append(key)
            continue
        facts[key] = Fact(
            id=key,
            content=content,
            category=proposed.category,
            confidence=proposed.confidence,
            created_at=now,
            source=source,
            tags=tags,
            scope=proposed.scope,
            scope_id=scope_id,
            expires_at=expires,
        )
        added.append(key)
    kept, evicted = cap_facts(tuple(facts.values()), settings.max_facts)
    threads = document.threads if source in document.threads else (*document.threads, source)
    new = document.model_copy(
        update={"user": user, "history": history, "facts": kept, "threads": threads}
    )
    return AppliedUpdate(
        document=new,
        added=tuple(k for k in added if k not in evicted),
        merged=tuple(merged),
        below_threshold=tuple(low),
        removed=removed,
        evicted=tuple(evicted),
    )


def later(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later of two expiries (``None``, never, is the latest)."""
    return None if a is None or b is None else max(a, b)


def cap_facts(facts: tuple[Fact, ...], max_facts: int) -> tuple[tuple[Fact, ...], list[str]]:
    """The facts kept under the cap (in their order) and the ids evicted.

    The lowest confidence goes first, then the oldest, then the greater id.
    """
    if len(facts) <= max_facts:
        return facts, []
    ranked = sorted(facts, key=lambda f: (-f.confidence, -f.created_at.timestamp(), f.id))
    keep = {f.id for f in ranked[:max_facts]}
    return tuple(f for f in facts if f.id in keep), [f.id for f in ranked[max_facts:]]
