"""A missing optional dependency, told as what to install rather than as a defect of ctxfs.

Any command may import a package that only an extra brings (``mcp serve`` the MCP SDK,
``memory search`` bm25s, ``demo`` rich): when that import fails, the command line says which
extra to install, read from ctxfs's own package metadata so it cannot drift from
``pyproject.toml``.
"""

from __future__ import annotations

import re

__all__ = ["extra_of", "missing_dependency"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_BROAD = ("dev", "bench")  # extras that bring everything: named only when no other does


def missing_dependency(exc: BaseException) -> str | None:
    """What to tell the user when ``exc`` comes from a missing (or too old) package.

    Returns:
        One line naming the package and the ``pip install`` that brings it (or the
        package's own words when its import error names no module), or ``None`` when
        ``exc`` is not about a package outside ctxfs (an import error inside ctxfs is a
        defect and is reported as one).
    """
    error = _import_error(exc)
    if error is None:
        return None
    if "pip install" in str(error):  # the raiser already said what to install
        return " ".join(str(error).split())
    name = error.name or ""
    top = name.partition(".")[0]
    if not name:
        # raised by a package's own check (fsspec: 'Install adlfs to access ...'); an
        # import that fails inside ctxfs always names its module
        return " ".join(str(error).split())
    if top == "ctxfs":
        return None
    extra = extra_of(top)
    install = f"pip install 'ctxfs[{extra}]'" if extra else f"pip install {_normal(top)}"
    if isinstance(error, ModuleNotFoundError):
        return f"this command needs the package {top!r}, which is not installed: {install}"
    reason = " ".join(str(error).split())
    return f"the installed {top!r} is not the version ctxfs needs ({reason}): {install} -U"


def extra_of(module: str) -> str | None:
    """The extra of ctxfs that installs the distribution named like ``module``, if any."""
    from importlib import metadata

    wanted = _normal(module)
    try:
        requirements = metadata.requires("ctxfs") or []
    except metadata.PackageNotFoundError:  # running from a source tree
        return None
    extras = []
    for requirement in requirements:
        name, marker = _NAME.match(requirement), _EXTRA.search(requirement)
        if name and marker and _normal(name.group()) == wanted:
            extras.append(marker.group(1))
    if wanted in extras:
        return wanted
    narrow = [extra for extra in extras if extra not in _BROAD]
    return (narrow or extras or [None])[0]


def _import_error(exc: BaseException) -> ImportError | None:
    """The import error ``exc`` is or was raised from (a few causes deep)."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return None
        if isinstance(seen, ImportError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _normal(name: str) -> str:
    """A distribution name as PEP 503 compares them (``mcp_types`` is ``mcp-types``)."""
    return re.sub(r"[-_.]+", "-", name).lower()
