"""The one check a workspace makes when it is opened: can its storage be read, and written?

A missing S3 bucket must not look like an empty workspace, and an agent must not run to the
end with every write refused. So opening a workspace asks the storage once, cheaply, and
fails with a message a person can act on ("bucket 'x' does not exist", "no credentials",
"access denied", "could not connect to the storage at ..."). The check is made when the
workspace is opened, not at its first use: a misconfiguration then stops the program where
it was configured, before an agent starts, rather than surfacing as a tool error mid-run.

What it costs: one metadata call on the root (``Store.info("/")``: a ``stat`` on local disk,
one or two small requests on S3), plus, for a writable workspace, a permission query on
local disk or the write and delete of a hidden probe on object storage (nothing in memory).
"""

from __future__ import annotations

import contextlib
import sys

from ctxfs._errors import PathNotFoundError
from ctxfs.backends._local import LocalStore
from ctxfs.backends._store import Store

__all__ = ["check_store"]


def check_store(store: Store, *, write: bool) -> None:
    """Ask ``store`` once whether it can be read (and, with ``write``, written).

    Any store is asked for the metadata of its root (an empty or not yet created root is
    fine); :class:`LocalStore` and :class:`FsspecStore` also check what only they can tell.

    Raises:
        BackendError: The storage cannot be used; the message says why in words a person
            acts on.
    """
    # An object store's root exists only once something is written under it.
    with contextlib.suppress(PathNotFoundError):
        store.info("/")
    # an FsspecStore exists only once its module is loaded (a local folder never loads it)
    fsspec_store = sys.modules.get("ctxfs.backends._fsspec")
    if isinstance(store, LocalStore) or (
        fsspec_store is not None and isinstance(store, fsspec_store.FsspecStore)
    ):
        store.check(write=write)
