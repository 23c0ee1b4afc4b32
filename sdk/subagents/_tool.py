"""The ``task`` tool: a LangChain tool that hands a task to a sub-agent and returns its report."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Protocol

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.types import Command
from pydantic import BaseModel, Field

from ctxfs._errors import TaskLimitError, UnknownSubAgentError, WorkspaceError
from ctxfs._sections import one_line
from ctxfs.integrations._hooks import current_thread_id
from ctxfs.subagents._result import TaskResult
from ctxfs.subagents._spec import SubAgent

__all__ = ["TaskArgs", "TaskRunner", "task_tool"]


class TaskRunner(Protocol):
    """What the ``task`` tool needs of a registry (:class:`~ctxfs.subagents.SubAgents` is one)."""

    def __iter__(self) -> Iterator[SubAgent]: ...

    def run(
        self,
        name: str,
        prompt: str,
        *,
        parent_thread_id: str,
        tool_call_id: str,
        depth: int = 1,
    ) -> TaskResult: ...

    async def arun(
        self,
        name: str,
        prompt: str,
        *,
        parent_thread_id: str,
        tool_call_id: str,
        depth: int = 1,
    ) -> TaskResult: ...


_DESCRIPTION = """Hand a task to a sub-agent, which works on it in its own context window and \
returns a short report.

The sub-agent sees only the description you give it, not this conversation: put everything it \
needs in the description, and say what it should return. It works on the same files as you: \
what it writes, and every tool result it saw, stays in the workspace; its report names its \
transcript, which you can grep or read_file for any detail it did not repeat. Tasks that do \
not depend on each other can run at the same time: call this tool several times in one message.

Sub-agent types:
{agents}"""


class TaskArgs(BaseModel):
    """The ``task`` tool's arguments."""

    description: str = Field(
        description=(
            "The whole task for the sub-agent, with all the context it needs and what it "
            "should report back."
        )
    )
    subagent_type: str = Field(description="Which sub-agent to use; one of the types listed.")
    tool_call_id: Annotated[str, InjectedToolCallId]


def task_tool(
    subagents: TaskRunner,
    *,
    parent_thread_id: str | None = None,
    artifacts_key: str | None = "artifacts",
    depth: int = 1,
) -> BaseTool:
    """The ``task`` tool over a registry, for ``create_agent`` or a langgraph ``ToolNode``.

    Each call runs :meth:`SubAgents.run <ctxfs.subagents.SubAgents.run>` (or ``arun`` in an
    async graph, so parallel calls run concurrently) with the calling graph's thread as the
    parent and the call's id; the sub-agent's steps
    (:class:`~ctxfs.subagents.TaskProgress`) and context events go to the graph's custom
    stream. It answers with a ``ToolMessage`` whose text is
    :meth:`TaskResult.to_text <ctxfs.subagents.TaskResult.to_text>` and whose ``artifact`` is
    :meth:`TaskResult.to_json <ctxfs.subagents.TaskResult.to_json>`; a failed sub-agent or an
    unknown type gives an error result (``status="error"``) the model can act on, never an
    exception (nor an empty description, a workspace that cannot take the sub-task's record,
    a model that cannot take its tools, or a thread that started the registry's
    ``max_tasks`` sub-tasks already: nothing runs then). Calls beyond the registry's
    ``max_parallel`` wait their turn. When the sub-agent
    wrote files and ``artifacts_key`` is set, the answer is a
    ``Command`` that also adds their paths to that state key (reduce it with
    :func:`~ctxfs.subagents.merge_artifacts`). The tool's description lists the sub-agents
    registered when it is made: register them first.

    Args:
        subagents: The registry.
        parent_thread_id: The thread the tool works for; ``None`` reads it from the running
            graph (see :func:`~ctxfs.integrations.langgraph.current_thread_id`).
        artifacts_key: The state key artifacts merge into, or ``None`` to update only the
            messages.
        depth: How deep the sub-agents it starts are nested (1: started by the top agent).
    """
    listing = "\n".join(f"- {spec.name}: {spec.description}" for spec in subagents)

    def parent() -> str:
        return parent_thread_id if parent_thread_id is not None else current_thread_id()

    def task(description: str, subagent_type: str, tool_call_id: str) -> Any:
        try:
            result = subagents.run(
                subagent_type,
                description,
                parent_thread_id=parent(),
                tool_call_id=tool_call_id,
                depth=depth,
            )
        except UnknownSubAgentError as exc:
            return _refusal(exc, tool_call_id)
        except Exception as exc:
            return _not_started(exc, subagent_type, tool_call_id)
        return _answer(result, artifacts_key)

    async def atask(description: str, subagent_type: str, tool_call_id: str) -> Any:
        try:
            result = await subagents.arun(
                subagent_type,
                description,
                parent_thread_id=parent(),
                tool_call_id=tool_call_id,
                depth=depth,
            )
        except UnknownSubAgentError as exc:
            return _refusal(exc, tool_call_id)
        except Exception as exc:
            return _not_started(exc, subagent_type, tool_call_id)
        return _answer(result, artifacts_key)

    return StructuredTool.from_function(
        func=task,
        coroutine=atask,
        name="task",
        description=_DESCRIPTION.format(agents=listing),
        args_schema=TaskArgs,
        infer_schema=False,
    )


def _refusal(exc: UnknownSubAgentError, tool_call_id: str) -> ToolMessage:
    return ToolMessage(
        content=f"Error: {exc}. Call task again with one of these as subagent_type.",
        tool_call_id=tool_call_id,
        name="task",
        status="error",
    )


def _not_started(exc: Exception, name: str, tool_call_id: str) -> ToolMessage:
    if isinstance(exc, TaskLimitError):
        why = (
            f"{exc}. No more sub-agents for this thread: do the rest yourself, with the "
            "reports and files you have."
        )
    elif isinstance(exc, WorkspaceError):
        why = f"the workspace refused its record ({exc}). Do the task yourself, or try again later."
    elif isinstance(exc, ValueError):  # an empty task, a nesting too deep, a reused call id
        why = f"{exc}."
    else:  # the model could not take the sub-agent's tools, or something else went wrong
        why = f"{type(exc).__name__}: {exc}. Do the task yourself."
    return ToolMessage(
        content=one_line(f"Error: sub-agent {name!r} could not start: {why}"),
        tool_call_id=tool_call_id,
        name="task",
        status="error",
    )


def _answer(result: TaskResult, artifacts_key: str | None) -> ToolMessage | Command[Any]:
    message = ToolMessage(
        content=result.to_text(),
        tool_call_id=result.tool_call_id,
        name="task",
        status="success" if result.ok else "error",
        artifact=result.to_json(),
    )
    if artifacts_key is None or not result.artifacts:
        return message
    return Command(update={"messages": [message], artifacts_key: list(result.artifacts)})
