"""What a stage returns: the default output schema, and turning a reply into a checked output.

An agent may reply with an instance of the stage's schema, any other pydantic model, a
mapping, a JSON text (optionally inside one Markdown code fence, as chat models like to
write it) or a chat message whose text is such a JSON text. :func:`check_output` validates it
against the stage's schema; :func:`raw_record` keeps what the agent said, as JSON a person can
read and fix in the state file.

A reply is refused (the stage halts, the reply recorded) when it nests deeper than
:data:`MAX_REPLY_DEPTH` levels: the state file keeps it a few levels down, and every state
file must stay readable (:func:`~ctxfs._json.loads_bounded`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Final, Literal

from langchain_core.messages import BaseMessage
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ctxfs._errors import UnsafePathError
from ctxfs._json import MAX_JSON_DEPTH, json_depth, loads_bounded
from ctxfs.sandbox import normalize_path

__all__ = [
    "MAX_REPLY_DEPTH",
    "Confidence",
    "Finding",
    "StageOutput",
    "StageReply",
    "check_output",
    "confidence_of",
    "error_text",
    "raw_record",
    "summary_of",
]

Confidence = Literal["high", "medium", "low"]
"""How sure a stage is of its output; the next stage sees it."""

StageReply = BaseModel | Mapping[str, Any] | str | BaseMessage
"""What a stage's agent may return (see the module docstring)."""

MAX_REPLY_DEPTH: Final = MAX_JSON_DEPTH - 8
"""The deepest nesting of a stage's output or recorded reply (the state file adds 4 levels)."""

_SURROGATE = re.compile(r"[\ud800-\udfff]|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```\s*\Z", re.S)


def _workspace_path(path: str) -> str:
    try:
        return normalize_path(path)
    except UnsafePathError as exc:
        raise ValueError(f"not a workspace path: {exc}") from None


WorkspacePath = Annotated[str, AfterValidator(_workspace_path)]
"""A workspace path, normalised; one that climbs out, is a URL or a drive path is refused."""


class Finding(BaseModel):
    """One fact a stage found, and where it comes from.

    Attributes:
        fact: The fact, in one or two sentences.
        source: Where it comes from: a workspace path, a URL, a document name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    fact: str
    source: str


class StageOutput(BaseModel):
    """The default schema of a stage's output.

    Attributes:
        summary: What the stage did and found, in a paragraph; shown to later stages when the
            whole output does not fit their budget.
        key_findings: The facts found, each with its source.
        confidence: ``high``, ``medium`` or ``low``; later stages see it.
        next_stage_recommendations: What the following stages should do or check.
        raw_data_refs: Workspace paths of the raw material the stage stored, so later stages
            can read the source text; normalised like any path an agent gives (``notes/a.md``
            becomes ``/notes/a.md``), and one that climbs out or is a URL is refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary: str
    key_findings: list[Finding] = Field(default_factory=list)
    confidence: Confidence
    next_stage_recommendations: list[str] = Field(default_factory=list)
    raw_data_refs: list[WorkspacePath] = Field(default_factory=list)


def _text(reply: BaseMessage) -> str:
    return reply.text


