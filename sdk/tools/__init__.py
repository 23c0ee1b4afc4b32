"""The agent's file tools: ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``, ``grep``.

Two forms of the same six tools, sharing one implementation:

- :func:`workspace_tools` gives LangChain tools (for ``create_agent``, langgraph's
  ``ToolNode``...).
- :func:`tool_functions` gives :class:`ToolFunction` objects: plain callables with a JSON
  schema and an OpenAI-style spec, for agents that do not use LangChain.

Both act on a view of the workspace in which the SDK's own areas (:data:`SDK_AREAS`:
``/tool_results``, ``/tool_inputs``, ``/transcripts``, ``/memories``) are read-only. Every
failure is answered with a string starting with ``Error:`` that says what to do next;
nothing raises into the agent loop. Every answer is at most ``max_output_tokens`` tokens
(:data:`DEFAULT_MAX_OUTPUT_TOKENS` unless given): the recovery tools (``ls``, ``read_file``,
``glob``, ``grep``) are exempt from offloading, so they page instead. They are recognised by
identity, not by name (:mod:`ctxfs.tools._identity`): another tool called ``read_file`` is
offloaded like any tool.
"""

from __future__ import annotations

from ctxfs._layout import SDK_AREAS
from ctxfs.tools._budget import DEFAULT_MAX_OUTPUT_TOKENS, MIN_OUTPUT_TOKENS
from ctxfs.tools._function import ToolFunction
from ctxfs.tools._functions import tool_functions
from ctxfs.tools._identity import register_recovery_tools
from ctxfs.tools._langchain import as_langchain_tool, workspace_tools

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "MIN_OUTPUT_TOKENS",
    "SDK_AREAS",
    "ToolFunction",
    "as_langchain_tool",
    "tool_functions",
    "workspace_tools",
]

register_recovery_tools()
