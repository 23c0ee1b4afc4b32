"""A workflow's parts: stages, the agent and memory protocols, and the policy."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ctxfs._policy._settings import _Settings
from ctxfs.workflows._context import StageInput
from ctxfs.workflows._outputs import StageOutput, StageReply

__all__ = [
    "NAME_PATTERN",
    "MemoryHitLike",
    "MemoryRetriever",
    "MemorySearch",
    "Stage",
    "StageAgent",
    "WorkflowPolicy",
    "check_name",
    "check_stages",
    "retrieve",
]

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""Stage names and workflow ids: they become file names in the workspace."""


def check_name(kind: str, name: str) -> str:
    """Returns ``name`` if it can be a file name, else raises a ``ValueError`` saying why."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"{kind} {name!r} must be 1 to 64 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit (it names files in the workspace), e.g. 'researcher'"
        )
    return name


@runtime_checkable
class StageAgent(Protocol):
    """Runs one stage: any callable from the stage's input to its reply.

    The reply is an instance of the stage's schema, a mapping, a JSON text or a chat message
    whose text is JSON (see :data:`ctxfs.workflows.StageReply`). A plain function, a
    :func:`~ctxfs.workflows.model_agent` over a chat model, or a ctxfs sub-agent wrapped by
    :func:`~ctxfs.workflows.subagent_agent` all fit.
    """

    def __call__(self, stage_input: StageInput, /) -> StageReply:
        """Returns the stage's output for ``stage_input``."""
        ...


@runtime_checkable
class MemoryRetriever(Protocol):
    """Finds long-term memory for a task: any callable from the task to texts, best first."""

    def __call__(self, query: str, /) -> Sequence[str]:
        """Returns the memory items relevant to ``query``, most relevant first."""
        ...


class MemoryHitLike(Protocol):
    """What a search hit of :mod:`ctxfs.memory` carries that a stage is shown."""

    @property
    def text(self) -> str:
        """The fact, or the transcript passage."""
        ...

    @property
    def path(self) -> str:
        """Where it lives in the workspace."""
        ...


@runtime_checkable
class MemorySearch(Protocol):
    """A long-term memory retriever with a ``search`` method, as :mod:`ctxfs.memory` has
    (``KeywordRetriever``, ``StoreRetriever``)."""

    def search(self, query: str, *, k: int = ...) -> Sequence[MemoryHitLike]:
        """The ``k`` best hits for ``query``, best first."""
        ...


def retrieve(memory: MemoryRetriever | MemorySearch | None, task: str, k: int) -> list[str]:
    """The memory items for ``task``: a search's ``k`` best hits (each with where it lives)
    or what a callable returns, in their order."""
    if memory is None:
        return []
    if isinstance(memory, MemorySearch):
        return [f"{hit.text} (from {hit.path})" for hit in memory.search(task, k=k)]
    return [str(item) for item in memory(task)]


@dataclass(frozen=True, kw_only=True)
class Stage:
    """One step of a workflow, run by its own agent in its own context.

    Example:
        >>> Stage(name="planner", prompt="Plan the research.", agent=lambda _: {
        ...     "summary": "Read the two reports.", "confidence": "high"}).schema.__name__
        'StageOutput'

    Attributes:
        name: Names the stage in the state file and its output file: letters, digits, ``.``,
            ``_`` and ``-``, up to 64 characters.
        prompt: The stage's instructions.
        agent: Runs the stage (see :class:`StageAgent`).
        schema: The pydantic model its output must match; default
            :class:`~ctxfs.workflows.StageOutput`.

    Raises:
        ValueError: A name that cannot be a file name, or an empty prompt.
        TypeError: An agent that is not callable, or a schema that is not a pydantic model.
    """

    name: str
    prompt: str
    agent: StageAgent = field(repr=False)
    schema: type[BaseModel] = StageOutput

    def __post_init__(self) -> None:
        check_name("stage name", self.name)
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError(f"stage {self.name!r} needs a prompt: what this stage should do")
        if not callable(self.agent):
            raise TypeError(
                f"stage {self.name!r}: agent must be callable (a function of the StageInput, "
                f"a model_agent(...), a subagent_agent(...)), not {type(self.agent).__name__}"
            )
        if not (isinstance(self.schema, type) and issubclass(self.schema, BaseModel)):
            raise TypeError(
                f"stage {self.name!r}: schema must be a pydantic model class, not {self.schema!r}"
            )


def check_stages(stages: Sequence[Stage]) -> tuple[Stage, ...]:
    """The stages as a tuple, checked: at least one, all :class:`Stage`, names unique."""
    checked = tuple(stages)
    if not checked:
        raise ValueError("a workflow needs at least one stage")
    for stage in checked:
        if not isinstance(stage, Stage):
            raise TypeError(f"stages must be Stage objects, not {type(stage).__name__}")
    names = [stage.name for stage in checked]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"stage names must be unique; repeated: {', '.join(repeated)}")
    return checked


class WorkflowPolicy(_Settings):
    """How much each stage is given, and how often a running stage is checkpointed.

    Attributes:
        previous_outputs_tokens: The most tokens of earlier stages' outputs a stage is shown
            (counted exactly on the text it receives). Outputs beyond it are shown as their
            summary, or not at all; every full output stays readable in the workspace.
        memory_tokens: The most tokens of long-term memory a stage is shown.
        memory_items: How many hits to ask a memory search for (a ``search`` retriever of
            :mod:`ctxfs.memory`); a plain callable decides for itself.
        checkpoint_interval: Seconds between state-file writes while a stage runs, at the
            checkpoints the stage reports (``stage_input.checkpoint(note)``); ``None``
            writes only when a stage ends.
        snapshot_chars: Length of each memory snapshot's summary in the state file.
    """

    previous_outputs_tokens: int = Field(default=4_000, ge=0)
    memory_tokens: int = Field(default=1_000, ge=0)
    memory_items: int = Field(default=8, ge=1)
    checkpoint_interval: float | None = Field(default=30.0, ge=0)
    snapshot_chars: int = Field(default=280, ge=1)
