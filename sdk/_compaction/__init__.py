"""The compaction: the engine that keeps a request inside its window, and its steps.

- :mod:`~ctxfs._compaction._engine`: :class:`ContextEngine`, the driver of the escalation;
- :mod:`~ctxfs._compaction._clearing`: planning the clearing of old tool results;
- :mod:`~ctxfs._compaction._prefix`: how much of a request a provider's prefix cache reuses;
- :mod:`~ctxfs._compaction._openai`: OpenAI-style dicts in and out of the engine.
"""

from ctxfs._compaction._engine import ContextEngine

__all__ = ["ContextEngine"]
