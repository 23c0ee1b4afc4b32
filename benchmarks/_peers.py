"""The four systems of ``bench_side_by_side.py``, each behind the same small replay interface.

Every system keeps its own state and is driven the same way by the replay loop:

- ``add(message)``: a message arrives. Tool results go through the system's tool-result hook
  first, if it has one (ctxfs ``offload_tool_result``, Deep Agents
  ``FilesystemMiddleware.wrap_tool_call``).
- ``before_model()``: a model call is about to happen. The system's before-model hook runs on
  the current state and returns the messages the model would be sent (system prompt
  included); that list becomes the state. This is the call the replay loop times.
- ``plan``: the run's latest todo list (its live state), set before each ``before_model()``;
  ctxfs puts it back after a summary, the peers have no such step and ignore it.
- ``lost(history)``: after the run, which parts of the original history are no longer in the
  context byte-exact, and which of those cannot be read back byte-exact from the system's
  own storage.

The peers are driven through their real middleware hooks, outside a graph: Deep Agents'
``FilesystemMiddleware.wrap_tool_call`` and ``wrap_model_call`` (outer) around its
``SummarizationMiddleware.wrap_model_call`` (inner, the order ``create_deep_agent`` uses),
and LangChain's ``SummarizationMiddleware.before_model``. Summaries come from the same
deterministic stand-in model for every system (:func:`summary_model`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import Field, PrivateAttr

from ctxfs import (
    ContextEngine,
    ContextPolicy,
    Summarization,
    Summarized,
    TiktokenCounter,
    ToolInputOffload,
    Workspace,
    restore_messages,
)

SYSTEMS = ("none", "ctxfs", "deepagents", "langchain")

TRIGGER_FRACTION = 0.85
"""Summarize when the context reaches this share of the budget (ctxfs's default)."""
KEEP_FRACTION = Summarization().keep.fraction or 0.0
"""Keep this share of the budget as recent messages (ctxfs's default)."""
TRIM_TOKENS = 8_000
"""Most tokens of old messages shown to the summary model (ctxfs's default)."""
RESULT_OFFLOAD_TOKENS = 20_000
"""Tool results over this many tokens go to a file (ctxfs's and Deep Agents' default)."""
INPUT_KEEP_MESSAGES = ToolInputOffload().keep_messages
"""Tool inputs in the most recent messages are never touched (ctxfs's default)."""
INPUT_MIN_CHARS = ToolInputOffload().min_chars
"""Tool inputs at least this long are moved out (ctxfs's default) or clipped (Deep Agents)."""

SETTINGS = {"mode": "mapped"}
"""Which settings the peers run with: ``mapped`` (ctxfs's defaults mapped onto theirs, the
constants above) or ``own`` (each system at its own defaults, what a user gets: Deep Agents
as ``create_deep_agent`` builds it, ``create_summarization_middleware`` and a default
``FilesystemMiddleware``), set by the benchmark's ``--settings``."""

CTXFS_POLICY: dict[str, Any] = {}
"""Settings given to ctxfs's ``ContextPolicy`` beside the budget and the stand-in summary model
(``--ctxfs-policy``); empty: ctxfs at its defaults. A ``summarization`` mapping is merged with
the stand-in model."""

SUMMARY = {"mode": "fixed"}
"""How ctxfs summarizes: ``fixed`` (the stand-in model every system gets, so what stays in
view is what each keeps by construction) or ``extractive`` (ctxfs's own extractive summary,
no model; the peers have none and keep the stand-in), set by the benchmark's ``--summary``."""

STORAGE = {"mode": "memory"}
"""Where ctxfs and Deep Agents store what they move out: ``memory`` (ctxfs ``memory://``,
Deep Agents ``StoreBackend`` on an ``InMemoryStore``, the closest to its default in-state
backend that runs outside a graph) or ``disk`` (ctxfs on a local folder, Deep Agents
``FilesystemBackend``), set by the benchmark's ``--storage``."""

SUMMARY_TEXT = (
    "## Session intent\n"
    + "The user asked the agent to finish the task described at the start. " * 6
    + "\n\n## Summary\n"
    + "The agent read files, ran commands, fixed errors and checked the results. " * 14
    + "\n\n## Next steps\n"
    + "Continue with the step that was in progress when the history was cut. " * 4
)
"""The stand-in summary every system gets: fixed, about 2,000 characters (≈ 300 tokens)."""


class SummaryModel(FakeListChatModel):
    """The stand-in summary model, metering what it is sent and what it answers.

    ``meter`` holds ``input`` and ``output`` tokens (exact counts), summed over its calls.
    """

    meter: dict[str, int] = Field(default_factory=lambda: {"input": 0, "output": 0})
    _counter: TiktokenCounter = PrivateAttr(default_factory=TiktokenCounter)

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self._count(args[0] if args else kwargs.get("messages", []))
        answer = super()._call(*args, **kwargs)
        self.meter["output"] += self._counter.count_text(answer)
        return answer

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self._count(messages)
        self.meter["output"] += self._counter.count_text(self.responses[self.i])
        return super()._stream(messages, *args, **kwargs)

    def _count(self, messages: Sequence[BaseMessage]) -> None:
        self.meter["input"] += self._counter.count_messages(list(messages))


def summary_model(budget: int) -> SummaryModel:
    """A deterministic chat model that always answers :data:`SUMMARY_TEXT`.

    Its profile says ``max_input_tokens=budget``: that is how both peers resolve fractional
    triggers and keep windows.
    """
    return SummaryModel(responses=[SUMMARY_TEXT], profile={"max_input_tokens": budget})


def exact_peer_counter(counter: TiktokenCounter) -> Callable[..., int]:
    """A peer-style ``token_counter(messages, tools=...)`` backed by the exact tokenizer."""

    def count(messages: Sequence[BaseMessage], **_: Any) -> int:
        return counter.count_messages(messages)

    return count


# -- byte-exact pieces ---------------------------------------------------------------------


def pieces(message: BaseMessage) -> dict[str, str]:
    """What must come back byte-exact: the content, and the arguments of each tool call."""
    content = message.content
    out = {"content": content if isinstance(content, str) else json.dumps(content)}
    if isinstance(message, AIMessage):
        for n, call in enumerate(message.tool_calls):
            out[f"args:{call['id'] or n}"] = json.dumps(call["args"], ensure_ascii=False)
    return out


@dataclass
class Loss:
    """Bytes (UTF-8) of history pieces no longer in the context, and of those not recoverable."""

    removed: int = 0
    lost: int = 0


def _loss(
    history: Sequence[BaseMessage],
    context: Iterable[BaseMessage],
    recoverable: Callable[[BaseMessage, str, str], bool],
) -> Loss:
    in_context = {m.id: pieces(m) for m in context if m.id is not None}
    loss = Loss()
    for original in history:
        now = in_context.get(original.id, {})
        for key, text in pieces(original).items():
            if now.get(key) == text:
                continue  # still in the context as it was
            size = len(text.encode("utf-8"))
            loss.removed += size
            loss.lost += 0 if recoverable(original, key, text) else size
    return loss


# -- the systems ---------------------------------------------------------------------------


class NoManagement:
    """The baseline: every message stays; the before-model hook is a copy of the list."""

    name = "none"

    def __init__(self, budget: int, thread: str, counter: TiktokenCounter | None) -> None:
        self.state: list[BaseMessage] = []
        self.summaries = 0
        self.plan: list[dict[str, Any]] | None = None  # the live todo list (ctxfs reads it)
        self.model: SummaryModel | None = None

    def add(self, message: BaseMessage) -> None:
        self.state = [*self.state, message]

    def before_model(self) -> list[BaseMessage]:
        self.state = list(self.state)
        return self.state

    def lost(self, history: Sequence[BaseMessage]) -> Loss:
        return _loss(history, self.state, lambda *_: False)

    def close(self) -> None:
        pass


class Ctxfs:
    """ctxfs: result offload on arrival, ``ContextEngine.compact`` before each model call.

    The workspace is a fresh ``memory://`` one, or a temporary folder with ``--storage disk``.

    The same steps as :func:`ctxfs.replay.replay` (whose :func:`~ctxfs.replay.restore_messages`
    the recovery check reads back with), with the stand-in summary model instead of the
    extractive summary (unless ``--summary extractive``); driven here one hook at a time, in
    lockstep with the other systems.
    """

    name = "ctxfs"

    def __init__(self, budget: int, thread: str, counter: TiktokenCounter | None) -> None:
        self.model: SummaryModel | None = None
        if SUMMARY["mode"] == "fixed":
            self.model = summary_model(budget)
        extra = dict(CTXFS_POLICY)
        summary = {**extra.pop("summarization", {}), "model": self.model}
        policy = ContextPolicy(
            max_input_tokens=budget, summarization=Summarization(**summary), **extra
        )
        self.thread = thread
        self.root: Path | None = None
        if STORAGE["mode"] == "disk":
            self.root = Path(tempfile.mkdtemp(prefix="bench-ctxfs-"))
            self.ws = Workspace(str(self.root))
        else:
            self.ws = Workspace(f"memory://side-by-side-{uuid.uuid4().hex}")  # private store
        self.engine = ContextEngine(self.ws, policy, TiktokenCounter())
        self.state: list[BaseMessage] = []
        self.summaries = 0
        self.plan: list[dict[str, Any]] | None = None  # the live todo list (ctxfs reads it)

    def add(self, message: BaseMessage) -> None:
        if isinstance(message, ToolMessage):
            message = self.engine.offload_tool_result(message, thread_id=self.thread)
        self.state = [*self.state, message]

    def before_model(self) -> list[BaseMessage]:
        result = self.engine.compact(self.state, thread_id=self.thread, plan=self.plan)
        self.summaries += sum(isinstance(e, Summarized) for e in result.events)
        self.state = result.messages
        return self.state

    def lost(self, history: Sequence[BaseMessage]) -> Loss:
        restored = restore_messages(self.state, self.ws, thread_id=self.thread)
        back = {key: pieces(m) for key, m in restored.items()}
        return _loss(history, self.state, lambda m, key, text: back.get(m.id, {}).get(key) == text)

    def close(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)


class DeepAgents:
    """Deep Agents: ``FilesystemMiddleware`` + its ``SummarizationMiddleware``.

    Both write to one backend: a ``StoreBackend`` on a fresh ``InMemoryStore``, or with
    ``--storage disk`` a ``FilesystemBackend`` in a fresh temporary folder. The graph state is
    modelled as Deep Agents keeps it: ``messages`` (never rewritten by summarization; a
    summary is an ``_summarization_event`` that the middleware applies to every request)
    plus the private keys the middleware returns in its ``Command`` updates. What the model
    is sent is what the innermost handler receives.
    """

    name = "deepagents"

    def __init__(self, budget: int, thread: str, counter: TiktokenCounter | None) -> None:
        from deepagents.backends import FilesystemBackend, StoreBackend
        from deepagents.middleware.filesystem import FilesystemMiddleware
        from deepagents.middleware.summarization import (
            SummarizationMiddleware,
            create_summarization_middleware,
        )
        from langgraph.store.memory import InMemoryStore

        self.root: Path | None = None
        self.store = InMemoryStore()
        backend: Any
        if STORAGE["mode"] == "disk":
            self.root = Path(tempfile.mkdtemp(prefix="bench-deepagents-"))
            backend = FilesystemBackend(root_dir=self.root, virtual_mode=True)
        else:
            backend = StoreBackend(namespace=lambda _rt: ("bench",), store=self.store)
        self.backend = backend
        self.model = summary_model(budget)
        kwargs: dict[str, Any] = {}
        if counter is not None:
            kwargs["token_counter"] = exact_peer_counter(counter)
        if SETTINGS["mode"] == "own":  # as create_deep_agent builds them
            self.fs = FilesystemMiddleware(backend=backend)
            self.summarizer = create_summarization_middleware(self.model, backend, **kwargs)
        else:
            self.fs = FilesystemMiddleware(
                backend=backend, tool_token_limit_before_evict=RESULT_OFFLOAD_TOKENS
            )
            self.summarizer = SummarizationMiddleware(
                model=self.model,
                backend=backend,
                trigger=("fraction", TRIGGER_FRACTION),
                keep=("fraction", KEEP_FRACTION),
                trim_tokens_to_summarize=TRIM_TOKENS,
                truncate_args_settings={
                    "trigger": ("fraction", TRIGGER_FRACTION),
                    "keep": ("messages", INPUT_KEEP_MESSAGES),
                    "max_length": INPUT_MIN_CHARS,
                },
                **kwargs,
            )
        self.system: SystemMessage | None = None
        self.state: dict[str, Any] = {"messages": []}
        self.view: list[BaseMessage] = []  # what the model last saw, plus what came after
        self.summaries = 0
        self.plan: list[dict[str, Any]] | None = None  # the live todo list (ctxfs reads it)
        self.overflow_errors = 0

    def add(self, message: BaseMessage) -> None:
        from langchain.agents.middleware.types import ToolCallRequest

        if isinstance(message, SystemMessage) and self.system is None and not self.view:
            self.system = message  # create_agent passes the system prompt beside the messages
            return
        if isinstance(message, ToolMessage):
            last_ai = next(
                (m for m in reversed(self.state["messages"]) if isinstance(m, AIMessage)), None
            )
            call = {"name": message.name or "", "args": {}, "id": message.tool_call_id}
            if last_ai is not None:
                call = next(
                    (c for c in last_ai.tool_calls if c["id"] == message.tool_call_id), call
                )
            request = ToolCallRequest(
                tool_call=call,  # type: ignore[arg-type]
                tool=None,
                # no messages: its refusal of parallel edits to one file is a tool-execution
                # rule, and the trace already says what the tools returned
                state={"messages": []},
                runtime=None,  # type: ignore[arg-type]
            )
            result = self.fs.wrap_tool_call(request, lambda _r: message)
            assert isinstance(result, ToolMessage)
            message = result
        self.state["messages"] = [*self.state["messages"], message]
        self.view = [*self.view, message]

    def before_model(self) -> list[BaseMessage]:
        from langchain.agents.middleware.types import (
            ExtendedModelResponse,
            ModelRequest,
            ModelResponse,
        )
        from langchain_core.exceptions import ContextOverflowError

        sent: list[ModelRequest] = []

        def handler(request: ModelRequest) -> ModelResponse:
            sent.append(request)
            return ModelResponse(result=[AIMessage("")])

        request = ModelRequest(
            model=self.model,
            messages=self.state["messages"],
            system_message=self.system,
            tools=[],
            state=self.state,
            runtime=None,
        )
        try:
            response: Any = self.fs.wrap_model_call(
                request, lambda r: self.summarizer.wrap_model_call(r, handler)
            )
        except ContextOverflowError:
            # Deep Agents refuses the call (the agent run would stop here); the replay goes
            # on with what the middleware had prepared, so the other turns still count.
            self.overflow_errors += 1
            response = None
        updates: dict[str, Any] = {}
        while isinstance(response, ExtendedModelResponse):
            if response.command is not None and isinstance(response.command.update, dict):
                for key, value in response.command.update.items():
                    if key == "messages":
                        updates.setdefault("messages", []).extend(value)
                    else:
                        updates.setdefault(key, value)
            response = response.model_response
        if updates.get("_summarization_event") is not None:
            self.summaries += 1
        for key, value in updates.items():
            if key != "messages":
                self.state[key] = value
        if updates.get("messages"):  # replacements by id, as the add_messages reducer does
            replaced = {m.id: m for m in updates["messages"] if not isinstance(m, RemoveMessage)}
            self.state["messages"] = [replaced.get(m.id, m) for m in self.state["messages"]]
        if sent:
            self.view = list(sent[-1].messages)
        system = [self.system] if self.system is not None else []
        return [*system, *self.view]

    def _storage(self) -> str:
        """Every file the backend holds, as stored (bytes decoded, no newline translation)."""
        if self.root is not None:
            files = sorted(p for p in self.root.rglob("*") if p.is_file())
            return "\n".join(p.read_bytes().decode("utf-8") for p in files)
        keys = [item.key for item in self.store.search(("bench",), limit=1_000_000)]
        got = self.backend.download_files(keys)
        return "\n".join(r.content.decode("utf-8") for r in got if r.content is not None)

    def lost(self, history: Sequence[BaseMessage]) -> Loss:
        storage = self._storage()
        system = [self.system] if self.system is not None else []

        def found(message: BaseMessage, key: str, text: str) -> bool:
            # verbatim (a large tool result file) or as the history file writes it
            # (get_buffer_string(format="xml"): content and tool-call JSON XML-escaped)
            return text in storage or escape(text) in storage

        return _loss(history, [*system, *self.view], found)

    def close(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)


class LangChain:
    """LangChain's ``SummarizationMiddleware``: ``before_model`` rewrites the messages.

    The system prompt stays beside the messages, as ``create_agent`` passes it; the
    middleware's update (``RemoveMessage(REMOVE_ALL_MESSAGES)``, summary, kept messages)
    replaces the state. It has no storage: whatever it removes is gone.
    """

    name = "langchain"

    def __init__(self, budget: int, thread: str, counter: TiktokenCounter | None) -> None:
        from langchain.agents.middleware import SummarizationMiddleware

        kwargs: dict[str, Any] = {}
        if counter is not None:
            kwargs["token_counter"] = exact_peer_counter(counter)
        self.model = summary_model(budget)
        self.middleware = SummarizationMiddleware(
            model=self.model,
            trigger=("fraction", TRIGGER_FRACTION),
            keep=("fraction", KEEP_FRACTION),
            trim_tokens_to_summarize=TRIM_TOKENS,
            **kwargs,
        )
        self.system: SystemMessage | None = None
        self.state: list[BaseMessage] = []
        self.summaries = 0
        self.plan: list[dict[str, Any]] | None = None  # the live todo list (ctxfs reads it)

    def add(self, message: BaseMessage) -> None:
        if isinstance(message, SystemMessage) and self.system is None and not self.state:
            self.system = message
            return
        self.state = [*self.state, message]

    def before_model(self) -> list[BaseMessage]:
        update = self.middleware.before_model({"messages": self.state}, None)  # type: ignore[arg-type]
        if update is not None:
            new = update["messages"]
            assert isinstance(new[0], RemoveMessage)
            self.state = list(new[1:])
            self.summaries += 1
        system = [self.system] if self.system is not None else []
        return [*system, *self.state]

    def lost(self, history: Sequence[BaseMessage]) -> Loss:
        system = [self.system] if self.system is not None else []
        return _loss(history, [*system, *self.state], lambda *_: False)

    def close(self) -> None:
        pass


FACTORIES: dict[str, type[NoManagement | Ctxfs | DeepAgents | LangChain]] = {
    "none": NoManagement,
    "ctxfs": Ctxfs,
    "deepagents": DeepAgents,
    "langchain": LangChain,
}
