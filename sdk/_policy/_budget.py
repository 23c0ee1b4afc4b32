"""Values a policy resolves against a window: what each step protects, in numbers.

A :class:`~ctxfs._policy._settings.ContextPolicy` states its settings as fractions, token counts
and message counts; the engine works on what they come to for one window.
:class:`KeepWindow` (the protected recent window, resolved) is defined with the values the
settings are made of (:mod:`ctxfs._policy._fields`), and named here too.
"""

from __future__ import annotations

from ctxfs._policy._fields import KeepWindow

__all__ = ["KeepWindow"]
