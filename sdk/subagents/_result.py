"""What a sub-agent hands back (:class:`TaskResult`), what it reports on its way
(:class:`TaskProgress`), and how artifacts merge into the parent's state."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ctxfs._events import ContextEvent
from ctxfs._sections import one_line, section
from ctxfs.sandbox import normalize_path

__all__ = ["TaskProgress", "TaskResult", "TaskStatus", "merge_artifacts"]

TaskStatus = Literal["completed", "partial", "failed"]
"""How a sub-task ended: it answered; it hit ``max_turns`` or ``max_tokens``; it raised."""


def merge_artifacts(left: Iterable[str] | None, right: Iterable[str] | None) -> list[str]:
    """The reducer of the ``artifacts`` state key: both lists, first seen first, no repeats.

    Use it in a hand-written graph's state:
    ``artifacts: Annotated[list[str], merge_artifacts]``.

    Example:
        >>> merge_artifacts(["/a.md", "/b.md"], ["/b.md", "/c.md"])
        ['/a.md', '/b.md', '/c.md']
    """
    return list(dict.fromkeys([*(left or ()), *(right or ())]))


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskResult:
    """The outcome of one sub-task.

    Attributes:
        subagent: The sub-agent's name.
        thread_id: Its thread (transcripts under ``/transcripts``, offloads under
            ``/tool_results``, both named from it).
        parent_thread_id: The thread that handed it the task.
        tool_call_id: The parent's ``task`` call.
        status: ``completed``, ``partial`` (a limit was hit) or ``failed`` (it raised).
        answer: Its final answer; for a partial result, the last thing it said (may be empty).
        artifacts: Workspace paths it wrote or edited, first written first.
        transcript: The Markdown transcript of its whole conversation (the last segment; any
            earlier ones are in :attr:`transcripts`), or ``None`` if it could not be written.
        transcripts: Every transcript segment of its thread, oldest first.
        turns: Model calls it made.
        tokens: Tokens it spent: every request as its model received it, plus every answer.
        reason: Why it stopped early or failed (empty when completed).
        refused_artifacts: Paths a nested sub-agent's result claimed as artifacts that are
            not workspace paths (``../../etc/passwd``, ``s3://other/x``), each with why it was
            refused; they are never among :attr:`artifacts`.
    """

    subagent: str
    thread_id: str
    parent_thread_id: str
    tool_call_id: str
    status: TaskStatus
    answer: str
    artifacts: tuple[str, ...] = ()
    transcript: str | None = None
    transcripts: tuple[str, ...] = ()
    turns: int = 0
    tokens: int = 0
    reason: str = ""
    refused_artifacts: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the sub-agent did not fail (a partial result is not a failure)."""
        return self.status != "failed"

    def to_text(self) -> str:
        """What the parent's model reads as the ``task`` tool's result.

        A header line ctxfs writes comes first (the sub-agent, its turns, its transcript, the
        files it wrote), so a parent whose copy of a long answer is offloaded still sees, in
        the preview, where everything is. The answer follows, quoted in a
        ``<subagent_answer>`` section (:mod:`ctxfs._sections`): it cannot close the section,
        forge a heading or pass for the header. A partial result has one more line first,
        saying why it stopped; a failed sub-task is one ``Error:`` line.
        """
        where = (
            f"transcript: {self.transcript} (thread {self.thread_id!r})"
            if self.transcript
            else f"thread {self.thread_id!r} (its transcript could not be written)"
        )
        wrote = ", ".join(self.artifacts) if self.artifacts else "none"
        if self.refused_artifacts:
            wrote += f" (refused as not workspace paths: {'; '.join(self.refused_artifacts)})"
        name = repr(self.subagent)
        header = one_line(
            f"[sub-agent {name}: {self.turns} turn(s); {where}; files written: {wrote}]"
        )
        if self.status == "completed":
            return f"{header}\n{self._quoted(self.answer)}"
        if self.status == "partial":
            said = self.answer or "(it had not written an answer yet)"
            head = one_line(
                f"[sub-agent {name} stopped before finishing: {self.reason}. "
                "Partial result below; its files and transcript hold the rest.]"
            )
            return f"{head}\n{header}\n\n{self._quoted(said)}"
        return one_line(
            f"Error: sub-agent {name} failed. What it did is in its {where}; files written: "
            f"{wrote}. Why: {self.reason}. Try the task again, split it, or do it yourself."
        )

    def _quoted(self, answer: str) -> str:
        return section(
            "subagent_answer", answer, {"subagent": self.subagent, "status": self.status}
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (see :meth:`from_json`)."""
        data = asdict(self)
        data["artifacts"] = list(self.artifacts)
        data["transcripts"] = list(self.transcripts)
        data["refused_artifacts"] = list(self.refused_artifacts)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskResult:
        """Reads what :meth:`to_json` wrote.

        Raises:
            ValueError: A field is missing or of the wrong type.
        """
        try:
            status = data["status"]
            if status not in ("completed", "partial", "failed"):
                raise ValueError(f"unknown status {status!r}")
            return cls(
                subagent=str(data["subagent"]),
                thread_id=str(data["thread_id"]),
                parent_thread_id=str(data["parent_thread_id"]),
                tool_call_id=str(data["tool_call_id"]),
                status=status,
                answer=str(data["answer"]),
                artifacts=tuple(_workspace_path(p) for p in data["artifacts"]),
                transcript=None if data["transcript"] is None else str(data["transcript"]),
                transcripts=tuple(str(p) for p in data["transcripts"]),
                turns=int(data["turns"]),
                tokens=int(data["tokens"]),
                reason=str(data["reason"]),
                refused_artifacts=tuple(str(p) for p in data.get("refused_artifacts", ())),
            )
        except (KeyError, TypeError, OverflowError) as exc:  # OverflowError: int(1e999)
            raise ValueError(f"not a task result: {type(exc).__name__}: {exc}") from None


def _workspace_path(path: object) -> str:
    """A recorded artifact, which must be a normalised workspace path (else ``ValueError``)."""
    if not isinstance(path, str) or normalize_path(path) != path:
        raise ValueError(f"artifact {path!r} is not a normalised workspace path")
    return path


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskProgress(ContextEvent):
    """One step of a running sub-agent.

    Reported like every context event: logged, passed to the registry's ``on_event``, and
    written to the parent graph's custom stream (``stream_mode="custom"``) as
    ``{"ctxfs": {"event": "TaskProgress", "thread_id", "text", "data"}}``, ``thread_id``
    being the sub-agent's thread.

    Attributes:
        subagent: The sub-agent's name.
        thread_id: Its thread.
        parent_thread_id: The thread that handed it the task.
        tool_call_id: The parent's ``task`` call.
        kind: ``waiting`` (``max_parallel`` sub-agents of its level are running: it waits
            its turn; ``detail`` says so); ``started``; ``model`` (it answered; ``tools``
            names the tools it asked for);
            ``tool`` (a tool returned; ``detail`` is the tool's name); ``finished``
            (``detail`` is the status).
        turn: Model calls so far.
        tokens: Tokens spent so far.
        tools: For ``model``: the tools it called.
        detail: See ``kind``.
    """

    subagent: str
    thread_id: str
    parent_thread_id: str
    tool_call_id: str
    kind: Literal["waiting", "started", "model", "tool", "finished"]
    turn: int = 0
    tokens: int = 0
    tools: tuple[str, ...] = ()
    detail: str = ""

    def describe(self) -> str:
        """One line for a person (what logs and the stream's ``text`` show)."""
        who = (
            f"sub-agent {self.subagent!r} (task {self.tool_call_id!r} of {self.parent_thread_id!r})"
        )
        if self.kind == "waiting":
            return f"{who} waits its turn: {self.detail}"
        if self.kind == "started":
            return f"{who} started"
        if self.kind == "model":
            asked = f"asked for {', '.join(self.tools)}" if self.tools else "answered"
            return f"{who}: model call {self.turn} {asked} ({self.tokens:,} tokens so far)"
        if self.kind == "tool":
            return f"{who}: {self.detail} returned"
        return f"{who} finished: {self.detail} after {self.turn} turn(s), {self.tokens:,} tokens"