def _json_text(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text


def check_output(schema: type[BaseModel], reply: object) -> BaseModel:
    """Validates an agent's reply against ``schema``.

    Args:
        schema: The stage's output schema.
        reply: What the agent returned (see :data:`StageReply`).

    Returns:
        An instance of ``schema``.

    Raises:
        pydantic.ValidationError: The reply does not match the schema (or is not JSON).
        TypeError: The reply is of a kind no schema can come from (a number, ``None``...).
    """
    if isinstance(reply, BaseMessage):  # before BaseModel: a message is a pydantic model too
        reply = _text(reply)
    if isinstance(reply, str):
        text = _json_text(reply)
        _check_depth(json_depth(text), "its JSON")
        return _storable(_from_json_text(schema, text))
    if isinstance(reply, schema):
        return _storable(reply)
    if isinstance(reply, BaseModel):
        return _storable(schema.model_validate(_dumped(reply)))
    if isinstance(reply, Mapping):
        _check_depth(_depth(reply), "the mapping")
        return _storable(schema.model_validate(dict(reply)))
    raise TypeError(
        f"a stage's agent returned {type(reply).__name__}; return the stage's schema, a "
        "mapping, a JSON text or a chat message"
    )


def _from_json_text(schema: type[BaseModel], text: str) -> BaseModel:
    try:
        return schema.model_validate_json(text)
    except ValidationError as error:
        # pydantic's JSON parser refuses a lone surrogate (raw, or as a \ud800 escape), which
        # a model's reply may hold; Python's parser keeps it, so the reply is not lost.
        if not _SURROGATE.search(text):
            raise
        try:
            data = loads_bounded(text, unique_keys=False)  # as pydantic reads it
        except ValueError:
            raise error from None  # pydantic's message says what is wrong with the JSON
        return schema.model_validate(data)


def _dumped(model: BaseModel) -> dict[str, Any]:
    try:
        return model.model_dump(mode="json")
    except (ValueError, RecursionError) as exc:  # pydantic's serialization errors are ValueErrors
        raise TypeError(f"the output cannot be written as JSON: {exc}") from None


def _storable(output: BaseModel) -> BaseModel:
    _check_depth(_depth(_dumped(output)), "the output")
    return output


def _check_depth(depth: int, what: str) -> None:
    if depth > MAX_REPLY_DEPTH:
        raise TypeError(
            f"{what} nests {depth:,} levels deep; a stage's output may nest at most "
            f"{MAX_REPLY_DEPTH} (flatten it, or store the deep part in a file and reference it)"
        )


def _depth(value: object) -> int:
    """How deeply lists and mappings nest in ``value``; stops counting past the bound."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_REPLY_DEPTH:
            return deepest
        pending.extend((child, level + 1) for child in children)
    return deepest


def raw_record(reply: object) -> Any:
    """What the agent returned, as JSON to keep in the state file for a person to fix.

    A JSON object or array (given as such, as a model, or as text) is kept as that structure,
    so it can be edited field by field; any other text is kept as the string it is.
    """
    if isinstance(reply, BaseMessage):
        reply = _text(reply)
    if isinstance(reply, str):
        text = _json_text(reply)
        if json_depth(text) > MAX_REPLY_DEPTH:
            return reply  # kept as the text it is
        try:
            value = loads_bounded(text, unique_keys=False)  # a model's reply
        except ValueError:
            return reply
        return value if isinstance(value, dict | list) else reply
    if isinstance(reply, BaseModel):
        try:
            reply = _dumped(reply)
        except TypeError:
            return _cut(repr(reply))
    if _depth(reply) > MAX_REPLY_DEPTH:
        return (
            f"(not kept: a {type(reply).__name__} nested more than {MAX_REPLY_DEPTH} levels deep)"
        )
    try:
        return loads_bounded(json.dumps(reply, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return _cut(repr(reply))


def _cut(text: str, limit: int = 20_000) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def error_text(error: ValueError | TypeError) -> str:
    """A validation error as a person reads it: one line per problem, with its field."""
    if not isinstance(error, ValidationError):
        return str(error)
    lines = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "(the whole output)"
        lines.append(f"{where}: {problem['msg']}")
    return "\n".join(lines)


def summary_of(output: BaseModel) -> str | None:
    """The output's ``summary`` field when its schema has one as text, else ``None``."""
    value = getattr(output, "summary", None)
    return value if isinstance(value, str) else None


def confidence_of(output: BaseModel) -> str | None:
    """The output's ``confidence`` field when its schema has one as text, else ``None``."""
    value = getattr(output, "confidence", None)
    return value if isinstance(value, str) else None
