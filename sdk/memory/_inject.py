"""The memory as the model sees it: a ``<memory>`` block within a token budget.

Pieces go in by priority: the user context (work, personal, top of mind), then the history
(recent months first), then the facts by confidence, highest first. The whole block, tags
and newlines included, is counted exactly with the token counter after each piece; the
first piece that does not fit ends the block (a summary too long for what is left is cut to
fit, a fact is never cut: it goes, with every fact of lower confidence). So the block is
always a prefix of the priority order, and the facts it holds are the most confident ones.

The recalled block (``<recalled>``, what retrieval found at the start of a session) is built
the same way from the hits, best first, under its own budget.

What the model sees is framed by ctxfs and quoted through :mod:`ctxfs._sections`: the tags,
the ``## `` headings and the ``- `` (or ``- [category, confidence] ``) line prefixes are
ctxfs's; every quoted text (a summary, a fact, a passage, a path) is put on its line with
:func:`~ctxfs._sections.one_line` (line breaks and control characters become spaces, a ``<``
that would open or close a ctxfs section is written ``&lt;``). So no fact or passage can end
its block, start another line, or pass for a heading: the block's lines are exactly the
frame's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from langchain_core.messages import SystemMessage

from ctxfs._sections import SECTION_NAMES, neutralize, one_line
from ctxfs._tokens import TokenCounter
from ctxfs.memory._document import Fact, MemoryDocument, now_utc
from ctxfs.memory._retrieval import MemoryHit

__all__ = ["InjectedMemory", "memory_block", "recalled_block", "with_memory"]

_USER = (("work", "Work"), ("personal", "Personal"), ("top_of_mind", "Top of mind"))
_HISTORY = (("recent", "Recent months"), ("earlier", "Earlier"), ("background", "Background"))
_ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class InjectedMemory:
    """A rendered block and what went into it.

    Attributes:
        text: The block (``""`` when there is nothing to inject).
        tokens: Its exact token count.
        facts: Ids of the facts (or hit references) it holds, in order.
        dropped: Ids of the facts (or hits) left out for the budget.
        cut: Whether a summary was cut short to fit.
    """

    text: str
    tokens: int
    facts: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    cut: bool = False


@dataclass(frozen=True, slots=True)
class _Piece:
    """One line of a block: ctxfs's ``prefix``, then the quoted ``text`` (one line)."""

    section: str
    prefix: str
    text: str
    ref: str | None = None  # a fact id: never cut
    cuttable: bool = False

    @property
    def line(self) -> str:
        return self.prefix + self.text


def _piece(
    section: str, prefix: str, quoted: str, ref: str | None = None, cuttable: bool = False
) -> _Piece:
    return _Piece(section, prefix, one_line(quoted), ref, cuttable)


def _pieces(document: MemoryDocument, facts: Sequence[Fact]) -> list[_Piece]:
    pieces = []
    for name, label in _USER:
        value = getattr(document.user, name)
        if value:
            pieces.append(_piece("User context", f"- {label}: ", value, cuttable=True))
    for name, label in _HISTORY:
        value = getattr(document.history, name)
        if value:
            pieces.append(_piece("History", f"- {label}: ", value, cuttable=True))
    ranked = sorted(facts, key=lambda f: (-f.confidence, -f.created_at.timestamp(), f.id))
    for fact in ranked:
        prefix = f"- [{fact.category}, {fact.confidence:.2f}] "
        pieces.append(_piece("Facts", prefix, fact.content, fact.id))
    return pieces


def _render(tag: str, pieces: Sequence[_Piece]) -> str:
    if tag not in SECTION_NAMES:  # pragma: no cover - the two tags of this module are there
        raise ValueError(f"{tag!r} is not a ctxfs section")
    lines = [f"<{tag}>"]
    section = None
    for piece in pieces:
        if piece.section != section:
            section = piece.section
            lines.append(f"## {section}")
        lines.append(piece.line)
    lines.append(f"</{tag}>")
    return "\n".join(lines)


