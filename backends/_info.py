"""What a store says about one path: the storage seam's own type.

Every store returns :class:`FileInfo`; the workspace hands it on unchanged (it is
``ctxfs.FileInfo``), so a listing is converted once, at the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["FileInfo"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One entry of the workspace.

    Attributes:
        path: Virtual path, rooted at ``/``.
        type: ``"file"`` or ``"directory"``.
        size: Size in bytes for files; ``None`` for directories.
    """

    path: str
    type: Literal["file", "directory"]
    size: int | None = None

    @property
    def is_dir(self) -> bool:
        """Whether this entry is a directory."""
        return self.type == "directory"

    @property
    def name(self) -> str:
        """The last segment of the path (``""`` for the root)."""
        return self.path.rsplit("/", 1)[-1]
