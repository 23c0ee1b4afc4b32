"""The settings: what the context engine does, and when; validated, immutable, keyword-only.

- :mod:`~ctxfs._policy._settings`: :class:`ContextPolicy` and the models it is made of, with
  their ``...Dict`` TypedDicts;
- :mod:`~ctxfs._policy._budget`: the values a policy resolves to for one window;
- :mod:`~ctxfs._policy._prompt`: the default summary prompt.

Nothing here imports an implementation: the settings are data.
"""

from ctxfs._policy._budget import KeepWindow
from ctxfs._policy._settings import ContextPolicy

__all__ = ["ContextPolicy", "KeepWindow"]
