"""Where a workflow's files live, and the JSON text they are written as.

::

    /sessions/<workflow id>.json                      the state file
    /sessions/<workflow id>/stages/<NN>-<stage>.json  each validated output on its own

``/sessions`` is one of the areas ctxfs writes (:data:`ctxfs._layout.SDK_AREAS`): the agents'
workspace tools may read it but not write there, so no stage's agent can forge the state or
another stage's output through them.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ctxfs._layout import SESSIONS_DIR

__all__ = [
    "SESSIONS_DIR",
    "dumps_json",
    "output_digest",
    "stage_path",
    "state_path",
    "workflow_folder",
]

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def state_path(workflow_id: str) -> str:
    """The state file of a workflow."""
    return f"{SESSIONS_DIR}/{workflow_id}.json"


def workflow_folder(workflow_id: str) -> str:
    """The folder of a workflow's stage outputs."""
    return f"{SESSIONS_DIR}/{workflow_id}/stages"


def stage_path(workflow_id: str, index: int, stage: str) -> str:
    """The file of one stage's validated output (``index`` counts from 0)."""
    return f"{workflow_folder(workflow_id)}/{index + 1:02d}-{stage}.json"


def dumps_json(value: Any) -> str:
    """``value`` as indented JSON a person can read, that always encodes as UTF-8.

    Text is written as it is (not ``\\u`` escaped), except a lone surrogate (half of a UTF-16
    pair, which a model's reply may hold and UTF-8 cannot encode): it is written as its
    ``\\udXXX`` escape, so the file is valid UTF-8 JSON and reads back to the same text (two
    halves of one pair read back as the character they make).

    >>> dumps_json({"a": "é\\ud800"})
    '{\\n  "a": "é\\\\ud800"\\n}'
    """
    text = json.dumps(value, indent=2, ensure_ascii=False)
    # A surrogate can only stand inside a JSON string, where its escape means the same.
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def output_digest(output: dict[str, Any]) -> str:
    """The SHA-256 of an output's canonical JSON (sorted keys, ASCII), in hex."""
    canonical = json.dumps(output, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()
