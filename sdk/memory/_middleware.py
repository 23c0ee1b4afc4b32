"""Long-term memory as a LangChain agent middleware.

Example:
    >>> from langchain.agents import create_agent
    >>> from ctxfs import Workspace
    >>> from ctxfs.memory import LongTermMemory, MemoryMiddleware
    >>> from ctxfs.testing import ScriptedChatModel
    >>> memory = LongTermMemory(Workspace("memory://mw-doc"), ("alice",))
    >>> agent = create_agent(ScriptedChatModel(responses=["Hi."]), [],
    ...     middleware=[MemoryMiddleware(memory)])
    >>> agent.invoke({"messages": [("user", "hello")]})["messages"][-1].content
    'Hi.'

Needs the ``langchain`` extra: ``pip install 'ctxfs[langchain]'``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NotRequired

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from ctxfs._errors import WorkspaceError
from ctxfs.integrations._hooks import current_thread_id
from ctxfs.memory._inject import with_memory
from ctxfs.memory._memory import Learned, LongTermMemory, session_query

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.agents.middleware.types import ModelCallResult, ModelRequest, ModelResponse
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ctxfs.memory's MemoryMiddleware needs LangChain 1.x: pip install 'ctxfs[langchain]'"
    ) from exc

__all__ = ["MemoryMiddleware", "MemoryState"]

_log = logging.getLogger("ctxfs.memory")


class MemoryState(AgentState[Any]):
    """The agent state with what the memory middleware injects.

    Attributes:
        memory_prompt: The ``<memory>`` block, rendered at the start of each run.
        memory_recalled: The ``<recalled>`` block, retrieved once at the start of a session.
    """

    memory_prompt: NotRequired[str]
    memory_recalled: NotRequired[str]


def _messages(state: Mapping[str, Any]) -> list[BaseMessage]:
    return list(state.get("messages") or [])


class MemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Learns from an agent's conversations and injects what it knows into the system prompt.

    What it does, per run of the agent:

    - **Before the run** (``before_agent``): learns from the threads whose debounce has
      elapsed, renders the ``<memory>`` block (user context, history, top facts, within
      ``max_injection_tokens``; the facts of the thread's task, or of the memory's
      ``task``, and project, none expired) and, at the start of a session (no answer in
      the thread yet), retrieves what is relevant to the user's request from earlier
      sessions (facts, archived transcripts, conversation logs; nothing the ``<memory>``
      block already says) into a ``<recalled>`` block. Both go into the state
      (``memory_prompt``, ``memory_recalled``), so every model call of the session sends the
      same system prompt (a provider's prompt cache stays valid).
    - **Each model call** (``wrap_model_call``): appends the blocks to the system message.
      Place this middleware *before* :class:`~ctxfs.integrations.langchain.ContextMiddleware`
      in ``middleware=[...]``: the outer one runs first, so the context engine counts the
      system message with the memory in it, as part of the request's budget.
    - **After the run** (``after_agent``): queues the turn's user messages and final answers
      under the thread (and logs them under the memory, for recall), to be learned from
      once the thread has been quiet for the debounce
      (the user's messages are queued at the start of the run already, in case compaction
      archives them during it). The queue lives in the process: call
      ``memory.flush()`` before the process ends to learn from turns still waiting.

    Failures of the memory (storage, a malformed memory file, the extraction model) are
    logged on the ``ctxfs.memory`` logger and never reach the agent: it runs without memory.
    Sync and async agents are both supported; the async hooks run the same code in a worker
    thread.

    Args:
        memory: The long-term memory (workspace, namespace, model, settings).
        recall: Retrieve from earlier sessions at the start of a session.
        on_learned: Called with what each extraction did (exceptions are logged).
    """

    state_schema = MemoryState  # the keys the middleware adds to the agent's state

    def __init__(
        self,
        memory: LongTermMemory,
        *,
        recall: bool = True,
        on_learned: Callable[[Learned], None] | None = None,
    ) -> None:
        super().__init__()
        self._memory = memory
        self._recall = recall
        self._on_learned = on_learned
        self.tools = []

    @property
    def memory(self) -> LongTermMemory:
        """The long-term memory."""
        return self._memory

    # The run hooks: one implementation, two thin shells.

    def _before(self, state: Mapping[str, Any], thread: str) -> dict[str, Any] | None:
        # The user's new message is queued now: compaction may archive it before the run
        # ends.
        self._memory.record(thread, _messages(state))
        self._learn(self._memory.process_due)
        update: dict[str, Any] = {}
        document = None
        try:
            document = self._memory.load()
            update["memory_prompt"] = self._memory.prompt(document, thread_id=thread).text
        except (WorkspaceError, OSError) as exc:
            _log.warning("ctxfs memory [%s]: no memory injected: %s", thread, exc)
            update["memory_prompt"] = ""
        if self._recall and "memory_recalled" not in state:
            query = session_query(_messages(state))
            if query is not None:
                try:
                    # a memory that did not load injects nothing, so nothing is left out
                    known = document if document is not None else self._memory.file.empty()
                    recalled = self._memory.recall_prompt(query, document=known, session=thread)
                    update["memory_recalled"] = recalled.text
                except (WorkspaceError, OSError) as exc:
                    _log.warning("ctxfs memory [%s]: nothing recalled: %s", thread, exc)
        return update

    def _after(self, state: Mapping[str, Any], thread: str) -> None:
        self._memory.record(thread, _messages(state))
        self._learn(self._memory.process_due)

    def _learn(self, step: Callable[[], list[Learned]]) -> None:
        try:
            learned = step()
        except (WorkspaceError, OSError, ValueError) as exc:
            _log.warning("ctxfs memory: learning failed, the turns wait for the next try: %s", exc)
            return
        for item in learned:
            if self._on_learned is not None:
                try:
                    self._on_learned(item)
                except Exception:
                    _log.exception("ctxfs memory: on_learned raised")

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Learns from due threads; renders the memory; recalls at the start of a session."""
        return self._before(state, current_thread_id())

    async def abefore_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """The async twin of :meth:`before_agent` (in a worker thread)."""
        return await asyncio.to_thread(self._before, state, current_thread_id())

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Queues the turn to be learned from; learns from due threads."""
        self._after(state, current_thread_id())
        return None

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """The async twin of :meth:`after_agent` (in a worker thread)."""
        await asyncio.to_thread(self._after, state, current_thread_id())
        return None

    # The model hook: the request change written once.

    def _with_memory(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        state = request.state if isinstance(request.state, Mapping) else {}
        blocks = (str(state.get("memory_prompt") or ""), str(state.get("memory_recalled") or ""))
        if not any(blocks):
            return request
        return request.override(system_message=with_memory(request.system_message, *blocks))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelCallResult[Any]:
        """Sends the request with the memory blocks appended to its system message."""
        return handler(self._with_memory(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """The async twin of :meth:`wrap_model_call`."""
        return await handler(self._with_memory(request))
