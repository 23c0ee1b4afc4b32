"""Adapters that turn a chat model into a stage's agent."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from ctxfs.workflows._context import StageInput

__all__ = ["ModelAgent", "model_agent"]


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
