"""Adapters that turn a chat model or a ctxfs sub-agent into a stage's agent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from ctxfs._errors import WorkflowError
from ctxfs.workflows._context import StageInput

if TYPE_CHECKING:
    from ctxfs.subagents import SubAgents

__all__ = ["ModelAgent", "SubAgentStage", "model_agent", "subagent_agent"]


class ModelAgent:
    """A stage's agent that asks a chat model once for the stage's JSON output.

    The model gets two messages: a system message with the stage's prompt and the JSON
    schema its reply must match (:meth:`StageInput.instructions`), and a user message with
    the task, the earlier stages' outputs and the memory (:meth:`StageInput.render`). Its
    reply is returned as it is; the workflow validates it.

    Attributes:
        model: The chat model.
    """

    def __init__(self, model: BaseChatModel) -> None:
        if not isinstance(model, BaseChatModel):
            raise TypeError(
                f"model_agent needs a langchain chat model (BaseChatModel), not "
                f"{type(model).__name__}"
            )
        self.model = model

    def __call__(self, stage_input: StageInput, /) -> AIMessage:
        """Asks the model for the stage's output."""
        messages = [
            SystemMessage(stage_input.instructions()),
            HumanMessage(stage_input.render()),
        ]
        reply = self.model.invoke(messages)
        stage_input.checkpoint(f"{type(self.model).__name__} answered")
        if not isinstance(reply, AIMessage):  # pragma: no cover - chat models return AIMessage
            return AIMessage(content=reply.content)
        return reply


def model_agent(model: BaseChatModel) -> ModelAgent:
    """A stage's agent that asks ``model`` once for the stage's output (see :class:`ModelAgent`).

    Example:
        >>> from ctxfs.testing import ScriptedChatModel
        >>> agent = model_agent(ScriptedChatModel(responses=['{"summary": "ok", '
        ...                                                   '"confidence": "high"}']))
    """
    return ModelAgent(model)


class SubAgentStage:
    """A stage's agent that hands the stage to a ctxfs sub-agent (:mod:`ctxfs.subagents`).

    The sub-agent runs in its own context window on a thread of its own, with the workspace
    tools on the shared workspace: it reads the raw material earlier stages stored, and
    everything it sees is archived. Its task is the stage's instructions (prompt and JSON
    schema) followed by the stage's input; its final answer is the stage's output, validated
    by the workflow.

    The sub-agent's thread is named from the workflow (parent thread ``workflow-<id>``) and
    the stage and attempt (call ``<stage>-<attempt>``): after a crash, a sub-task that had
    finished is not run again (its recorded result is reused), and ``resume(retry=True)``
    after a halt starts a fresh attempt.

    Attributes:
        subagents: The registry that runs the sub-agent.
        name: The registered sub-agent to run.
    """

    def __init__(self, subagents: SubAgents, name: str) -> None:
        subagents.get(name)  # an unknown name fails here, listing the registered ones
        self.subagents = subagents
        self.name = name

    def __call__(self, stage_input: StageInput, /) -> str:
        """Runs the sub-agent on the stage; returns its final answer."""
        result = self.subagents.run(
            self.name,
            f"{stage_input.instructions()}\n\n{stage_input.render()}",
            parent_thread_id=f"workflow-{stage_input.workflow_id}",
            tool_call_id=f"{stage_input.stage}-{stage_input.attempt}",
        )
        if result.status == "failed":
            raise WorkflowError(
                f"stage {stage_input.stage!r}: sub-agent {self.name!r} failed ({result.reason}); "
                f"its transcript: {result.transcript or 'not written'}"
            )
        stage_input.checkpoint(f"sub-agent {self.name!r} {result.status}")
        return result.answer


def subagent_agent(subagents: SubAgents, name: str = "general-purpose") -> SubAgentStage:
    """A stage's agent run by the sub-agent ``name`` (see :class:`SubAgentStage`).

    Raises:
        UnknownSubAgentError: ``name`` is not registered.
    """
    return SubAgentStage(subagents, name)
