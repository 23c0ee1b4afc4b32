"""The long-term memory document: what is remembered about a user (or an agent), as data.

One document per namespace, stored as JSON (:func:`encode_document`, :func:`parse_document`)
with a Markdown rendering for people (:func:`render_markdown`). A file that does not parse
raises :class:`~ctxfs._errors.MemoryFormatError` naming the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from ctxfs._errors import MemoryFormatError
from ctxfs._json import (
    JsonDepthError,
    JsonDuplicateKeyError,
    NewerFormatError,
    check_format_version,
    loads_bounded,
)
from ctxfs._sections import one_line

__all__ = [
    "DOCUMENT_FORMAT",
    "Change",
    "Fact",
    "FactCategory",
    "FactScope",
    "History",
    "MemoryDocument",
    "UserContext",
    "encode_document",
    "fact_id",
    "normalize_fact",
    "parse_document",
    "render_markdown",
]

DOCUMENT_FORMAT = "ctxfs-memory"
"""The ``format`` field of every memory document."""

_DOCUMENT_VERSION = 1
"""The newest format version of a memory document this ctxfs reads (and the one it writes)."""

FactCategory = Literal["preference", "knowledge", "context", "behavior", "goal"]
"""What kind of thing a fact is: a preference of the user, something known about their work
or world, context about their situation, how they behave, or a goal they pursue."""

_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")
_SPACES = re.compile(r"\s+")

Namespace = tuple[str, ...]

ThreadId = Annotated[str, StringConstraints(strip_whitespace=False)]
"""A thread id, kept exactly (spaces included: it names the thread's transcript folder)."""


def check_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """Returns ``namespace`` if every segment is a plain folder name, else raises ValueError.

    Segments are folder names under ``/memories/``: letters, digits, ``.``, ``_`` and ``-``,
    not starting with a dot, at most 64 characters.
    """
    if not namespace:
        raise ValueError("a memory namespace needs at least one segment, e.g. ('alice',)")
    for segment in namespace:
        if not isinstance(segment, str) or not _SEGMENT.fullmatch(segment):
            raise ValueError(
                f"memory namespace segment {segment!r} is not a plain name: use letters, "
                "digits, '.', '_' and '-' (not starting with '.'), at most 64 characters"
            )
    return namespace


def normalize_fact(content: str) -> str:
    """The key two facts are duplicates by: case folded, spaces collapsed, end dot removed."""
    text = unicodedata.normalize("NFKC", content).casefold()
    return _SPACES.sub(" ", text).strip().rstrip(".!").strip()


FactScope = Literal["user", "project", "task"]
"""Whom a fact is about: the user (every session), a project (its sessions), or one task."""


def fact_id(content: str, scope: FactScope = "user", scope_id: str = "") -> str:
    """A fact's id, derived from its normalized content and its scope (so two writers agree
    on it; a user fact's id depends on its content only)."""
    key = normalize_fact(content)
    if scope != "user":
        key = f"{scope}\x00{scope_id}\x00{key}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"fact-{digest[:12]}"


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("a time needs a time zone, e.g. 2026-01-31T12:00:00Z")
    return value.astimezone(UTC)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class Fact(_Frozen):
    """One remembered fact.

    Attributes:
        id: Stable id (``fact-`` and 12 hex digits of the normalized content's SHA-256).
            One chosen by an application is letters, digits and ``_ . : @ + -`` only: it is
            printed as it is in memory files and prompts, so it holds no space, line break,
            backtick or bracket that could start a line or a section of its own.
        content: The fact, one sentence.
        category: What kind of fact it is (see :data:`FactCategory`).
        confidence: How sure the extraction was, 0 to 1.
        created_at: When it was first learned (UTC).
        source: Where it was learned: the thread id of the conversation.
        tags: Topics, to scope retrieval (``"billing"``, ``"infra"``...).
        scope: Whom it is about (see :data:`FactScope`); only a ``"user"`` fact reaches
            every session.
        scope_id: The project or task id of a ``"project"`` or ``"task"`` fact.
        expires_at: When it stops being true (UTC), ``None`` if it does not: from then on
            it is neither injected nor retrieved.
    """

    id: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[\w.:@+\-]+$")]
    content: Annotated[str, Field(min_length=1)]
    category: FactCategory
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    created_at: datetime
    source: ThreadId = ""
    tags: tuple[str, ...] = ()
    scope: FactScope = "user"
    scope_id: ThreadId = ""
    expires_at: datetime | None = None

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        aware = _aware(value)
        assert aware is not None
        return aware

    @field_validator("expires_at")
    @classmethod
    def _utc_or_none(cls, value: datetime | None) -> datetime | None:
        return _aware(value)

    def visible(self, *, task: str | None, project: str | None, now: datetime) -> bool:
        """Whether this fact belongs in a session of ``task`` in ``project`` at ``now``:
        not expired, and a user fact, or a fact of that project, or of that very task."""
        if self.expires_at is not None and self.expires_at <= now:
            return False
        if self.scope == "project":
            return self.scope_id == (project or "")
        if self.scope == "task":
            return task is not None and self.scope_id == task
        return True


class Change(_Frozen):
    """What made a version of a memory document.

    Attributes:
        kind: What changed it: ``"learn"`` (an extraction), ``"apply"`` (an update from
            code), ``"forget"``, ``"replace"``, ``"rollback"``, ``"consolidate"``, ``"edit"``.
        by: Who or what: the extraction model, ``"ctxfs memory forget"``, a name given.
        thread: The conversation it came from (``""`` if none).
        at: When (UTC).
        note: What it did, in a few words (``"added 2, merged 1"``).
    """

    kind: Annotated[str, Field(min_length=1, max_length=64)]
    by: str = ""
    thread: ThreadId = ""
    at: datetime
    note: str = ""

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        aware = _aware(value)
        assert aware is not None
        return aware


class UserContext(_Frozen):
    """What the user is about, in three short summaries (empty when unknown).

    Attributes:
        work: Their work: role, projects, tools.
        personal: Personal context they shared: languages, location, interests.
        top_of_mind: What they are busy with right now.
    """

    work: str = ""
    personal: str = ""
    top_of_mind: str = ""


class History(_Frozen):
    """The user's history with the agent, from recent to long ago (empty when unknown).

    Attributes:
        recent: The recent months.
        earlier: Earlier context.
        background: Long-term background.
    """

    recent: str = ""
    earlier: str = ""
    background: str = ""


class MemoryDocument(_Frozen):
    """Everything remembered in one namespace (a user, an agent, a user's agent...).

    Attributes:
        format: Always ``"ctxfs-memory"``.
        version: The format version, 1.
        namespace: Whose memory it is, e.g. ``("alice",)`` or ``("alice", "coder")``.
        user: The user context summaries.
        history: The history summaries.
        facts: The facts, at most the configured ``max_facts``.
        threads: The conversations (thread ids) whose turns were learned from, oldest first:
            retrieval scoped to this namespace searches their archived transcripts.
        updated_at: When the document was last written (UTC), ``None`` if never.
        revision: The number of this version: 1 for the first write, one more for each
            change (0 for a document never written, or written before versions).
        change: What made this version (``None`` for revision 0).
    """

    format: Literal["ctxfs-memory"] = "ctxfs-memory"
    version: Literal[1] = 1
    namespace: tuple[str, ...]
    user: UserContext = UserContext()
    history: History = History()
    facts: tuple[Fact, ...] = ()
    threads: tuple[ThreadId, ...] = ()
    updated_at: datetime | None = None
    revision: Annotated[int, Field(ge=0)] = 0
    change: Change | None = None

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return check_namespace(value)

    @field_validator("facts")
    @classmethod
    def _unique(cls, facts: tuple[Fact, ...]) -> tuple[Fact, ...]:
        seen: set[str] = set()
        for fact in facts:
            if fact.id in seen:
                raise ValueError(f"two facts have the id {fact.id!r}; ids must be unique")
            seen.add(fact.id)
        return facts

    def fact(self, id: str) -> Fact | None:
        """The fact with this id, or ``None``."""
        return next((f for f in self.facts if f.id == id), None)

    def content(self) -> tuple[object, ...]:
        """What the document remembers (not when or why it was written): two versions with
        the same content are the same memory."""
        return (self.user, self.history, self.facts, self.threads)


def encode_document(document: MemoryDocument) -> bytes:
    """The JSON bytes stored for a document (indented, keys in field order, UTF-8)."""
    text = json.dumps(document.model_dump(mode="json"), ensure_ascii=False, indent=2)
    return (text + "\n").encode("utf-8")


def parse_document(data: bytes, path: str) -> MemoryDocument:
    """Parses a stored memory document.

    Args:
        data: The file's bytes.
        path: Its virtual path, for the error message.

    Raises:
        MemoryFormatError: Not UTF-8 JSON, nested deeper than a memory document can be (see
            :data:`~ctxfs._json.MAX_JSON_DEPTH`), not an object, or a field is
            missing or invalid (the first invalid field is named, dotted:
            ``facts.3.confidence``).
    """
    try:
        raw = loads_bounded(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MemoryFormatError(f"not UTF-8 text ({exc.reason})", path=path) from None
    except JsonDepthError as exc:
        raise MemoryFormatError(str(exc), path=path) from None
    except JsonDuplicateKeyError as exc:
        raise MemoryFormatError(str(exc), path=path, field=exc.key) from None
    except json.JSONDecodeError as exc:
        raise MemoryFormatError(
            f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", path=path
        ) from None
    if not isinstance(raw, dict):
        raise MemoryFormatError("not a JSON object", path=path)
    if raw.get("format") != DOCUMENT_FORMAT:
        raise MemoryFormatError(
            f"expected {DOCUMENT_FORMAT!r}, found {raw.get('format')!r}", path=path, field="format"
        )
    try:
        check_format_version(raw.get("version"), _DOCUMENT_VERSION, "the document")
    except NewerFormatError as exc:
        raise MemoryFormatError(str(exc), path=path, field="version") from None
    try:
        return MemoryDocument.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or None
        raise MemoryFormatError(error["msg"], path=path, field=field) from None


_USER_LABELS = (("work", "Work"), ("personal", "Personal"), ("top_of_mind", "Top of mind"))
_HISTORY_LABELS = (
    ("recent", "Recent months"),
    ("earlier", "Earlier"),
    ("background", "Background"),
)


def render_markdown(document: MemoryDocument) -> str:
    """The document for people: user context, history, then facts by confidence."""
    lines = [f"# Memory: {' / '.join(document.namespace)}", ""]
    if document.updated_at is not None:
        version = f" (version {document.revision})" if document.revision else ""
        lines += [f"Updated {document.updated_at.isoformat()}{version}.", ""]
    for title, part, labels in (
        ("User context", document.user, _USER_LABELS),
        ("History", document.history, _HISTORY_LABELS),
    ):
        filled = [(label, getattr(part, name)) for name, label in labels if getattr(part, name)]
        if filled:
            lines += [f"## {title}", ""]
            lines += [f"- **{label}:** {one_line(text)}" for label, text in filled]
            lines.append("")
    if document.facts:
        lines += ["## Facts", ""]
        for fact in sorted(document.facts, key=lambda f: (-f.confidence, f.id)):
            tags = f" [{one_line(', '.join(fact.tags))}]" if fact.tags else ""
            scope = "" if fact.scope == "user" else f", {fact.scope} {fact.scope_id or '-'}"
            until = "" if fact.expires_at is None else f", until {fact.expires_at.isoformat()}"
            lines.append(
                # a fact is one item: its text cannot start a line (a forged fact or heading)
                f"- {one_line(fact.content)} ({fact.category}, confidence "
                f"{fact.confidence:.2f}, {fact.created_at.date().isoformat()}, from "
                f"{one_line(fact.source or '?')}{one_line(scope)}{until}){tags} `{fact.id}`"
            )
        lines.append("")
    return "\n".join(lines)


def now_utc() -> datetime:
    """The current time in UTC (the default clock of the memory)."""
    return datetime.now(UTC)
