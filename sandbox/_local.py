"""Confinement checks that need the real disk: symlinks that leave the root.

A virtual path is turned into a host path under the root; then the host path is resolved with
``os.path.realpath`` (which follows every symlink, including those in parent folders) and must
still lie under the resolved root. A symlink made inside the root that points inside the root
is fine; one pointing outside is refused for reads and writes alike.
"""

from __future__ import annotations

import os

from ctxfs._errors import UnsafePathError

__all__ = ["check_host_path", "host_path", "real_virtual_path"]


def host_path(root: str, virtual: str) -> str:
    """Join a normalised virtual path onto a host root, without resolving anything."""
    return root if virtual == "/" else os.path.join(root, virtual[1:])


def real_virtual_path(real_root: str, host: str, virtual: str) -> str:
    """The virtual path ``host`` really leads to, with symlinks followed.

    Args:
        real_root: The workspace root, already resolved with ``os.path.realpath``.
        host: The host path of ``virtual`` (see :func:`host_path`).
        virtual: The virtual path, for the message.

    Raises:
        UnsafePathError: A symlink on the way leads outside the workspace.
    """
    resolved = os.path.realpath(host)
    if resolved == real_root:
        return "/"
    if not resolved.startswith(real_root.rstrip(os.sep) + os.sep):
        raise UnsafePathError(
            f"path {virtual!r} goes through a symbolic link that leads outside the workspace; "
            "it cannot be read or written",
            path=virtual,
        )
    return "/" + os.path.relpath(resolved, real_root).replace(os.sep, "/")


def check_host_path(real_root: str, host: str, virtual: str) -> None:
    """Refuse ``host`` if, with symlinks followed, it resolves outside ``real_root``.

    Raises:
        UnsafePathError: A symlink on the way leads outside the workspace.
    """
    real_virtual_path(real_root, host, virtual)
