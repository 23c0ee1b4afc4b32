"""Generated workspaces for the lifecycle tests, with the model they were built from.

A :class:`Model` lists threads (root threads and sub-agent threads under them), the files
each holds, how long ago each was last active, and who points to what, in every form ctxfs
writes a reference in:

- ``pointer``: a tool result offloaded by ctxfs (a real result pointer on a ToolMessage,
  archived in the holder's transcript);
- ``summary``: the summary that replaced an archived segment names the file;
- ``text``: the model quoted the path in a message of the holder's transcript;
- ``artifact``: a sub-agent thread's task record lists the file among its artifacts;
- ``memory``: a long-term memory version names the thread it was learned from.

The expected outcome is computed from the model alone (:meth:`Model.expected_kept`), not
with the code under test.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxfs import TranscriptArchive, Workspace
from ctxfs._layout import input_path, result_path
from ctxfs._pointers._pointer import Pointer, point_result, render_result
from ctxfs.lifecycle import StampedFile, list_files
from ctxfs.subagents import TaskResult
from ctxfs.subagents._record import TaskRecord, child_thread_id, write_record

NOW = datetime(2031, 6, 1, 12, 0, tzinfo=UTC)
"""The collector's clock in the generated tests (after any real file time)."""

ROOT_IDS = ("main", "t2", "user/42", "job.7", "a-very-long-thread-id-" + "x" * 40, "ops")
KINDS = ("pointer", "summary", "text", "artifact")
OUTSIDE = "/notes/report.md"
"""A file outside the SDK's areas: never collected."""


@dataclass
class Thread:
    thread_id: str
    parent: str | None
    age_days: float
    results: int
    inputs: int
    archived: bool


@dataclass(frozen=True)
class Ref:
    holder: str
    kind: str
    target: str  # a path, or for "memory" a thread id


@dataclass
class Model:
    threads: list[Thread]
    refs: list[Ref]
    files: dict[str, str] = field(default_factory=dict)  # path -> owning thread id
    times: dict[str, datetime] = field(default_factory=dict)

    def root_of(self, thread_id: str) -> str:
        by_id = {t.thread_id: t for t in self.threads}
        while by_id[thread_id].parent is not None:
            thread_id = by_id[thread_id].parent  # type: ignore[assignment]
        return thread_id

    def family_files(self, root: str) -> set[str]:
        return {p for p, owner in self.files.items() if self.root_of(owner) == root}

    def roots(self) -> list[str]:
        return [t.thread_id for t in self.threads if t.parent is None]

    def family_age(self, root: str) -> float:
        return min(t.age_days for t in self.threads if self.root_of(t.thread_id) == root)

    def target_family(self, ref: Ref) -> str:
        owner = ref.target if ref.kind == "memory" else self.files[ref.target]
        return self.root_of(owner)

    def expected_kept(self, older_than_days: float) -> set[str]:
        """The root threads a collection with ``older_than`` keeps: the recent ones, those
        memory names, and whatever a kept one points to, transitively."""
        kept = {r for r in self.roots() if self.family_age(r) <= older_than_days}
        kept |= {self.target_family(ref) for ref in self.refs if ref.kind == "memory"}
        changed = True
        while changed:
            changed = False
            for ref in self.refs:
                if ref.kind == "memory" or self.root_of(ref.holder) not in kept:
                    continue
                target = self.target_family(ref)
                if target not in kept:
                    kept.add(target)
                    changed = True
        return kept


def stamped_lister(model: Model) -> Callable[[Workspace, str], list[StampedFile]]:
    """A file lister that reads the store's listing and the model's times (a store keeps its
    own times; S3 cannot be told to backdate a file)."""

    def files(workspace: Workspace, folder: str) -> list[StampedFile]:
        return [
            StampedFile(f.path, f.size, model.times.get(f.path))
            for f in list_files(workspace, folder)
        ]

    return files


