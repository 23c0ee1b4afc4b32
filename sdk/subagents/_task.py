"""The task message a sub-agent starts from: the task whole, or saved and pointed to.

A parent may hand a sub-agent more than its window holds (a long description, a document
pasted into it). Sent whole, the sub-agent's first request would be over its window before it
did anything, and nothing the engine does can shrink it (the task is the one message every
request must carry). So a task over the sub-agent's result threshold (the size at which a tool
result is offloaded, :attr:`~ctxfs.ContextPolicy.result_threshold_tokens`), or one that does
not fit beside the system prompt and the tool schemas, is saved byte-exact to
``/tool_results/<its thread>/task.txt``, and the sub-agent's task message says where, how
long it is, shows its first lines (quoted, as a result's preview is) and says how to read the
rest. Nothing is lost and no request is sent over the window.
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from ctxfs._compaction._engine import ContextEngine
from ctxfs._layout import result_path
from ctxfs._pointers._pointer import count_lines
from ctxfs._sections import neutralize, one_line, quote_lines
from ctxfs._tokens import count_exceeding
from ctxfs._workspace._saving import Unsaved, save_text

__all__ = ["TASK_TAG", "task_message"]

TASK_TAG = "[ctxfs: task saved to a file]"
"""The first words of a task message that points to the saved task."""


def task_message(engine: ContextEngine, thread_id: str, prompt: str, fixed: int) -> HumanMessage:
    """The sub-agent's first message: ``prompt`` whole, or a pointer to it saved.

    Args:
        engine: The sub-agent's engine, its window known (its policy resolved).
        thread_id: The sub-agent's thread (names the saved file).
        prompt: The task.
        fixed: Tokens of the system message and the tool schemas of every request.

    Raises:
        ValueError: The system message and the tool schemas alone leave no room in the
            window, or the task is too long and could not be saved (nothing ran then).
    """
    policy = engine.policy
    message_id = f"{thread_id}:task"
    room = policy.request_limit_tokens - fixed
    if room <= 0:
        raise ValueError(
            f"its system prompt and tool schemas ({fixed:,} tokens) leave no room in its "
            f"window ({policy.request_limit_tokens:,} tokens a request); give it a larger "
            "window (policy max_input_tokens), fewer tools or a shorter system prompt"
        )
    limit = min(policy.result_threshold_tokens, room)
    with engine.lock:
        tokens = count_exceeding(engine.token_counter, prompt, limit)
    if tokens is None:
        return HumanMessage(content=prompt, id=message_id)
    try:
        path = save_text(engine.workspace, result_path(thread_id, "task", prompt), prompt)
    except Unsaved as failure:
        raise ValueError(
            f"the task ({tokens:,} tokens) is too long for the sub-agent's window and could "
            f"not be saved to the workspace ({failure.reason}); shorten it, or write the "
            "material to a file and name the file in the task"
        ) from None
    settings = policy.tool_results
    text = _pointer(path, prompt, tokens, settings.preview_lines, settings.preview_line_chars)
    return HumanMessage(content=text, id=message_id)


def _pointer(path: str, prompt: str, tokens: int, lines: int, width: int) -> str:
    total = count_lines(prompt)
    out = [
        f"{TASK_TAG} Your task is too long to show here whole ({total:,} lines, {tokens:,} "
        f"tokens); it is saved, exactly as it was written, to {one_line(path)}. Read all of "
        "it before you start."
    ]
    shown = min(lines, total)
    if shown:
        head = prompt.split("\n", shown)[:shown]
        clipped = "\n".join(_clip(line, width) for line in head)
        out.append(f"Lines 1-{shown}:")
        # neutralized as a whole: a tag split over two lines is a tag too
        out.extend(
            quote_lines(" ".join(line.splitlines())) for line in neutralize(clipped).split("\n")
        )
        rest = next((n for n, line in enumerate(head) if len(line) > width), shown)
        out.append(f"[read_file it from offset={rest} for the rest, or grep it]")
    else:
        out.append("[read_file it with offset and limit, or grep it]")
    return "\n".join(out)


def _clip(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    return f"{line[:width]}… [{len(line) - width:,} more characters]"
