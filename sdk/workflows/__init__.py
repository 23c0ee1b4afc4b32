"""Staged workflows: ordered stages, each its own agent, resumable from a state file.

A :class:`Workflow` runs its :class:`Stage` s in strict sequence. Each stage's agent (any
callable, a chat model through :func:`model_agent`) gets only its prompt, the task, the
earlier stages' validated outputs within a token budget, and long-term memory retrieved for
the task (:class:`StageInput`); a ctxfs sub-agent runs a stage through
:func:`subagent_agent`. Outputs are validated against the stage's pydantic schema
(:class:`StageOutput` by default) and recorded in a human-readable state file,
``/sessions/<workflow id>.json``, written atomically after each stage: a workflow killed at
any point resumes from its first incomplete stage, and one halted by an invalid output
resumes after the output is fixed by hand in that file.

Example:
    >>> from ctxfs import Workspace
    >>> from ctxfs.workflows import Stage, Workflow
    >>> def plan(stage_input):
    ...     return {"summary": f"Plan for: {stage_input.task}", "confidence": "high"}
    >>> flow = Workflow(stages=[Stage(name="plan", prompt="Plan it.", agent=plan)],
    ...                 workspace=Workspace("memory://wf"))
    >>> flow.run("Audit the ledger", workflow_id="audit").outputs["plan"].summary
    'Plan for: Audit the ledger'
"""

from __future__ import annotations

from ctxfs.workflows._agents import ModelAgent, SubAgentStage, model_agent, subagent_agent
from ctxfs.workflows._context import PriorOutput, StageInput
from ctxfs.workflows._files import SESSIONS_DIR, list_workflows, read_state, state_path
from ctxfs.workflows._outputs import Confidence, Finding, StageOutput, StageReply
from ctxfs.workflows._stage import (
    MemoryHitLike,
    MemoryRetriever,
    MemorySearch,
    Stage,
    StageAgent,
    WorkflowPolicy,
)
from ctxfs.workflows._state import (
    CompletedStage,
    MemorySnapshot,
    Progress,
    SetAside,
    StageHalt,
    WorkflowState,
    WorkflowStatus,
)
from ctxfs.workflows._status import runner_status
from ctxfs.workflows._workflow import Workflow, WorkflowRun

__all__ = [
    "SESSIONS_DIR",
    "CompletedStage",
    "Confidence",
    "Finding",
    "MemoryHitLike",
    "MemoryRetriever",
    "MemorySearch",
    "MemorySnapshot",
    "ModelAgent",
    "PriorOutput",
    "Progress",
    "SetAside",
    "Stage",
    "StageAgent",
    "StageHalt",
    "StageInput",
    "StageOutput",
    "StageReply",
    "SubAgentStage",
    "Workflow",
    "WorkflowPolicy",
    "WorkflowRun",
    "WorkflowState",
    "WorkflowStatus",
    "list_workflows",
    "model_agent",
    "read_state",
    "runner_status",
    "state_path",
    "subagent_agent",
]
