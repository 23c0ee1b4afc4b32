"""Adapters that plug ctxfs into agent frameworks; thin shells over one shared core.

- :mod:`ctxfs.integrations.langchain`: :class:`~ctxfs.integrations.langchain.ContextMiddleware`
  for ``langchain.agents.create_agent`` (extra ``langchain``).
- :mod:`ctxfs.integrations.langgraph`: building blocks for a hand-written ``StateGraph``:
  :func:`~ctxfs.integrations.langgraph.compaction_node`,
  :func:`~ctxfs.integrations.langgraph.offload_tool_node` and
  :class:`~ctxfs.integrations.langgraph.ToolResultOffloader`.
- :mod:`ctxfs.integrations.deepagents`:
  :class:`~ctxfs.integrations.deepagents.WorkspaceBackend`, a Deep Agents backend over a
  workspace, for ``create_deep_agent(backend=...)`` (extra ``deepagents``).
- :mod:`ctxfs.integrations.mcp`: :func:`~ctxfs.integrations.mcp.create_server`, an MCP
  server over a workspace for agents outside Python, also ``ctxfs mcp serve`` (extra
  ``mcp``).

Nothing is imported here, so ``import ctxfs`` never pulls in a framework.
"""
