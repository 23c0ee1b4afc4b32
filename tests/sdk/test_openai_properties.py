"""Invariants of a history kept as OpenAI-style dicts, over generated conversations: what is
sent stays plain JSON a provider accepts, the dicts compaction leaves alone are the ones
given, a summary is never summarized as content, and nothing said is lost."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs import ContextEngine, ContextPolicy, TranscriptArchive, Workspace, resolve_pointers
from ctxfs._summary._message import SUMMARY_TAG

Message = dict[str, Any]
_fresh = count()

POLICY = ContextPolicy(
    max_input_tokens=6_000,
    tool_results={"threshold": {"tokens": 300}},
    clearing={"keep": {"results": 1}, "min_tokens": 50},
    summarization={"trigger": {"messages": 14}, "keep": {"messages": 4}},
)
OPENAI_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio"},
    "tool": {"role", "content", "tool_call_id"},
}

# A turn: the user's question, then rounds of (parallel) calls with results of given sizes.
turns = st.lists(
    st.tuples(
        st.booleans(),  # content as a list of parts
        st.lists(st.lists(st.integers(0, 600), min_size=1, max_size=3), max_size=2),
        st.booleans(),  # an extra key a client may write ("name" on a result)
        st.booleans(),  # call ids numbered per response (call_0 in every turn)
    ),
    min_size=1,
    max_size=12,
)


def _turn(n: int, parts: bool, rounds: list[list[int]], named: bool, reused: bool) -> list[Message]:
    question = f"question {n}: what changed?"
    content: Any = [{"type": "text", "text": question}] if parts else question
    out: list[Message] = [{"role": "user", "content": content}]
    for r, sizes in enumerate(rounds):
        ids = [f"call_{k}" if reused else f"call_{n}_{r}_{k}" for k in range(len(sizes))]
        calls = [
            {"id": i, "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
            for i in ids
        ]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        for i, size in zip(ids, sizes, strict=True):
            row = f"{n}-{r}-{i} row\n"
            result: Message = {"role": "tool", "tool_call_id": i, "content": row * size}
            if named:
                result["name"] = "fetch"
            out.append(result)
    out.append({"role": "assistant", "content": f"answer {n}."})
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns)
def test_dict_histories_stay_plain_keep_their_bytes_and_lose_nothing(
    plan: list[tuple[bool, list[list[int]], bool, bool]],
) -> None:
    workspace = Workspace(f"memory://openai-prop-{next(_fresh)}")
    engine = ContextEngine(workspace, POLICY)
    history: list[Message] = [{"role": "system", "content": "Be brief."}]
    results: list[str] = []
    for n, (parts, rounds, named, reused) in enumerate(plan):
        for message in _turn(n, parts, rounds, named, reused):
            if message["role"] == "tool":
                results.append(message["content"])
                message = engine.offload_openai_result(message, thread_id="t")
            history.append(message)
        given_ids = {id(m) for m in history}
        out = engine.compact_openai(history, thread_id="t")
        json.dumps(out.messages)  # plain JSON
        for message in out.messages:
            if id(message) not in given_ids:  # written by ctxfs: only OpenAI's keys
                assert set(message) <= OPENAI_KEYS[message["role"]], message
            text = json.dumps(message.get("content"))
            assert text.count(json.dumps(SUMMARY_TAG)[1:-1]) <= 1  # never a summary nested
        # every result still follows the call it answers
        open_calls: set[str] = set()
        for message in out.messages:
            if message["role"] == "assistant":
                open_calls = {c["id"] for c in message.get("tool_calls") or []}
            elif message["role"] == "tool":
                assert message["tool_call_id"] in open_calls
        # nothing compaction did not change is a new dict
        if not out.result.events:
            assert all(a is b for a, b in zip(out.messages, history, strict=True))
        history = out.messages
    archive = TranscriptArchive(workspace, "t").read_all()
    archived = " ".join(str(m.content) for m in archive)
    kept = json.dumps(history)
    for n in range(len(plan)):
        assert f"question {n}:" in archived + kept
    # every tool result is kept, archived or saved byte-exact in a file (ids reused or not)
    found = workspace.glob("**", "/", limit=None).paths
    saved = {workspace.read_text(p) for p in found if p.startswith("/tool_results/")}
    saved |= {m["content"] for m in history if m["role"] == "tool"}
    saved |= {str(m.content) for m in resolve_pointers(archive, workspace)}
    for result in results:
        assert result in saved
