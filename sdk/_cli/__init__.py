"""The ``ctxfs`` command line: one module per group of subcommands.

- :mod:`~ctxfs._cli._main`: the parser and :func:`main`;
- :mod:`~ctxfs._cli._common`: what every subcommand shares (errors, opening a workspace);
- :mod:`~ctxfs._cli._workspace`: ``ls``, ``cat``, ``glob``, ``grep``, ``transcripts``;
- :mod:`~ctxfs._cli._replay`: ``replay``; :mod:`~ctxfs._cli._memory`: ``memory``;
  :mod:`~ctxfs._cli._session`: ``session``; :mod:`~ctxfs._cli._mcp`: ``mcp serve``.
"""

from ctxfs._cli._main import main

__all__ = ["main"]
