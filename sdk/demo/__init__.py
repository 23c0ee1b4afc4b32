"""The offline demo behind ``ctxfs demo`` / ``make demo``.

A scripted agent investigates a failing payments job in a generated workspace (a 3.6 MB log
and a small code base) on a 12,000-token budget, long enough for every step of ctxfs to show:
large results offloaded, old inputs offloaded, the history archived and summarized, and an
early detail recovered from the archive with ``grep`` and ``read_file``.

Needs the ``demo`` extra (LangChain and rich): ``pip install 'ctxfs[demo]'``.
"""

from __future__ import annotations

from ctxfs.demo._run import DemoOptions, DemoReport, demo_policy, run_demo

__all__ = ["DemoOptions", "DemoReport", "demo_policy", "run_demo"]
