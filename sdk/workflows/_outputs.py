"""What a stage returns: the default output schema, and turning a reply into a checked output.

An agent may reply with an instance of the stage's schema, any other pydantic model, a
mapping, a JSON text (optionally inside one Markdown code fence, as chat models like to
write it) or a chat message whose text is such a JSON text. :func:`check_output` validates it
against the stage's schema; :func:`raw_record` keeps what the agent said, as JSON a person can
read and fix in the state file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
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

_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```\s*\Z", re.S)


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
            can read the source text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary: str
    key_findings: list[Finding] = Field(default_factory=list)
    confidence: Confidence
    next_stage_recommendations: list[str] = Field(default_factory=list)
    raw_data_refs: list[str] = Field(default_factory=list)


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
    if isinstance(reply, schema):
        return reply
    if isinstance(reply, BaseModel):
        return schema.model_validate(reply.model_dump(mode="json"))
    if isinstance(reply, Mapping):
        return schema.model_validate(dict(reply))
    if isinstance(reply, str):
        return schema.model_validate_json(_json_text(reply))
    raise TypeError(
        f"a stage's agent returned {type(reply).__name__}; return the stage's schema, a "
        "mapping, a JSON text or a chat message"
    )


def raw_record(reply: object) -> Any:
    """What the agent returned, as JSON to keep in the state file for a person to fix.

    A JSON object or array (given as such, as a model, or as text) is kept as that structure,
    so it can be edited field by field; any other text is kept as the string it is.
    """
    if isinstance(reply, BaseMessage):
        reply = _text(reply)
    if isinstance(reply, BaseModel):
        return reply.model_dump(mode="json")
    if isinstance(reply, str):
        try:
            value = json.loads(_json_text(reply))
        except ValueError:
            return reply
        return value if isinstance(value, dict | list) else reply
    try:
        return json.loads(json.dumps(reply, ensure_ascii=False))
    except (TypeError, ValueError):
        return repr(reply)


def error_text(error: ValidationError | TypeError) -> str:
    """A validation error as a person reads it: one line per problem, with its field."""
    if isinstance(error, TypeError):
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
