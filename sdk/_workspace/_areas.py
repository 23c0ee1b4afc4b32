"""Read-only areas: the folders that refuse writes, edits and deletes, compared case-folded.

A value the workspace (and each of its views) holds: which areas there are, which one a path
lies in, and the message that refuses a write there.
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxfs._errors import ReadOnlyPathError
from ctxfs._layout import SDK_AREAS
from ctxfs.sandbox import case_key, is_within, normalize_path

__all__ = ["ReadOnlyAreas"]


class ReadOnlyAreas:
    """The read-only folders of one workspace view.

    Compared with case folded (:func:`ctxfs.sandbox.case_key`), whatever the store: on a
    case-insensitive disk ``/TOOL_RESULTS/x`` is ``/tool_results/x``, so it must be refused
    everywhere the same way.

    Args:
        folders: Virtual folders (normalised here).
    """

    def __init__(self, folders: Iterable[str]) -> None:
        self.folders = tuple(sorted({normalize_path(p) for p in folders}))
        self._keys = tuple(case_key(p) for p in self.folders)

    def area_of(self, path: str) -> str | None:
        """The read-only area a normalised virtual path lies in, if any."""
        key = case_key(path)
        for area, area_key in zip(self.folders, self._keys, strict=True):
            if is_within(key, area_key):
                return area
        return None

    def inside(self, folder: str) -> bool:
        """Whether a read-only area lies inside ``folder`` (deleting it would delete one)."""
        key = case_key(folder)
        return any(is_within(area_key, key) for area_key in self._keys)

    def check_writable(self, virtual: str, real: str) -> None:
        """Refuse a write to ``virtual``, which really leads to ``real`` (links followed).

        Checked on the path as given and on where it really leads: a symlink made inside the
        root must not open a way to write into a read-only area.

        Raises:
            ReadOnlyPathError: Either lies in a read-only area.
        """
        target = virtual if self.area_of(virtual) is not None else real
        area = self.area_of(target)
        if area is None:
            return
        where = virtual if target == virtual else f"{virtual} (a link to {target})"
        if area == "/":
            raise ReadOnlyPathError(
                f"{where} cannot be written: this workspace was opened read-only", path=virtual
            )
        why = " (written by ctxfs itself)" if area in SDK_AREAS else ""
        raise ReadOnlyPathError(
            f"{where} is in the read-only area {area}/{why}; "
            "write your own files elsewhere, e.g. /notes/",
            path=virtual,
        )
