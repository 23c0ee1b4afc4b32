"""The registry of sub-agents and the function behind the ``task`` tool."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.tools import BaseTool

from ctxfs._archive._transcripts import TranscriptArchive
from ctxfs._compaction._engine import ContextEngine
from ctxfs._errors import TaskLimitError, UnknownSubAgentError, WorkspaceError
from ctxfs._policy._settings import ContextPolicy
from ctxfs._summary._message import is_summary, summary_state
from ctxfs._summary._pins import is_pinned
from ctxfs._workspace._workspace import Workspace
from ctxfs.integrations._hooks import ContextHooks, EventHandler, report_event
from ctxfs.subagents._loop import Run, adrive, drive
from ctxfs.subagents._places import Places
from ctxfs.subagents._record import (
    TaskRecord,
    child_thread_id,
    claim_thread,
    joined_pairs,
    read_record,
    record_path,
    same_task,
    write_record,
)
from ctxfs.subagents._result import TaskProgress, TaskResult
from ctxfs.subagents._spec import SubAgent
from ctxfs.subagents._spec import general_purpose as _general_purpose
from ctxfs.subagents._task import task_message
from ctxfs.subagents._tool import task_tool
from ctxfs.tools import DEFAULT_MAX_OUTPUT_TOKENS, MIN_OUTPUT_TOKENS

__all__ = ["DEFAULT_MAX_PARALLEL", "DEFAULT_MAX_TASKS", "SubAgents"]

_log = logging.getLogger("ctxfs.subagents")
_MAX_ATTEMPTS = 100
DEFAULT_MAX_PARALLEL = 4
"""How many sub-agents of one nesting level run at once, unless ``SubAgents`` says otherwise."""
DEFAULT_MAX_TASKS = 100
"""How many sub-tasks one thread may start, unless ``SubAgents`` says otherwise."""


class SubAgents:
    """A registry of named sub-agents over one workspace, and the runner of their tasks.

    Each task runs a fresh sub-agent on its own thread,
    ``<parent thread>/task-<tool call id>`` (parallel calls never share one), with its own
    :class:`~ctxfs.ContextEngine` and policy over the shared workspace, and nothing but its
    system prompt and the task it was handed: it sees nothing of the parent's conversation,
    and the parent gets back only a :class:`~ctxfs.subagents.TaskResult` (the answer, the
    files it wrote, where its transcript is). Its offloads land in
    ``/tool_results/<its thread>/``; its whole conversation is archived in
    ``/transcripts/<its thread>/`` when it ends, next to a ``task.json`` record naming the
    parent thread and call. So the parent can ``grep`` or ``read_file`` anything the
    sub-agent saw, byte-exact, without having carried it.

    A sub-agent stops with a ``partial`` result at its ``max_turns`` or ``max_tokens``; one
    that raises gives a ``failed`` result naming it and its transcript, never an exception.
    Sub-agents get no ``task`` tool of their own unless their spec says ``subagents=True``
    and the nesting stays within ``max_depth``. At most ``max_parallel`` sub-agents of one
    nesting level run at once (the others wait their turn), and one thread starts at most
    ``max_tasks`` sub-tasks (past that, :meth:`run` raises :class:`~ctxfs.TaskLimitError`
    and the ``task`` tool answers with an error).

    Example:
        >>> from ctxfs import ContextPolicy, Workspace
        >>> from ctxfs.testing import ScriptedChatModel
        >>> agents = SubAgents(Workspace("memory://sub-doc"),
        ...     model=ScriptedChatModel(responses=["Nothing to do."]),
        ...     policy=ContextPolicy(max_input_tokens=8_000))
        >>> agents.names
        ('general-purpose',)
        >>> result = agents.run("general-purpose", "Say hi.", parent_thread_id="main",
        ...     tool_call_id="c1")
        >>> result.status, result.answer, result.thread_id
        ('completed', 'Nothing to do.', 'main/task-c1')

    Args:
        workspace: The shared workspace (the SDK's writable one).
        model: The chat model of sub-agents whose spec names none.
        policy: The context policy of sub-agents whose spec has none.
        subagents: Sub-agents to register (more with :meth:`register`).
        tools: Tools of sub-agents whose spec has none (besides the workspace tools).
        general_purpose: Whether to register ``general-purpose`` first.
        max_depth: How deep sub-agents may nest: 1 lets the parent start sub-agents and no
            sub-agent start any; 2 lets sub-agents whose spec has ``subagents=True`` start
            their own; and so on.
        max_parallel: How many sub-agents of one nesting level run at once (default
            :data:`DEFAULT_MAX_PARALLEL`); the other tasks wait, first come first served.
            Each level has places of its own: a sub-agent that waits for its own sub-agents
            keeps its place, and they never wait for it.
        max_tasks: How many sub-tasks one thread (the parent's, or a sub-agent's for its
            nested ones) may start through this registry (default :data:`DEFAULT_MAX_TASKS`),
            counted while the registry lives: a task started again with the same call id
            counts once, and one whose recorded result is returned not at all.
        clock: The time written in transcript indexes (default: now, UTC).
        on_event: Called with every event of every sub-agent, and its thread id: its
            context events (offloads, summaries, a ``ContextMeasured`` before each model
            call) and its steps (:class:`~ctxfs.subagents.TaskProgress`). Inside a graph run
            the same events go to the graph's custom stream.
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        model: BaseChatModel,
        policy: ContextPolicy,
        subagents: Sequence[SubAgent] = (),
        tools: Sequence[BaseTool] = (),
        general_purpose: bool = True,
        max_depth: int = 1,
        max_parallel: int = DEFAULT_MAX_PARALLEL,
        max_tasks: int = DEFAULT_MAX_TASKS,
        clock: Callable[[], datetime] | None = None,
        on_event: EventHandler | None = None,
    ) -> None:
        for setting, value in (
            ("max_depth", max_depth),
            ("max_parallel", max_parallel),
            ("max_tasks", max_tasks),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"{setting} must be at least 1 (got {value!r}); write a whole number, "
                    f"e.g. {setting}=4"
                )
        self._workspace = workspace
        self._model = model
        self._policy = policy
        self._tools = tuple(tools)
        self._max_depth = max_depth
        self._max_parallel = max_parallel
        self._max_tasks = max_tasks
        self._places = tuple(Places(max_parallel) for _ in range(max_depth))  # one per level
        self._clock = clock
        self._on_event = on_event
        self._specs: dict[str, SubAgent] = {}
        self._claims_lock = threading.Lock()
        self._running: set[str] = set()  # threads of the tasks running now
        self._started: dict[str, set[str]] = {}  # parent thread -> threads of its tasks
        self._claimed: dict[str, str] = {}  # thread -> parent: its claim made here, not run yet
        for spec in ([_general_purpose()] if general_purpose else []) + list(subagents):
            self.register(spec)

    # -- the registry ---------------------------------------------------------------------

    def register(self, spec: SubAgent) -> None:
        """Adds a sub-agent.

        Raises:
            ValueError: A sub-agent of that name is registered already.
        """
        if spec.name in self._specs:
            raise ValueError(
                f"a sub-agent named {spec.name!r} is registered already; choose another name"
            )
        self._specs[spec.name] = spec

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._specs)

    def get(self, name: str) -> SubAgent:
        """The sub-agent named ``name``.

        Raises:
            UnknownSubAgentError: None is registered under that name (the message lists the
                registered ones).
        """
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownSubAgentError(name, self.names) from None

    def __iter__(self) -> Iterator[SubAgent]:
        return iter(self._specs.values())

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    @property
    def workspace(self) -> Workspace:
        """The shared workspace."""
        return self._workspace

    @property
    def max_depth(self) -> int:
        """How deep sub-agents may nest."""
        return self._max_depth

    @property
    def max_parallel(self) -> int:
        """How many sub-agents of one nesting level run at once."""
        return self._max_parallel

    @property
    def max_tasks(self) -> int:
        """How many sub-tasks one thread may start through this registry."""
        return self._max_tasks

    # -- running --------------------------------------------------------------------------

    def run(
        self,
        name: str,
        prompt: str,
        *,
        parent_thread_id: str,
        tool_call_id: str,
        depth: int = 1,
    ) -> TaskResult:
        """Runs the sub-agent ``name`` on ``prompt`` and returns what it handed back.

        A task that already ran (same parent thread, call id, sub-agent and prompt, its
        record in the workspace: the process died before the parent saw the result) is not
        run again: its recorded result is returned. One that was interrupted, or whose
        transcript could not be written when it ended, is run again from the start.

        Args:
            name: A registered sub-agent.
            prompt: The task; all the sub-agent is told besides its system prompt (a task too
                long for its window is saved to ``/tool_results/<its thread>/task.txt`` and
                pointed to).
            parent_thread_id: The thread handing it the task.
            tool_call_id: The parent's call (with the parent thread, names the sub-agent's
                thread).
            depth: How deep this sub-agent is nested (1: started by the top agent).

        Raises:
            UnknownSubAgentError: ``name`` is not registered.
            TaskLimitError: ``parent_thread_id`` started ``max_tasks`` sub-tasks already
                (nothing ran or was recorded).
            ValueError: ``depth`` is beyond ``max_depth``; ``prompt`` is empty; the window is
                known neither from the policy nor from the model's profile; the system prompt
                and tool schemas leave no room in it; or ``prompt`` is too long to send whole
                and could not be saved (the model was not called).
            WorkspaceError: The sub-task's record could not be read or written (nothing ran);
                :class:`~ctxfs.TaskRecordError` if it is there but cannot be read (it is kept).
            Exception: Whatever the model's ``bind_tools`` raised (nothing ran or recorded).
        """
        spec, prompt, thread = self._claim(name, prompt, parent_thread_id, tool_call_id, depth)
        try:
            waiting = self._waiting(spec, parent_thread_id, tool_call_id, thread)
            with self._places[depth - 1].held(waiting):  # waits its turn
                prepared = self._start(spec, prompt, parent_thread_id, tool_call_id, depth, thread)
                if isinstance(prepared, TaskResult):
                    return prepared
                try:
                    drive(prepared)
                except Exception as exc:
                    return self._failed(prepared, exc)
                return self._finish(prepared)
        finally:
            self._release(thread)

    async def arun(
        self,
        name: str,
        prompt: str,
        *,
        parent_thread_id: str,
        tool_call_id: str,
        depth: int = 1,
    ) -> TaskResult:
        """The async twin of :meth:`run`: workspace work in worker threads, the model and
        tools awaited, so parallel tasks run concurrently on one event loop."""
        spec, prompt, thread = await asyncio.to_thread(
            self._claim, name, prompt, parent_thread_id, tool_call_id, depth
        )
        try:
            waiting = self._waiting(spec, parent_thread_id, tool_call_id, thread)
            async with self._places[depth - 1].aheld(waiting):  # awaits its turn
                prepared = await asyncio.to_thread(
                    self._start, spec, prompt, parent_thread_id, tool_call_id, depth, thread
                )
                if isinstance(prepared, TaskResult):
                    return prepared
                try:
                    await adrive(prepared)
                except Exception as exc:
                    return await asyncio.to_thread(self._failed, prepared, exc)
                return await asyncio.to_thread(self._finish, prepared)
        finally:
            self._release(thread)

    def task_tool(
        self,
        *,
        parent_thread_id: str | None = None,
        artifacts_key: str | None = "artifacts",
        depth: int = 1,
    ) -> BaseTool:
        """The ``task`` tool that runs these sub-agents (see :func:`ctxfs.subagents.task_tool`)."""
        return task_tool(
            self, parent_thread_id=parent_thread_id, artifacts_key=artifacts_key, depth=depth
        )

    # -- the parts both twins share -------------------------------------------------------

    def _claim(
        self, name: str, prompt: str, parent: str, call_id: str, depth: int
    ) -> tuple[SubAgent, str, str]:
        """The sub-agent, the task as recorded, and its thread (claimed until released)."""
        spec = self.get(name)
        if not 1 <= depth <= self._max_depth:
            raise ValueError(f"depth {depth} is outside 1..max_depth ({self._max_depth})")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(
                "the task description is empty; put the whole task in it, with what the "
                "sub-agent should report back"
            )
        prompt = joined_pairs(prompt)  # as its record reads back, so a re-run finds it
        return spec, prompt, self._thread_for(name, prompt, parent, call_id)

    def _waiting(
        self, spec: SubAgent, parent: str, call_id: str, thread: str
    ) -> Callable[[], None]:
        """What reports that a task waits for a place (a ``waiting`` progress event)."""
        event = TaskProgress(
            subagent=spec.name,
            thread_id=thread,
            parent_thread_id=parent,
            tool_call_id=call_id,
            kind="waiting",
            detail=f"{self._max_parallel} sub-agent(s) of its level are running "
            f"(max_parallel={self._max_parallel})",
        )
        return lambda: report_event(event, thread, self._on_event)

    def _start(
        self, spec: SubAgent, prompt: str, parent: str, call_id: str, depth: int, thread: str
    ) -> Run | TaskResult:
        try:
            return self._prepared(spec, prompt, parent, call_id, depth, thread)
        except BaseException:  # it never started: it does not count towards max_tasks
            with self._claims_lock:
                self._started.get(parent, set()).discard(thread)
            raise

    def _prepared(
        self, spec: SubAgent, prompt: str, parent: str, call_id: str, depth: int, thread: str
    ) -> Run | TaskResult:
        name = spec.name
        recorded = read_record(self._workspace, thread)
        if recorded is not None and recorded.result is not None:
            _log.info("ctxfs: sub-task %s already ran; returning its recorded result", thread)
            return recorded.result
        policy = spec.policy or self._policy
        engine = ContextEngine(self._workspace, policy, clock=self._clock)
        model = spec.model or self._model
        engine.window_from(model)  # ValueError: no window in the policy or the model's profile
        tools, nested = self._tools_for(spec, engine, thread, depth)
        bound = model.bind_tools(tools) if tools else model  # may raise: nothing recorded yet
        system = SystemMessage(content=spec.system_prompt, id=f"{thread}:system")
        fixed = engine.count_request(system=system, tools=tools)
        task = task_message(engine, thread, prompt, fixed)  # a long task is saved, not sent
        write_record(
            self._workspace,
            TaskRecord(
                thread_id=thread,
                parent_thread_id=parent,
                tool_call_id=call_id,
                subagent=name,
                prompt=prompt,
            ),
        )
        with self._claims_lock:
            self._claimed.pop(thread, None)
        return Run(
            subagent=name,
            thread_id=thread,
            parent_thread_id=parent,
            tool_call_id=call_id,
            prompt=prompt,
            hooks=ContextHooks(engine, self._on_event),
            model=bound,
            chat_model=model,
            system=system,
            tools={tool.name: tool for tool in tools},
            max_turns=spec.max_turns,
            max_tokens=spec.max_tokens,
            messages=[task],
            task_tool=nested,
        )

    def _thread_for(self, name: str, prompt: str, parent: str, call_id: str) -> str:
        """The task's thread, claimed until :meth:`_release`: the derived one, unless its
        record is another task's (a provider that reused a call id, or two parent/call pairs
        that spell the same thread id) or another task of this registry is running on it (two
        calls of one answer with the same id): then the next free ``.2``, ``.3``...

        A task that will run counts towards the parent's ``max_tasks`` (once, however often
        it is started); one whose recorded result will be returned does not."""
        with self._claims_lock:  # two tasks that find the same free thread must not share it
            for attempt in range(1, _MAX_ATTEMPTS + 1):
                thread = child_thread_id(parent, call_id, attempt)
                if thread in self._running:
                    continue
                mine = TaskRecord(
                    thread_id=thread, parent_thread_id=parent, tool_call_id=call_id,
                    subagent=name, prompt=prompt,
                )  # fmt: skip
                recorded = read_record(self._workspace, thread)
                if recorded is None or same_task(recorded, mine):
                    if recorded is None or recorded.result is None:
                        self._count(parent, thread)  # TaskLimitError: nothing claimed
                    try:  # against other processes too: a record written create-only
                        taken = claim_thread(self._workspace, mine) if recorded is None else None
                    except BaseException:
                        self._started[parent].discard(thread)
                        raise
                    if taken is False:  # by another process, for another task
                        self._started[parent].discard(thread)
                        continue
                    if taken:
                        self._claimed[thread] = parent
                    self._running.add(thread)
                    return thread
        raise ValueError(f"call id {call_id!r} of thread {parent!r} was used {_MAX_ATTEMPTS} times")

    def _count(self, parent: str, thread: str) -> None:
        """Counts a task towards its parent's ``max_tasks`` (under the claims lock)."""
        started = self._started.setdefault(parent, set())
        if thread not in started:
            if len(started) >= self._max_tasks:
                raise TaskLimitError(parent, self._max_tasks)
            started.add(thread)

    def _release(self, thread: str) -> None:
        """Ends a task's hold on its thread; one that never started (failed, cancelled while
        it waited for a place) does not count, nor is its claim left to name it."""
        with self._claims_lock:
            self._running.discard(thread)
            parent = self._claimed.pop(thread, None)
            if parent is not None:
                self._started.get(parent, set()).discard(thread)
        if parent is not None:
            with contextlib.suppress(WorkspaceError):
                self._workspace.rm(record_path(thread))

    def _tools_for(
        self, spec: SubAgent, engine: ContextEngine, thread: str, depth: int
    ) -> tuple[list[BaseTool], BaseTool | None]:
        """The sub-agent's tools, and the nested ``task`` tool among them (if it has one)."""
        tools: list[BaseTool] = []
        if spec.workspace_tools:
            from ctxfs.tools import workspace_tools

            policy = engine.policy
            budget = (
                max(MIN_OUTPUT_TOKENS, policy.tool_output_tokens)
                if policy.max_input_tokens is not None
                else DEFAULT_MAX_OUTPUT_TOKENS
            )
            tools += workspace_tools(self._workspace, max_output_tokens=budget)
        tools += spec.tools if spec.tools is not None else self._tools
        if spec.subagents and depth < self._max_depth:
            nested = self.task_tool(parent_thread_id=thread, artifacts_key=None, depth=depth + 1)
            tools = [tool for tool in tools if tool.name != nested.name]
            tools.append(nested)
            return tools, nested
        return tools, None

    def _failed(self, run: Run, exc: Exception) -> TaskResult:
        _log.warning(
            "ctxfs: sub-agent %r on thread %s raised %s: %s",
            run.subagent, run.thread_id, type(exc).__name__, exc,
        )  # fmt: skip
        run.stop("failed", f"{type(exc).__name__}: {exc}")
        return self._finish(run)

    def _finish(self, run: Run) -> TaskResult:
        """Archives the sub-agent's conversation, records the result, reports it."""
        transcripts, problem = self._archive(run)
        reason = run.reason
        if problem:
            reason = f"{reason}; {problem}" if reason else problem
        result = TaskResult(
            subagent=run.subagent,
            thread_id=run.thread_id,
            parent_thread_id=run.parent_thread_id,
            tool_call_id=run.tool_call_id,
            status=run.status,
            answer=run.answer(),
            artifacts=tuple(run.artifacts),
            refused_artifacts=tuple(
                f"{path}: {why}" for path, why in run.refused_artifacts.items()
            ),
            transcript=transcripts[-1] if transcripts else None,
            transcripts=transcripts,
            turns=run.turns,
            tokens=run.tokens,
            reason=reason,
        )
        record = TaskRecord(
            thread_id=run.thread_id, parent_thread_id=run.parent_thread_id,
            tool_call_id=run.tool_call_id, subagent=run.subagent, prompt=run.prompt,
            result=result,
        )  # fmt: skip
        # Without its transcript the conversation lives only here: the record keeps saying
        # "running", so the same call made again (the parent resumed) runs the task again
        # and archives it, rather than returning a result nothing of which can be read back.
        if not problem:
            try:
                write_record(self._workspace, record)
            except WorkspaceError:
                _log.exception(
                    "ctxfs: the record of sub-task %s could not be written", run.thread_id
                )
        run.progress("finished", detail=result.status)
        return result

    def _archive(self, run: Run) -> tuple[tuple[str, ...], str]:
        """Writes what is left of the conversation as the thread's last transcript segment.

        Returns the Markdown paths of all the thread's segments and what went wrong, if
        anything (the result still goes back to the parent; only the transcript is missing).
        """
        engine = run.hooks.engine
        archive = TranscriptArchive(self._workspace, run.thread_id, clock=self._clock)
        summary = next((m for m in run.messages if is_summary(m)), None)
        state = summary_state(summary) if summary is not None else None
        tail = [m for m in run.messages if not is_summary(m) and not is_pinned(m)]
        try:
            with engine.lock:
                committed = archive.segments()
                if tail:
                    tokens = engine.token_counter.count_messages(tail)
                    start = state.next_index if state is not None else 0
                    segment, done = archive.write_segment(
                        tail, start=start, tokens=tokens, committed=committed
                    )
                    if not done:
                        answer = AIMessage(content=run.answer(), id=f"{run.thread_id}:answer")
                        archive.commit(segment, summary=answer, committed=committed)
                    committed = archive.segments()
        except WorkspaceError as exc:
            _log.warning("ctxfs: the transcript of sub-task %s failed: %s", run.thread_id, exc)
            return (), f"its transcript could not be written ({exc})"
        return tuple(s.markdown_path for s in committed), ""
