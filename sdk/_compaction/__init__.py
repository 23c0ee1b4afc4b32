"""The compaction: the engine that keeps a request inside its window, and its steps.

- :mod:`~ctxfs._compaction._engine`: :class:`ContextEngine`, the driver of the escalation;
- :mod:`~ctxfs._compaction._means`: what the steps work with (workspace, counter, caches);
- :mod:`~ctxfs._compaction._results`: step 1, result offload when a tool returns;
- :mod:`~ctxfs._compaction._inputs`: step 2, input offload of old large tool arguments;
- :mod:`~ctxfs._compaction._clearing`: planning the clearing of old tool results;
- :mod:`~ctxfs._compaction._apply`: step 3, applying a clearing;
- :mod:`~ctxfs._compaction._batch`: the lossless steps planned as one frozen batch, applied
  at once;
- :mod:`~ctxfs._compaction._outcome`: the compaction's result and its events;
- :mod:`~ctxfs._compaction._request`: the request's other parts, and its window;
- :mod:`~ctxfs._compaction._prefix`: how much of a request a provider's prefix cache reuses;
- :mod:`~ctxfs._compaction._openai`: OpenAI-style dicts in and out of the engine.
"""

from ctxfs._compaction._engine import ContextEngine

__all__ = ["ContextEngine"]
