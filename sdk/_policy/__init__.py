"""The settings: what the context engine does, and when; validated, immutable, keyword-only.

- :mod:`~ctxfs._policy._settings`: :class:`ContextPolicy`, and every settings name (the
  models it is made of and their ``...Dict`` TypedDicts) in one place;
- :mod:`~ctxfs._policy._fields`: the values settings are made of (thresholds, triggers, kept
  windows) and the settings base;
- :mod:`~ctxfs._policy._steps`: the settings of each step (result and input offload,
  clearing, summarization);
- :mod:`~ctxfs._policy._dicts`: the plain-dict forms of the step settings and the policy;
- :mod:`~ctxfs._policy._budget`: the values a policy resolves to for one window;
- :mod:`~ctxfs._policy._prompt`: the default summary prompt.

Nothing here imports an implementation: the settings are data.
"""

from ctxfs._policy._budget import KeepWindow
from ctxfs._policy._settings import ContextPolicy

__all__ = ["ContextPolicy", "KeepWindow"]