@st.composite
def models(draw: st.DrawFn, *, max_roots: int = 4) -> Model:
    roots = draw(st.lists(st.sampled_from(ROOT_IDS), min_size=1, max_size=max_roots, unique=True))
    threads: list[Thread] = []
    for root in roots:
        threads.append(_thread(draw, root, None))
        for k in range(draw(st.integers(0, 2))):
            child = child_thread_id(root, f"call_{k}")
            threads.append(_thread(draw, child, root))
            if draw(st.booleans()):
                threads.append(_thread(draw, child_thread_id(child, "call_9"), child))
    model = Model(threads=threads, refs=[])
    plan_files(model)
    targets = sorted(model.files)
    holders = [t for t in threads if t.archived]
    for holder in holders:
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(KINDS if holder.parent is not None else KINDS[:3]))
            own = [p for p, owner in model.files.items() if owner == holder.thread_id]
            own = [p for p in own if not p.startswith("/transcripts/")]
            # most pointers are to the thread's own results; some to any file
            pool = own if own and draw(st.booleans()) else targets
            target = draw(st.sampled_from(sorted(pool)))
            if _bad_pair(model, holder.thread_id, target):
                continue
            model.refs.append(Ref(holder.thread_id, kind, target))
    for _ in range(draw(st.integers(0, 2))):
        model.refs.append(Ref("", "memory", draw(st.sampled_from([t.thread_id for t in threads]))))
    return model


def _bad_pair(model: Model, holder: str, target: str) -> bool:
    """A thread's transcripts pointing to its own family's transcripts are not generated
    unless the target is a sub-agent thread below it (they go first within a family)."""
    owner = model.files[target]
    if not target.startswith("/transcripts/") or model.root_of(owner) != model.root_of(holder):
        return False
    at: str | None = owner
    by_id = {t.thread_id: t for t in model.threads}
    while at is not None:
        if at == holder:
            return False  # its own folder, or a sub-agent thread's below it
        at = by_id[at].parent
    return True


def _thread(draw: st.DrawFn, thread_id: str, parent: str | None) -> Thread:
    results = draw(st.integers(0, 2))
    return Thread(
        thread_id=thread_id,
        parent=parent,
        age_days=draw(st.sampled_from([0.01, 0.5, 2.0, 8.0, 15.0, 40.0])),
        results=results,
        inputs=draw(st.integers(0, 1)),
        # every thread holds a file; a sub-agent thread always has its record and transcript
        archived=draw(st.booleans()) or parent is not None or results == 0,
    )


def plan_files(model: Model) -> None:
    """Lists the files the model's threads hold (before :func:`build` writes them)."""
    for thread in model.threads:
        for i in range(thread.results):
            model.files[result_path(thread.thread_id, f"c{i}", "x")] = thread.thread_id
        for i in range(thread.inputs):
            model.files[input_path(thread.thread_id, f"w{i}", "content", "x")] = thread.thread_id
        if thread.archived:
            folder = TranscriptArchive(Workspace("memory://names"), thread.thread_id).directory
            for name in ("segment-0001.jsonl", "segment-0001.md"):
                model.files[f"{folder}/{name}"] = thread.thread_id


def build(workspace: Workspace, model: Model) -> None:
    """Writes the model's workspace: results, inputs, transcripts with the references,
    task records, memory, a file outside the SDK's areas; and sets the model's times.

    Off memory, the workspace is built on memory and its files are copied, one whole-file
    write each: the same files (the archive's clock times aside, which differ between any
    two builds), without the checks and read-backs of writing them through ctxfs, which
    cost about 270 requests per workspace on S3. What the tests run on each store is the
    collection.
    """
    if workspace.store.url.startswith("memory://"):
        _build(workspace, model)
        return
    scratch = Workspace(f"memory://lifecycle-build-{next(_scratch)}")
    try:
        _build(scratch, model)
        for info in scratch.store.walk("/"):
            workspace.store.write(info.path, scratch.store.read_bytes(info.path))
    finally:
        scratch.store.remove("/", recursive=True)


_scratch = itertools.count()


def _build(workspace: Workspace, model: Model) -> None:
    for path, owner in sorted(model.files.items()):
        if path.startswith(("/tool_results/", "/tool_inputs/")):
            workspace.write_text(path, f"content of {path} ({owner})\n" * 3)
    by_id = {t.thread_id: t for t in model.threads}
    for thread in model.threads:
        if thread.archived:
            _archive(workspace, model, thread)
        if thread.parent is not None:
            artifacts = tuple(
                r.target
                for r in model.refs
                if r.holder == thread.thread_id and r.kind == "artifact"
            )
            result = TaskResult(
                subagent="researcher",
                thread_id=thread.thread_id,
                parent_thread_id=thread.parent,
                tool_call_id=thread.thread_id.rsplit("task-", 1)[1],
                status="completed",
                answer="done",
                artifacts=(OUTSIDE, *artifacts),
            )
            record = TaskRecord(
                thread_id=thread.thread_id,
                parent_thread_id=thread.parent,
                tool_call_id=result.tool_call_id,
                subagent="researcher",
                prompt="look into it",
                result=result,
            )
            write_record(workspace, record)
    versions = [
        {"version": n + 1, "fact": "prefers tabs", "changed_by": "extraction", "thread": r.target}
        for n, r in enumerate(r for r in model.refs if r.kind == "memory")
    ]
    workspace.write_text("/memories/alice.json", json.dumps({"versions": versions}))
    workspace.write_text(OUTSIDE, "a report a sub-agent wrote\n")
    for path in _every_file(workspace):
        owner = _owner(model, path)
        if owner is not None:
            model.times[path] = NOW - timedelta(days=by_id[owner].age_days)
            model.files.setdefault(path, owner)


