"""Where ctxfs keeps what it takes out of the context, inside a workspace.

The areas are ordinary visible folders at the top of the workspace, not dot-folders, so
``ls /`` shows them and ``grep`` from ``/`` searches them. They are read-only to the agent's
tools: only the SDK writes there, create-only, except two kinds of files it rewrites
atomically: each thread's transcript index, and the long-term memory documents under
``/memories/`` (rewritten by compare-and-swap, see :mod:`ctxfs.memory`).

Files ctxfs moves out of the context get deterministic, collision-free names:

::

    /tool_results/<thread>/<call>.<ext>
    /tool_inputs/<thread>/<call>__<arg>.<ext>
    /transcripts/<thread>/messages/<message>__<part>.<ext>

``<thread>`` and ``<call>`` are :func:`file_name` of the raw ids: the id itself when it is
already a short, safe file name (pointers name these paths, so every character costs tokens
on every later request), else :func:`safe_name` (a sanitized, truncated prefix plus 16 hex
digits of the SHA-256 of the raw id, so empty ids, ids equal after sanitizing and very long
ids never share a name), and ``<ext>`` is ``json`` when the text
parses as a JSON object or array, ``txt`` otherwise. If a name is taken by different content
(a provider that reuses call ids), :func:`candidate_paths` yields a name made from the
content itself (``<call>.<16 hex digits of its SHA-256>.<ext>``), so a result under a reused
id costs one extra attempt, not one per earlier result; only if that too holds something
else come numbered names (``<call>.2.<ext>``, ...), in a fixed order.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator

__all__ = [
    "INPUTS_DIR",
    "MEMORIES_DIR",
    "RESULTS_DIR",
    "SDK_AREAS",
    "SESSIONS_DIR",
    "TRANSCRIPTS_DIR",
    "candidate_paths",
    "file_name",
    "input_path",
    "is_json_text",
    "message_path",
    "result_path",
    "safe_name",
]

RESULTS_DIR = "/tool_results"
"""Full text of large tool results, one file per tool call, per thread."""

INPUTS_DIR = "/tool_inputs"
"""Byte-exact copies of large tool-call arguments (write/edit contents), per thread."""

TRANSCRIPTS_DIR = "/transcripts"
"""Archived conversation segments (JSONL + Markdown) and their index, per thread."""

MEMORIES_DIR = "/memories"
"""Long-term memory: one JSON document and its Markdown rendering per namespace."""

SESSIONS_DIR = "/sessions"
"""Staged workflows: each one's state file and its stages' validated outputs."""

SDK_AREAS: tuple[str, ...] = (RESULTS_DIR, INPUTS_DIR, TRANSCRIPTS_DIR, MEMORIES_DIR, SESSIONS_DIR)
"""All areas the SDK writes; the agent's tools treat them as read-only."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_PLAIN_ARG = re.compile(r"[A-Za-z0-9_]{1,64}")
_HASH_HEX = 16


def safe_name(raw: str, *, max_len: int = 40) -> str:
    """Returns a file-name-safe, collision-free rendering of an id.

    Characters outside ``[A-Za-z0-9._-]`` become ``_``, leading dots are removed, the result
    is cut to ``max_len`` characters, and ``-`` plus 16 hex digits of the SHA-256 of the raw id
    is appended (the digest alone when nothing of the id is left).

    Example:
        >>> safe_name("call/1")
        'call_1-c5fb05e4d7a4906f'
    """
    clean = _UNSAFE.sub("_", raw).lstrip(".")[:max_len]
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX]
    return f"{clean}-{digest}" if clean else digest


_PLAIN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,39}")
_HASHED = re.compile(r".*-[0-9a-f]{16}|[0-9a-f]{16}")


def file_name(raw: str) -> str:
    """Returns ``raw`` when it is a plain file name of at most 40 characters without ``__``,
    else :func:`safe_name` of it: collision-free either way.

    A plain name never ends like a :func:`safe_name` (``-`` and 16 hex digits, or the digest
    alone), so an id kept as it is never meets another id's hashed name.

    Example:
        >>> file_name("call_1"), file_name("call/1")
        ('call_1', 'call_1-c5fb05e4d7a4906f')
    """
    # no "__" either: it separates the call from the argument in an input's file name
    if _PLAIN_ID.fullmatch(raw) and not _HASHED.fullmatch(raw) and "__" not in raw:
        return raw
    return safe_name(raw)


def _arg_name(arg: str) -> str:
    return arg if _PLAIN_ARG.fullmatch(arg) else safe_name(arg, max_len=24)


def is_json_text(text: str) -> bool:
    """Returns whether ``text`` is a JSON object or array (surrounding whitespace allowed)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to call it a file's
        return False
    return isinstance(value, dict | list)


def _extension(text: str) -> str:
    return "json" if is_json_text(text) else "txt"


def result_path(thread_id: str, tool_call_id: str, text: str) -> str:
    """Returns the first-choice path for the full text of a tool result."""
    return f"{RESULTS_DIR}/{file_name(thread_id)}/{file_name(tool_call_id)}.{_extension(text)}"


def input_path(thread_id: str, tool_call_id: str, arg: str, text: str) -> str:
    """Returns the first-choice path for one argument of a tool call."""
    stem = f"{file_name(tool_call_id)}__{_arg_name(arg)}"
    return f"{INPUTS_DIR}/{file_name(thread_id)}/{stem}.{_extension(text)}"


def message_path(thread_id: str, message_id: str | None, part: str, text: str) -> str:
    """Returns the first-choice path for a text of a message moved out of a request that
    could not fit otherwise: ``<part>`` is ``content`` or ``call<k>`` (the arguments of the
    k-th botched call). It sits beside the thread's transcript, in ``messages/``: a piece of
    the conversation's own words, kept as the transcript keeps them."""
    stem = f"{file_name(message_id or '')}__{part}"
    return f"{TRANSCRIPTS_DIR}/{safe_name(thread_id)}/messages/{stem}.{_extension(text)}"


def candidate_paths(
    path: str, text: str | bytes | None = None, *, limit: int = 64
) -> Iterator[str]:
    """Yields ``path`` and then its deterministic alternatives.

    With ``text`` (or the bytes of a binary file), the first alternative is named by its
    content (``a.<digest>.txt``), then come ``a.2.txt``, ``a.3.txt``, ... Used when a name is
    taken by different content: ctxfs never overwrites.

    Example:
        >>> list(candidate_paths("/r/t/a.txt", "hi", limit=3))
        ['/r/t/a.txt', '/r/t/a.8f434346648f6b96.txt', '/r/t/a.2.txt', '/r/t/a.3.txt']
    """
    yield path
    stem, dot, ext = path.rpartition(".")
    if text is not None:
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()[:_HASH_HEX]
        yield f"{stem}.{digest}.{ext}" if dot else f"{path}.{digest}"
    for n in range(2, limit + 1):
        yield f"{stem}.{n}.{ext}" if dot else f"{path}.{n}"
