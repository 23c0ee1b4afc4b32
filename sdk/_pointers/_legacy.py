"""Pointers written before pointers carried metadata, read strictly so look-alikes stay content.

Checkpoints made by earlier versions hold pointers as text only. They keep working: this
module recognises them, and only them. A text is taken for one of those pointers when the
*whole* text has exactly the layout that version wrote (a tool result that merely begins
with a quoted pointer is content) and the file it names is the one that version would have
named for this very call (a copy of another call's pointer is content). What such a pointer
says about the file (its size) is checked against the file before anything relies on it.
This is the one place where ctxfs reads pointer prose; new pointers are never parsed.
Re-read pointers of that version are not recognised: they are kept, or saved, as content.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Literal

from ctxfs._layout import INPUTS_DIR, RESULTS_DIR, safe_name

__all__ = ["LegacyPointer", "legacy_input_pointer", "legacy_result_pointer"]


@dataclass(frozen=True, slots=True)
class LegacyPointer:
    """What an old pointer text says: its kind, the file it names and the sizes it gives."""

    kind: Literal["result", "cleared", "input"]
    path: str
    lines: int
    chars: int
    tokens: int


_RESULT_TAG = "[ctxfs: tool result offloaded]"
_INPUT_TAG = "[ctxfs: tool input offloaded]"
_CLEARED_TAG = "[ctxfs: tool result cleared]"
_STATS = r"([\d,]+) lines, ([\d,]+) characters, ([\d,]+) tokens"
# <area>/<thread>/<file>, the thread folder as safe_name wrote it: never "." or "..", which
# would name a file outside the area (one an agent may write)
_FILE = r"/[A-Za-z0-9_-][A-Za-z0-9._-]*/[^\s/]+"
_RESULT_HEAD = re.compile(
    r"The full result was saved to ("
    + re.escape(RESULTS_DIR)
    + _FILE
    + r") \("
    + _STATS
    + r"\)\. It was too large to keep in the conversation\."
)
_PREVIEW = re.compile(r"Preview, lines 1-(\d+) of [\d,]+ \(long lines clipped\):")
_CLEARED_HEAD = re.compile(
    re.escape(_CLEARED_TAG)
    + r" Saved to ("
    + re.escape(RESULTS_DIR)
    + _FILE
    + r") \("
    + _STATS
    + r"\); read_file or grep it\."
)
_INPUT = re.compile(
    re.escape(_INPUT_TAG)
    + r" The (\S+) argument of this \S+ call was saved byte-exact to ("
    + re.escape(INPUTS_DIR)
    + _FILE
    + r") \(([\d,]+) characters, ([\d,]+) tokens\)\.(?: The tool applied it to "
    r"\S.*?\.)? Use read_file on \2 to see it\."
)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _names_call(path: str, stem: str) -> bool:
    """Whether a file name is ``<stem>.<ext>`` or ``<stem>.<n>.<ext>``."""
    name = posixpath.basename(path)
    if not name.startswith(stem + "."):
        return False
    rest = name[len(stem) + 1 :].split(".")
    return len(rest) == 1 or (len(rest) == 2 and rest[0].isdigit())


def legacy_result_pointer(text: str, tool_call_id: str) -> LegacyPointer | None:
    """Returns what an old offload or clearing pointer text says, else ``None``."""
    if text.startswith(_RESULT_TAG + "\n"):
        lines = text.split("\n")
        head = _RESULT_HEAD.fullmatch(lines[1]) if len(lines) >= 3 else None
        if head is None:
            return None
        path = head.group(1)
        shown = 0
        if len(lines) > 3:
            preview = _PREVIEW.fullmatch(lines[2])
            shown = int(preview.group(1)) if preview else -1
            if shown < 1 or len(lines) != shown + 5 or lines[-2] != "[end of preview]":
                return None
        elif len(lines) != 3:
            return None
        tail = (
            f"To see more, call read_file on {path} with offset and limit (offset={shown} "
            "continues after the preview), or search it with grep."
        )
        kind = "result"
        if lines[-1] != tail:
            return None
    elif text.startswith(_CLEARED_TAG + " Saved to "):
        lines = text.split("\n")
        head = _CLEARED_HEAD.fullmatch(lines[0])
        if head is None or len(lines) != 3:
            return None
        if not (lines[1].startswith("Call: ") and lines[2].startswith("Head: ")):
            return None
        path, kind = head.group(1), "cleared"
    else:
        return None
    if not _names_call(path, safe_name(tool_call_id)):
        return None
    return LegacyPointer(
        "cleared" if kind == "cleared" else "result",
        path,
        _number(head.group(2)),
        _number(head.group(3)),
        _number(head.group(4)),
    )


def legacy_input_pointer(text: str, tool_call_id: str, arg: str) -> LegacyPointer | None:
    """Returns what an old tool-input pointer text says, else ``None``."""
    if not text.startswith(_INPUT_TAG):
        return None
    match = _INPUT.fullmatch(text)
    if match is None or match.group(1) != arg:
        return None
    path = match.group(2)
    if not posixpath.basename(path).startswith(safe_name(tool_call_id) + "__"):
        return None
    return LegacyPointer("input", path, 0, _number(match.group(3)), _number(match.group(4)))
