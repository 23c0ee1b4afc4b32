"""S3 PUTs whose first answer is lost: botocore sends them again, and a conditional one is
then refused on its own result.

The server here does each object's first PUT and answers it with a 500, as a connection
dropped after the write landed would look to the client: botocore retries, and the retry of
a create-only PUT (``If-None-Match: *``) finds the object there, that of an ``If-Match`` PUT
finds a new ETag. Every layer's write-once files (a workflow's first state, a sub-agent's
claim, a transcript segment and its index, a memory's first version, a collection's
journal) were refused as "already exists" when written outside :meth:`Workspace.update`.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from ctxfs import (
    ConflictError,
    ContextPolicy,
    PathExistsError,
    TranscriptArchive,
    Workspace,
)
from ctxfs.lifecycle import collect_garbage
from ctxfs.memory import LongTermMemory, MemoryUpdate
from ctxfs.subagents import SubAgents
from ctxfs.testing import ScriptedChatModel
from tests.conftest import BUCKET, s3_client, s3_options, s3_server
from tests.workflows._scenario import TASK, WORKFLOW_ID, workflow

_fresh = itertools.count()


class FirstReplyLost:
    """A WSGI wrapper: each object's first PUT is done, and answered with a 500."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.seen: set[str] = set()
        self.lost: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if environ["REQUEST_METHOD"] == "PUT" and path.count("/") > 1:
            with self._lock:
                first = path not in self.seen
                self.seen.add(path)
            if first:
                answer = self.app(environ, lambda *args, **kwargs: None)
                try:
                    b"".join(answer)
                finally:
                    getattr(answer, "close", lambda: None)()
                self.lost.append(path)
                start_response("500 Internal Server Error", [("Content-Type", "application/xml")])
                return [b"<Error><Code>InternalError</Code><Message>lost</Message></Error>"]
        return self.app(environ, start_response)


@pytest.fixture(scope="module")
def lossy() -> Iterator[tuple[str, FirstReplyLost]]:
    made: list[FirstReplyLost] = []

    def wrap(app: Any) -> FirstReplyLost:
        made.append(FirstReplyLost(app))
        return made[0]

    with s3_server(wrap) as endpoint:
        s3_client(endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint, made[0]


def _workspace(lossy: tuple[str, FirstReplyLost], aio_session: Any) -> Workspace:
    endpoint, _ = lossy
    options = s3_options(endpoint, aio_session)
    return Workspace(f"s3://{BUCKET}/ws{next(_fresh)}", storage_options=options)


def test_a_conditional_write_retried_after_its_reply_was_lost_is_done(
    lossy: tuple[str, FirstReplyLost], aio_session: Any
) -> None:
    workspace = _workspace(lossy, aio_session)
    before = len(lossy[1].lost)
    assert workspace.write_text("/once.txt", "first", create_only=True).size == 5
    _, version = workspace.read_versioned("/once.txt")
    workspace.write_text("/cas.txt", "a")  # its first PUT
    _, cas = workspace.read_versioned("/cas.txt")
    assert workspace.write_text("/cas.txt", "b", if_version=cas).size == 1
    assert len(lossy[1].lost) == before + 2  # each first reply was lost, and retried
    assert workspace.read_text("/once.txt") == "first" and workspace.read_text("/cas.txt") == "b"
    # refused on other content, still refused
    with pytest.raises(PathExistsError):
        workspace.write_text("/once.txt", "second", create_only=True)
    with pytest.raises(ConflictError):
        workspace.write_text("/once.txt", "second", if_version=cas)
    assert workspace.read_versioned("/once.txt") == (b"first", version)


def test_every_layer_writes_its_write_once_files_on_s3_whose_put_replies_are_lost(
    lossy: tuple[str, FirstReplyLost], aio_session: Any
) -> None:
    workspace = _workspace(lossy, aio_session)
    before = len(lossy[1].lost)
    # a workflow: its first state file, each stage's write-once output
    assert workflow(workspace).run(TASK, workflow_id=WORKFLOW_ID).status == "completed"
    # a sub-agent: the claim of its thread, its transcript, its record
    agents = SubAgents(
        workspace,
        model=ScriptedChatModel(responses=["done"]),
        policy=ContextPolicy(max_input_tokens=8_000),
    )
    done = agents.run("general-purpose", "work", parent_thread_id="p", tool_call_id="c1")
    assert done.status == "completed" and done.transcript is not None
    # a transcript segment, its record and the index's first head
    archive = TranscriptArchive(workspace, "t0")
    said = [HumanMessage("hello", id="h"), AIMessage("hi", id="a")]
    segment, _ = archive.write_segment(said, start=0, tokens=4)
    archive.commit(segment, summary=HumanMessage("Summary: greeting.", id="s"))
    assert [s.number for s in archive.segments()] == [segment.number]
    # long-term memory: its document and its first version
    memory = LongTermMemory(workspace, ("alice",))
    new = {"content": "Alice drinks tea.", "category": "knowledge", "confidence": 0.9}
    memory.apply(MemoryUpdate.model_validate({"new_facts": [new]}), thread_id="t0")
    assert [f.content for f in memory.load().facts] == ["Alice drinks tea."]
    # a collection: its journals, written create-only
    later = datetime.now(UTC) + timedelta(days=30)
    report = collect_garbage(workspace, older_than="7d", apply=True, clock=lambda: later)
    assert report.removed and report.skipped == () and report.failed == (), report
    assert len(lossy[1].lost) > before + 10
