"""The agent tools' texts, reworded for a person at a shell.

``ctxfs ls | cat | glob | grep`` print the agent tools' own outputs, whose paging notes and
errors name the tools' arguments (``call grep again with offset=20``, ``use
fixed_strings``). On the command line those are flags: this module rewrites the notes to
the flags (``run it again with --offset 20``, ``use -F``), so a message never names an
argument the command does not have.
"""

from __future__ import annotations

import re

__all__ = ["FLAGS", "OPERANDS", "TOOL_WORDS", "for_the_shell"]

FLAGS: dict[str, str] = {
    "fixed_strings": "-F",
    "ignore_case": "-i",
    "multiline": "-U",
    "head_limit": "--head-limit",
    "output_mode": "--output-mode",
    "file_path": "PATH",
}
"""Each tool argument, and the command line's flag (or operand) for it."""

OPERANDS: dict[str, str] = {
    **FLAGS,
    "offset": "--offset",
    "limit": "--limit",
    "path": "PATH",
    "pattern": "PATTERN",
}
"""The names an argument error gives (``offset: Input should be ...``), as the command line
spells them."""

_NAMES = "|".join(FLAGS)
TOOL_WORDS = re.compile(
    rf"(?<![/\w.])(?:{_NAMES})(?![\w./])"
    r"|\b(?:offset|limit|column)=|call (?:read_file|ls|glob|grep)\b|^before and after\b"
)
"""What a reworded text no longer contains: an argument's name or an ``arg=value``."""

_REWRITES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"call read_file with offset=\d+, limit=1, column=\d+ to read on in this line"),
        "print the file without -n to read the whole line",
    ),
    (
        re.compile(r"call (?:read_file|ls|glob|grep) (?:again )?with offset=(\d+)"),
        r"run it again with --offset \1",
    ),
    (re.compile(r"\buse glob with a pattern\b"), "use ctxfs glob with a pattern"),
    (re.compile(r"\bwith path or glob\b"), "with a PATH or --glob"),
    (re.compile(r"\ba narrower path or glob\b"), "a narrower PATH or --glob"),
    (re.compile(r"\boffset (\d+) is past the end\b"), r"--offset \1 is past the end"),
    (re.compile(r"\buse an offset from\b"), "use an --offset from"),
    (re.compile(r"^offset and head_limit must\b"), "--offset and --head-limit must"),
    (
        re.compile(r"^before and after must be 0 or more context lines"),
        "-A, -B and -C must be 0 or more",
    ),
]
_FLAG = re.compile(rf"(?<![/\w.])({_NAMES})(?![\w./])")


def for_the_shell(text: str) -> str:
    """``text`` with the tools' argument names replaced by the command line's flags.

    Example:
        >>> for_the_shell("... 3 more lines; call grep again with offset=20 to see the next page")
        '... 3 more lines; run it again with --offset 20 to see the next page'
    """
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return _FLAG.sub(lambda found: FLAGS[found.group(1)], text)