def _every_file(workspace: Workspace) -> list[str]:
    return [
        f.path
        for area in ("/tool_results", "/tool_inputs", "/transcripts")
        for f in list_files(workspace, area)
    ]


def _owner(model: Model, path: str) -> str | None:
    if path in model.files:
        return model.files[path]
    folder = path.rsplit("/", 1)[0]
    for known, owner in model.files.items():
        if known.rsplit("/", 1)[0] == folder:
            return owner
    return None


def _archive(workspace: Workspace, model: Model, thread: Thread) -> None:
    mine = [r for r in model.refs if r.holder == thread.thread_id]
    messages: list[BaseMessage] = [HumanMessage("begin", id="h0")]
    summary_lines = ["Summary of the work so far."]
    for n, ref in enumerate(mine):
        call = f"r{n}"
        if ref.kind == "pointer":
            calls = [{"name": "bash", "args": {"command": "run"}, "id": call}]
            messages.append(AIMessage("", tool_calls=calls, id=f"a{n}"))
            pointer = Pointer(
                kind="result", path=ref.target, lines=3, chars=90, tokens=20, tool_call_id=call
            )
            text = render_result(pointer, "x\ny\nz", preview_lines=1, preview_line_chars=40)
            plain = ToolMessage("x\ny\nz", tool_call_id=call, name="bash", id=f"t{n}")
            messages.append(point_result(plain, pointer, text))
        elif ref.kind == "text":
            messages.append(AIMessage(f"I will look at {ref.target} next.", id=f"a{n}"))
        elif ref.kind == "summary":
            summary_lines.append(f"The full output is saved in {ref.target}.")
    archive = TranscriptArchive(workspace, thread.thread_id)
    segment, _ = archive.write_segment(messages, start=0, tokens=10)
    archive.commit(segment, summary=HumanMessage("\n".join(summary_lines), id="summary"))


def snapshot(workspace: Workspace) -> dict[str, bytes]:
    """Every file of the workspace and its bytes."""
    return {f.path: workspace.read_bytes(f.path) for f in workspace.store.walk("/")}


def sources(model: Model, ref_kind: str, holder: str) -> list[str]:
    """The files of the holder that carry a reference of this kind."""
    folder = next(
        p.rsplit("/", 1)[0]
        for p, owner in model.files.items()
        if owner == holder and p.startswith("/transcripts/")
    )
    return {
        "pointer": [f"{folder}/segment-0001.jsonl"],
        "text": [f"{folder}/segment-0001.jsonl"],
        "summary": [f"{folder}/segment-0001.json", f"{folder}/index.json"],
        "artifact": [f"{folder}/task.json"],
    }[ref_kind]


def check_retained(
    model: Model, before: dict[str, bytes], after: dict[str, bytes], kept: set[str]
) -> None:
    """What the kept families hold, what they and memory point to, and what lies outside
    the threads' areas, is all there, byte for byte."""
    for root in kept:
        for path in model.family_files(root):
            assert after.get(path) == before[path], f"{path} of kept thread {root!r} lost"
    for ref in model.refs:
        if ref.kind == "memory":
            for path in model.family_files(model.root_of(ref.target)):
                assert after.get(path) == before[path], f"{path} named by memory lost"
        elif model.root_of(ref.holder) in kept:
            assert after.get(ref.target) == before[ref.target], f"{ref} lost its target"
    for path in before:
        if path == OUTSIDE or path.startswith("/memories/"):
            assert after.get(path) == before[path]


def check_nothing_dangles(model: Model, after: dict[str, bytes]) -> None:
    """Whatever is left never points to what is gone."""
    for ref in model.refs:
        if ref.kind == "memory":
            continue
        if any(path in after for path in sources(model, ref.kind, ref.holder)):
            assert ref.target in after, f"{ref.holder!r} still points to {ref.target}, gone"
