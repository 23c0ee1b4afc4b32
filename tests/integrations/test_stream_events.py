"""ctxfs's events reach LangGraph's custom stream, and its log lines read as sentences."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from _agents import TOOLS
from langchain.agents import create_agent

from ctxfs import ContextPolicy, Workspace
from ctxfs.integrations.langchain import ContextMiddleware
from ctxfs.testing import ScriptedChatModel, tool_call

POLICY = ContextPolicy(max_input_tokens=64_000, tool_results={"threshold": {"tokens": 2_000}})


def _agent(name: str) -> Any:
    model = ScriptedChatModel(responses=[tool_call("big_report", {}), "Done."])
    middleware = ContextMiddleware(Workspace(f"memory://{name}"), POLICY)
    return create_agent(model, TOOLS, middleware=[middleware])


def test_events_stream_in_custom_mode() -> None:
    chunks = list(
        _agent("stream-custom").stream(
            {"messages": [{"role": "user", "content": "report?"}]},
            {"configurable": {"thread_id": "s"}},
            stream_mode="custom",
        )
    )
    events = [c["ctxfs"] for c in chunks if isinstance(c, dict) and "ctxfs" in c]
    kinds = [e["event"] for e in events]
    assert "ToolResultOffloaded" in kinds and "ContextMeasured" in kinds
    offloaded = events[kinds.index("ToolResultOffloaded")]
    assert offloaded["thread_id"] == "s"
    assert offloaded["text"].startswith("result of big_report (")
    assert offloaded["data"]["path"].startswith("/tool_results/")
    json.dumps(events)  # a UI can forward them as they are


def test_log_lines_are_sentences_not_reprs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="ctxfs"):
        _agent("stream-log").invoke(
            {"messages": [{"role": "user", "content": "report?"}]},
            {"configurable": {"thread_id": "s"}},
        )
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("ctxfs")]
    assert any("result of big_report (" in line for line in lines)
    assert any(line.startswith("ctxfs [s]: request ") for line in lines)
    assert not any("ContextMeasured(" in line for line in lines)