def _fit(tag: str, pieces: Sequence[_Piece], counter: TokenCounter, budget: int) -> InjectedMemory:
    chosen: list[_Piece] = []
    tokens = 0
    cut = False
    for index, piece in enumerate(pieces):
        trial = _render(tag, [*chosen, piece])
        count = counter.count_text(trial)
        if count <= budget:
            chosen.append(piece)
            tokens = count
            continue
        shorter = _cut_to_fit(tag, chosen, piece, counter, budget) if piece.cuttable else None
        if shorter is not None:
            chosen.append(shorter)
            tokens = counter.count_text(_render(tag, chosen))
            cut = True
            index += 1
        dropped = tuple(p.ref for p in pieces[index:] if p.ref is not None)
        break
    else:
        dropped = ()
    if not chosen:
        return InjectedMemory("", 0, dropped=dropped)
    return InjectedMemory(
        _render(tag, chosen),
        tokens,
        facts=tuple(p.ref for p in chosen if p.ref is not None),
        dropped=dropped,
        cut=cut,
    )


def _cut_to_fit(
    tag: str, chosen: list[_Piece], piece: _Piece, counter: TokenCounter, budget: int
) -> _Piece | None:
    """The longest prefix of ``piece`` (ending in an ellipsis) that fits, or ``None``."""
    lo, hi = 1, len(piece.text) - 1
    best: _Piece | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        # a cut can turn "<memoryx" into "<memory…": quote the cut text again
        text = neutralize(piece.text[:mid].rstrip() + _ELLIPSIS)
        candidate = _Piece(piece.section, piece.prefix, text, piece.ref, cuttable=True)
        if counter.count_text(_render(tag, [*chosen, candidate])) <= budget:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


def memory_block(
    document: MemoryDocument,
    counter: TokenCounter,
    max_tokens: int,
    *,
    task: str | None = None,
    project: str | None = None,
    now: datetime | None = None,
) -> InjectedMemory:
    """The ``<memory>`` block of ``document`` within ``max_tokens`` (see the module docstring).

    Only the facts for a session of ``task`` in ``project`` at ``now`` (the current time by
    default) go in (:meth:`~ctxfs.memory.Fact.visible`): no expired fact, no fact of another
    project, no fact of another task (nor any task fact without a ``task``).

    Example:
        >>> from ctxfs import TiktokenCounter
        >>> from ctxfs.memory import MemoryDocument, UserContext
        >>> doc = MemoryDocument(namespace=("alice",), user=UserContext(work="Data engineer."))
        >>> print(memory_block(doc, TiktokenCounter(), 100).text)
        <memory>
        ## User context
        - Work: Data engineer.
        </memory>
    """
    when = now_utc() if now is None else now
    facts = [f for f in document.facts if f.visible(task=task, project=project, now=when)]
    return _fit("memory", _pieces(document, facts), counter, max_tokens)


def recalled_block(
    hits: Sequence[MemoryHit], counter: TokenCounter, max_tokens: int
) -> InjectedMemory:
    """The ``<recalled>`` block of retrieval hits, best first, within ``max_tokens``."""
    pieces = []
    for hit in hits:
        where = hit.path if hit.kind == "transcript" else f"{hit.path} {hit.ref}"
        text = " ".join(hit.text.split())
        prefix = f"- ({one_line(where)}) "
        pieces.append(_piece("From earlier sessions", prefix, text, hit.ref, True))
    return _fit("recalled", pieces, counter, max_tokens)


def with_memory(system: SystemMessage | str | None, *blocks: str) -> SystemMessage | None:
    """The system message with the blocks appended (a blank line apart).

    Returns ``system`` as a message, unchanged, when every block is empty; ``None`` when
    there is neither a system message nor a block.
    """
    extra = "\n\n".join(b for b in blocks if b)
    if system is None:
        return SystemMessage(extra) if extra else None
    message = SystemMessage(system) if isinstance(system, str) else system
    if not extra:
        return message
    content = message.content
    if isinstance(content, str):
        new: str | list[str | dict[object, object]] = f"{content}\n\n{extra}" if content else extra
    else:
        new = [*content, {"type": "text", "text": extra}]
    return message.model_copy(update={"content": new})
