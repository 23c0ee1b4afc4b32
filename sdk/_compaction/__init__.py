"""The compaction: the engine that keeps a request inside its window, and its steps.

- :mod:`~ctxfs._compaction._engine`: :class:`ContextEngine`, the driver: it resolves the
  window once into a budget, runs each step under its lock, and answers the summary model;
- :mod:`~ctxfs._compaction._escalation`: one compaction, in order of escalation, and its
  result (a generator over values, shared by the sync and the async driver);
- :mod:`~ctxfs._compaction._means`: what the steps work with (workspace, counter, caches),
  and what the engine gives the public methods of its steps;
- :mod:`~ctxfs._compaction._request`: the request's other parts, its window, and the prefix
  a provider caches;
- :mod:`~ctxfs._compaction._results`: step 1, result offload when a tool returns;
- :mod:`~ctxfs._compaction._inputs`: step 2, input offload of old large tool arguments;
- :mod:`~ctxfs._compaction._clearing`: planning the clearing of old tool results;
- :mod:`~ctxfs._compaction._apply`: step 3, applying a clearing;
- :mod:`~ctxfs._compaction._batch`: the lossless steps planned as one frozen batch, applied
  at once;
- :mod:`~ctxfs._compaction._openai`: OpenAI-style dicts in and out of the engine.

Each step's public method on the engine (``offload_tool_result``, ``offload_tool_inputs``,
``clear_tool_results``, ``compact_openai``) lives beside its step, in a mixin of the engine.
"""

from ctxfs._compaction._engine import ContextEngine

__all__ = ["ContextEngine"]
