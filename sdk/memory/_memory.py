"""The long-term memory of one namespace: learn, inject, recall, forget.

:class:`LongTermMemory` puts the pieces together for the integrations
(:class:`~ctxfs.memory.MemoryMiddleware`, the LangGraph blocks) and for plain Python: a
:class:`~ctxfs.memory._store.MemoryFile` in the workspace, a :class:`TurnQueue` with its
debounce, the extraction model, the token counter and a retriever.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ctxfs._layout import safe_name
from ctxfs._messages import message_text
from ctxfs._tokens import TokenCounter, as_token_counter
from ctxfs._workspace._workspace import Workspace
from ctxfs.memory._consolidate import (
    Consolidation,
    apply_plan,
    consolidate_document,
    plan_consolidation,
)
from ctxfs.memory._conversations import ConversationLog
from ctxfs.memory._document import Fact, MemoryDocument, normalize_fact, now_utc
from ctxfs.memory._extract import (
    EXTRACTION_PROMPT,
    AppliedUpdate,
    MemoryUpdate,
    apply_update,
    extract_update,
)
from ctxfs.memory._inject import InjectedMemory, memory_block, recalled_block, with_memory
from ctxfs.memory._queue import TurnBatch, TurnQueue
from ctxfs.memory._retrieval import KeywordRetriever, MemoryHit, Retriever, Scope
from ctxfs.memory._settings import MemorySettings
from ctxfs.memory._store import MemoryFile

__all__ = ["Learned", "LongTermMemory"]


@dataclass(frozen=True, slots=True)
class Learned:
    """What one extraction did to the memory.

    Attributes:
        thread_id: The conversation learned from.
        messages: How many messages were sent to the model.
        applied: What the update changed, or ``None`` when the model's output was invalid
            (or the model failed) and nothing was written.
    """

    thread_id: str
    messages: int
    applied: AppliedUpdate | None


class LongTermMemory:
    """Long-term memory of one namespace, kept in a workspace.

    Example:
        >>> from ctxfs import Workspace
        >>> from ctxfs.memory import LongTermMemory, MemoryUpdate
        >>> memory = LongTermMemory(Workspace("memory://ltm-doc"), ("alice",))
        >>> _ = memory.apply(MemoryUpdate.model_validate({"new_facts": [
        ...     {"content": "Alice deploys on Fridays.", "category": "behavior",
        ...      "confidence": 0.9}]}), thread_id="t1")
        >>> print(memory.prompt().text)
        <memory>
        ## Facts
        - [behavior, 0.90] Alice deploys on Fridays.
        </memory>

    Args:
        workspace: The workspace, with ``/memories/`` writable.
        namespace: Whose memory: ``("alice",)``, ``("alice", "coder")``...
        model: The chat model that extracts facts (structured output); ``None`` if this
            memory is only read or updated by hand.
        settings: Threshold, cap, budgets, debounce.
        token_counter: Counts the injected blocks (exact cl100k_base by default); give the
            context engine's, so both count alike.
        retriever: What recalls earlier sessions (:class:`KeywordRetriever` over the
            workspace by default, or a :class:`~ctxfs.memory.StoreRetriever`).
        clock: Monotonic seconds, for the debounce (a fake clock in tests).
        now: The wall-clock time written into the memory (UTC).
        prompt: The extraction model's instructions.
        task: The task this memory serves, if fixed; ``None``: each thread is its own
            task. A ``"task"`` fact is learned for it and reaches only its prompts.
        project: The project it serves: its ``"project"`` facts, and no other project's,
            are injected and recalled.
    """

    def __init__(
        self,
        workspace: Workspace,
        namespace: Sequence[str],
        *,
        model: BaseChatModel | None = None,
        settings: MemorySettings | None = None,
        token_counter: TokenCounter | Callable[[str], int] | None = None,
        retriever: Retriever | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = now_utc,
        prompt: str = EXTRACTION_PROMPT,
        task: str | None = None,
        project: str | None = None,
    ) -> None:
        self._settings = settings or MemorySettings()
        self._file = MemoryFile(workspace, tuple(namespace), clock=now)
        self._model = model
        self._counter = as_token_counter(token_counter)
        self._retriever = retriever or KeywordRetriever(workspace)
        self._queue = TurnQueue(debounce_seconds=self._settings.debounce_seconds, clock=clock)
        self._conversations = ConversationLog(workspace, self._file.namespace)
        self._now = now
        self._prompt = prompt
        self._task = task
        self._project = project

    @property
    def file(self) -> MemoryFile:
        """The memory document in the workspace."""
        return self._file

    @property
    def namespace(self) -> tuple[str, ...]:
        """Whose memory it is."""
        return self._file.namespace

    @property
    def settings(self) -> MemorySettings:
        """The settings in force."""
        return self._settings

    @property
    def queue(self) -> TurnQueue:
        """The turns waiting to be learned from."""
        return self._queue

    @property
    def token_counter(self) -> TokenCounter:
        """The counter of the injected blocks."""
        return self._counter

    @property
    def project(self) -> str | None:
        """The project this memory serves."""
        return self._project

    def task_of(self, thread_id: str | None) -> str | None:
        """The task of a session on ``thread_id``: the memory's task, else the thread."""
        return self._task if self._task is not None else thread_id

    def load(self) -> MemoryDocument:
        """The stored document (empty if nothing was learned yet)."""
        return self._file.load()

    def visible_facts(self, document: MemoryDocument, thread_id: str | None) -> list[Fact]:
        """The facts of ``document`` a session on ``thread_id`` may see (scope, expiry)."""
        task, now = self.task_of(thread_id), self._now()
        return [f for f in document.facts if f.visible(task=task, project=self._project, now=now)]

    # -- learning ----------------------------------------------------------------------

    def record(self, thread_id: str, messages: Sequence[BaseMessage]) -> int:
        """Queues a turn's user messages and final answers (see :class:`TurnQueue`).

        They are also appended to the thread's conversation log under the memory (unless
        ``settings.keep_conversations`` is off), so the next session recalls them even if
        this one never compacts (a failure to write it is logged, never raised). A memory
        without a model learns nothing, so it queues nothing.

        Returns:
            How many new messages were queued.
        """
        if self._settings.keep_conversations:
            self._conversations.record(thread_id, messages)
        if self._model is None:
            return 0
        return self._queue.add(thread_id, messages)

    def process_due(self) -> list[Learned]:
        """Learns from every thread that has been quiet for the debounce.

        Raises:
            WorkspaceError: The memory could not be read or written (a storage failure, a
                malformed file), or the extraction model could not be called
                (``ExtractionModelError``). Whatever is raised, the batches not learned from
                are queued again.
        """
        return self._learn_batches(self._queue.due())

    def flush(self) -> list[Learned]:
        """Learns from every queued turn now, whatever the debounce (raises as
        :meth:`process_due`)."""
        return self._learn_batches(self._queue.drain())

    def _learn_batches(self, batches: Sequence[TurnBatch]) -> list[Learned]:
        learned = []
        for index, batch in enumerate(batches):
            try:
                # a model that cannot be called keeps the turns queued, like a storage failure
                learned.append(self._learn(batch.messages, batch.thread_id, strict=True))
            except Exception:  # a storage failure, a model outage, or a defect: kept for later
                for waiting in batches[index:]:
                    self._queue.requeue(waiting)
                raise
        return learned

    def learn(self, messages: Sequence[BaseMessage], *, thread_id: str) -> Learned:
        """Asks the model what to learn from ``messages`` and applies it, now.

        Invalid model output is logged and dropped: nothing is written.

        Raises:
            ValueError: The memory has no model.
            MemoryFormatError: The stored file is malformed (it is left as it is).
        """
        return self._learn(messages, thread_id, strict=False)

    def _learn(self, messages: Sequence[BaseMessage], thread_id: str, *, strict: bool) -> Learned:
        if self._model is None:
            raise ValueError("this LongTermMemory has no model to learn with; pass model=...")
        document = self.load()
        # the model sees only what this session may see: another task's facts never reach it
        shown = document.model_copy(
            update={"facts": tuple(self.visible_facts(document, thread_id))}
        )
        update = extract_update(self._model, messages, shown, prompt=self._prompt, strict=strict)
        if update is None:
            return Learned(thread_id, len(messages), None)
        by = str(getattr(self._model, "model_name", None) or type(self._model).__name__)
        applied = self.apply(update, thread_id=thread_id, kind="learn", by=by)
        return Learned(thread_id, len(messages), applied)

    def apply(
        self, update: MemoryUpdate, *, thread_id: str, kind: str = "apply", by: str = ""
    ) -> AppliedUpdate:
        """Applies an update (threshold, dedup, cap, scope) by compare-and-swap, as a new
        version recording ``kind``, ``by`` and the thread.

        Returns:
            What the update did to the document as it was when written (after any retry on
            a concurrent writer's change).
        """
        when = self._now()
        outcome: list[AppliedUpdate] = []

        def change(document: MemoryDocument) -> MemoryDocument:
            applied = apply_update(
                document,
                update,
                settings=self._settings,
                now=when,
                source=thread_id,
                task=self.task_of(thread_id),
                project=self._project,
            )
            outcome[:] = [applied]
            return applied.document

        def note() -> str:
            done = outcome[0]
            return (
                f"added {len(done.added)}, merged {len(done.merged)}, removed "
                f"{len(done.removed)}, evicted {len(done.evicted)}"
            )

        written = self._file.update(change, kind=kind, by=by, thread=thread_id, note=note)
        applied = outcome[0]
        return AppliedUpdate(
            written,
            applied.added,
            applied.merged,
            applied.below_threshold,
            applied.removed,
            applied.evicted,
        )

    def forget(self, ids: Iterable[str], *, by: str = "") -> tuple[str, ...]:
        """Removes facts by id.

        Returns:
            The ids that were there and are gone.
        """
        drop = set(ids)
        gone: list[str] = []

        def change(document: MemoryDocument) -> MemoryDocument:
            gone[:] = [f.id for f in document.facts if f.id in drop]
            kept = tuple(f for f in document.facts if f.id not in drop)
            return document.model_copy(update={"facts": kept})

        if drop:
            self._file.update(
                change, kind="forget", by=by, note=lambda: "removed " + ", ".join(gone)
            )
        return tuple(gone)

    # -- versions and consolidation ------------------------------------------------------

    def history(self) -> list[MemoryDocument]:
        """Every version of the memory, oldest first (see :meth:`MemoryFile.history`)."""
        return self._file.history()

    def rollback(self, revision: int, *, by: str = "") -> MemoryDocument:
        """Writes version ``revision``'s content as a new version (e.g. after a bad
        extraction); see :meth:`MemoryFile.rollback`."""
        return self._file.rollback(revision, by=by)

    def consolidate(
        self,
        *,
        model: BaseChatModel | None = None,
        similarity: float = 0.8,
        dry_run: bool = False,
        by: str = "",
    ) -> Consolidation:
        """Merges duplicate and contradicting facts and drops expired ones, as a new version.

        With ``model`` (a chat model with structured output) its plan is applied first (it
        judges contradictions); then the deterministic pass of
        :func:`~ctxfs.memory.consolidate_document` (near-duplicates, expiry) runs.

        Returns:
            What was done; with ``dry_run`` nothing is written.
        """
        document = self.load()
        plan = None if model is None else plan_consolidation(model, document)
        when = self._now()

        def run(current: MemoryDocument) -> Consolidation:
            first = apply_plan(current, plan) if plan is not None else Consolidation(current)
            second = consolidate_document(first.document, now=when, similarity=similarity)
            return Consolidation(
                second.document,
                first.merged + second.merged,
                second.expired,
                first.dropped,
            )

        if dry_run:
            return run(document)
        outcome: list[Consolidation] = []

        def change(current: MemoryDocument) -> MemoryDocument:
            outcome[:] = [run(current)]
            return outcome[0].document

        written = self._file.update(
            change, kind="consolidate", by=by, note=lambda: outcome[0].note()
        )
        done = outcome[0]
        return Consolidation(written, done.merged, done.expired, done.dropped)

    # -- injecting ---------------------------------------------------------------------

    def prompt(
        self, document: MemoryDocument | None = None, *, thread_id: str | None = None
    ) -> InjectedMemory:
        """The ``<memory>`` block for a session on ``thread_id``, within
        ``settings.max_injection_tokens``: the facts of its task and project, not expired
        (see :meth:`task_of`)."""
        document = self.load() if document is None else document
        return memory_block(
            document,
            self._counter,
            self._settings.max_injection_tokens,
            task=self.task_of(thread_id),
            project=self._project,
            now=self._now(),
        )

    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        scope: Scope | None = None,
        thread_id: str | None = None,
    ) -> list[MemoryHit]:
        """What retrieval finds for ``query``: by default in this namespace, for a session
        on ``thread_id`` (its task's and project's facts, not expired)."""
        if scope is None:
            scope = Scope(
                namespace=self.namespace,
                task=self.task_of(thread_id),
                project=self._project,
                now=self._now(),
            )
        k = self._settings.recall_k if k is None else k
        return self._retriever.search(query, k=k, scope=scope)

    def recall_prompt(
        self,
        query: str,
        *,
        scope: Scope | None = None,
        document: MemoryDocument | None = None,
        session: str | None = None,
    ) -> InjectedMemory:
        """The ``<recalled>`` block for ``query``, within ``settings.max_recall_tokens``.

        What the ``<memory>`` block of ``document`` (the stored one by default) already holds
        is not recalled again: a fact it injects, and a passage that says only what one of
        its facts says, are dropped, and so is a hit saying what a better one said; the next
        hits take their place. ``session`` is the thread being started: what it said is in
        its context already, so its own passages are not recalled either.
        """
        if not query.strip() or self._settings.recall_k == 0:
            return InjectedMemory("", 0)
        document = self.load() if document is None else document
        injected = set(self.prompt(document, thread_id=session).facts)
        visible = {f.id for f in self.visible_facts(document, session)}
        # nor what the block holds, nor (in a passage) what a fact this session may not see
        # says: another task's constraint stays out of the prompt however it is found
        said = {
            normalize_fact(f.content)
            for f in document.facts
            if f.id in injected or f.id not in visible
        }
        own = None if session is None else safe_name(session)
        k = self._settings.recall_k
        asked = k + len(injected)
        while True:
            hits = self.recall(query, k=asked, scope=scope, thread_id=session)
            fresh: dict[str, MemoryHit] = {}  # by what they say: a passage said twice once
            for hit in hits:
                said_here = normalize_fact(hit.text)
                if said_here in said or (hit.kind == "fact" and hit.ref in injected):
                    continue
                if hit.kind == "transcript" and hit.thread == own:
                    continue
                fresh.setdefault(said_here, hit)
            if len(fresh) >= k or len(hits) < asked:
                break
            asked *= 4
        chosen = list(fresh.values())[:k]
        return recalled_block(chosen, self._counter, self._settings.max_recall_tokens)

    def system_message(
        self,
        system: SystemMessage | str | None = None,
        *,
        recalled: str = "",
        thread_id: str | None = None,
    ) -> SystemMessage | None:
        """``system`` with the ``<memory>`` block (and a ``<recalled>`` block) appended."""
        return with_memory(system, self.prompt(thread_id=thread_id).text, recalled)


def session_query(messages: Sequence[BaseMessage]) -> str | None:
    """The task of a session that has just started: the text of its user messages, if the
    assistant has not answered yet (``None`` otherwise)."""
    if any(m.type == "ai" for m in messages):
        return None
    texts = [message_text(m) for m in messages if isinstance(m, HumanMessage)]
    query = "\n".join(t for t in texts if t.strip())
    return query or None
