"""Check ``storage_options`` for S3 before s3fs swallows a typo.

``s3fs.S3FileSystem`` takes ``**kwargs`` and hands what it does not know to botocore's
session, so ``endpoint_urll`` would be accepted and silently ignored (and the workspace would
talk to AWS instead of the intended server). The valid names are read from the signatures of
the installed s3fs and of the classes it passes its keywords on to, so every option that
version really accepts is allowed and nothing is listed by hand that could fall out of date.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["check_s3_options", "s3_option_names"]

# Read by fsspec's instance cache (its metaclass), so it appears in no signature.
_FSSPEC_CACHE_OPTION = "skip_instance_cache"


def _keywords(function: Callable[..., Any]) -> set[str]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = inspect.signature(function).parameters.values()
    return {p.name for p in parameters if p.kind in kinds and p.name != "self"}


def s3_option_names(s3_class: type[object]) -> frozenset[str]:
    """Every keyword ``s3_class`` (``s3fs.S3FileSystem``) accepts, including the ones it
    passes on: to fsspec's async base and listings cache, and to the aiobotocore session."""
    from fsspec.asyn import AsyncFileSystem
    from fsspec.dircache import DirCache

    # aiobotocore ships no type information; s3fs depends on it, so it is installed.
    session = importlib.import_module("aiobotocore.session").AioSession
    names = {_FSSPEC_CACHE_OPTION}
    for function in (s3_class.__init__, AsyncFileSystem.__init__, DirCache.__init__):
        names |= _keywords(function)
    names |= _keywords(session.__init__)
    return frozenset(names)


def check_s3_options(options: Iterable[str], s3_class: type[object]) -> None:
    """Refuse option names that ``s3_class`` would silently ignore.

    Raises:
        ValueError: An unknown option; the message names it, suggests the closest valid
            name and lists them all.
    """
    valid = s3_option_names(s3_class)
    unknown = sorted(name for name in options if name not in valid)
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, sorted(valid), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(
        f"unknown S3 storage option {name!r}; {hint}valid options: {', '.join(sorted(valid))}"
    )
