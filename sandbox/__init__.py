"""Confinement for agent-supplied paths: virtual-path rules, read-only areas, size caps,
time limits.

Everything an agent hands the workspace goes through here first. The rules are pure where they
can be (:func:`normalize_path`), and touch the disk only for what only the disk can tell
(symlinks on local storage, :func:`check_host_path`).
"""

from __future__ import annotations

from ctxfs.sandbox._limits import Limits, TimeBudget
from ctxfs.sandbox._local import check_host_path, host_path, real_virtual_path
from ctxfs.sandbox._paths import (
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    case_key,
    is_within,
    normalize_path,
    relative_to,
)

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "Limits",
    "TimeBudget",
    "case_key",
    "check_host_path",
    "host_path",
    "is_within",
    "normalize_path",
    "real_virtual_path",
    "relative_to",
]
