"""ctxfs without a LangChain agent: OpenAI-style message dicts and JSON tool schemas.

Your own loop talks to the model in OpenAI's chat format and keeps the history as dicts.
ctxfs gives you:

- the workspace tools as plain callables with JSON schemas (``tool_functions``), to send as
  ``tools=[f.openai_spec() for f in functions]`` and to run with ``f.invoke(arguments)``;
- ``engine.offload_openai_result(...)`` for each tool result (a large one comes back as a
  pointer dict) and ``engine.compact_openai(history, ...)`` before each request: dicts in,
  dicts out, nothing a provider would refuse. A summary or pointer is recognised when its
  dict comes back, so each summary continues the transcript chain.

The model here is a scripted function returning OpenAI-style assistant messages, so the
example runs offline; replace ``fake_openai_chat`` by your client's call.

    python examples/openai_messages.py
    python examples/openai_messages.py --summarize-at 5   # compacts twice on the way
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import Any

from ctxfs import ContextEngine, ContextPolicy, SummarizationDict, Workspace
from ctxfs.tools import tool_functions

Message = dict[str, Any]
THREAD = "openai-example"


def fake_openai_chat(messages: Sequence[Message], tools: Sequence[Message]) -> Message:
    """Stands in for ``client.chat.completions.create(...).choices[0].message``."""
    assert {t["function"]["name"] for t in tools} >= {"read_file", "grep"}
    last = messages[-1]
    # The step follows from the last tool result, not from counting turns: a compaction
    # replaces the early turns by a summary.
    step = int(last["tool_call_id"].removeprefix("call_")) + 1 if last["role"] == "tool" else 0
    if step == 0:
        call = {"name": "read_file", "arguments": json.dumps({"file_path": "/data/report.csv"})}
    elif step == 1:
        call = {"name": "export_rows", "arguments": "{}"}
    elif step == 2:
        # a model reads the path in the pointer's text, as this stand-in does
        found = re.search(r"/tool_results/\S+?\.txt", last["content"])
        assert found, "the pointer names the saved file"
        path = found.group()
        args = {"pattern": "^row-0042,", "path": path, "output_mode": "content"}
        call = {"name": "grep", "arguments": json.dumps(args)}
    else:
        return {"role": "assistant", "content": f"Row 42 is: {last['content'].split(':', 2)[2]}"}
    tool_call = {"id": f"call_{step}", "type": "function", "function": call}
    return {"role": "assistant", "content": "", "tool_calls": [tool_call]}


def export_rows() -> str:
    """A tool of your own with a large result."""
    return "\n".join(f"row-{n:04d},{n * 3 % 101},{'ok' if n % 9 else 'late'}" for n in range(3000))


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the loop until the model answers; returns the answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="memory://openai-example", help="folder or URL")
    parser.add_argument(
        "--summarize-at", type=int, help="summarize once the history has this many messages"
    )
    args = parser.parse_args(argv)

    workspace = Workspace(args.workspace)
    workspace.write_text("/data/report.csv", "id,score\nrow-0001,3\n")
    summarization: SummarizationDict = {}
    if args.summarize_at:
        summarization = {"trigger": {"messages": args.summarize_at}, "keep": {"messages": 2}}
    engine = ContextEngine(
        workspace,
        ContextPolicy(
            max_input_tokens=16_000,
            tool_results={"threshold": {"tokens": 1_000}},
            summarization=summarization,
        ),
    )
    functions = {f.name: f for f in tool_functions(workspace)}
    specs = [f.openai_spec() for f in functions.values()]
    specs.append({"type": "function", "function": {"name": "export_rows", "parameters": {}}})

    history: list[Message] = [{"role": "user", "content": "What does row 42 of the export say?"}]
    while True:
        reply = fake_openai_chat(history, specs)
        history.append(reply)
        if not reply.get("tool_calls"):
            return str(reply["content"])
        for call in reply["tool_calls"]:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            output = export_rows() if name == "export_rows" else functions[name].invoke(arguments)
            result = {"role": "tool", "tool_call_id": call["id"], "content": output}
            # Large results go to the workspace; the history keeps a pointer. Passing the
            # tool tells ctxfs's own read_file (which pages) from a tool of another making.
            tool = functions.get(name)
            history.append(
                engine.offload_openai_result(result, thread_id=THREAD, name=name, tool=tool)
            )
        # Before the next request, compact the history (offload old inputs, summarize).
        history = engine.compact_openai(history, thread_id=THREAD).messages
        print(f"{len(history)} messages, last: {str(history[-1]['content'])[:90]!r}")


if __name__ == "__main__":
    print(main())
