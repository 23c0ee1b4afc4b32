"""ctxfs without a LangChain agent: OpenAI-style message dicts and JSON tool schemas.

Your own loop talks to the model in OpenAI's chat format. ctxfs gives you:

- the workspace tools as plain callables with JSON schemas (``tool_functions``), to send as
  ``tools=[f.openai_spec() for f in functions]`` and to run with ``f.invoke(arguments)``;
- the engine, which works on LangChain messages: ``convert_to_messages`` turns your dicts
  into them and ``convert_to_openai_messages`` turns them back.

The model here is a scripted function returning OpenAI-style assistant messages, so the
example runs offline; replace ``fake_openai_chat`` by your client's call.

    python examples/openai_messages.py
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import ToolMessage, convert_to_messages, convert_to_openai_messages

from ctxfs import Workspace
from ctxfs.engine import ContextEngine
from ctxfs.offload import pointer_path
from ctxfs.policy import ContextPolicy
from ctxfs.tools import tool_functions

Message = dict[str, Any]


def fake_openai_chat(messages: Sequence[Message], tools: Sequence[Message]) -> Message:
    """Stands in for ``client.chat.completions.create(...).choices[0].message``."""
    assert {t["function"]["name"] for t in tools} >= {"read_file", "grep"}
    last = messages[-1]
    step = sum(1 for m in messages if m["role"] == "assistant")
    if step == 0:
        call = {"name": "read_file", "arguments": json.dumps({"file_path": "/data/report.csv"})}
    elif step == 1:
        call = {"name": "export_rows", "arguments": "{}"}
    elif step == 2:
        path = pointer_path(last["content"])
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
    workspace = Workspace("memory://openai-example")
    workspace.write_text("/data/report.csv", "id,score\nrow-0001,3\n")
    engine = ContextEngine(
        workspace,
        ContextPolicy(max_input_tokens=16_000, tool_results={"threshold": {"tokens": 1_000}}),
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
            result = ToolMessage(content=output, tool_call_id=call["id"], name=name)
            # Large results go to the workspace; the conversation keeps a pointer.
            result = engine.offload_tool_result(result, thread_id="openai-example")
            history.append(convert_to_openai_messages(result))  # type: ignore[arg-type]
        # Before the next request, compact the history (offload old inputs, summarize).
        messages = convert_to_messages(history)
        compacted = engine.compact(messages, thread_id="openai-example").messages
        history = [dict(m) for m in convert_to_openai_messages(compacted)]
        print(f"{len(history)} messages, last: {str(history[-1]['content'])[:90]!r}")


if __name__ == "__main__":
    print(main())
