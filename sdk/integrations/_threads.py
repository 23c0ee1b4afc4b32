"""Which conversation a graph run belongs to: its thread id, with the sub-graph it runs in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_THREAD_ID", "current_thread_id", "thread_id_from_config"]

DEFAULT_THREAD_ID = "default"
"""The thread id used when a run's config has none (a graph without a checkpointer)."""


# -- thread ids -----------------------------------------------------------------------------


def thread_id_from_config(
    config: Mapping[str, Any] | None, *, default: str = DEFAULT_THREAD_ID
) -> str:
    """The conversation a run belongs to: its ``thread_id``, plus the sub-graph it runs in.

    ``config["configurable"]["thread_id"]`` names the thread. A run without one (a graph
    without a checkpointer) is named after its ``config["run_id"]``, as ``run-<run_id>``, and
    only a run with neither uses ``default``. The transcript archive allows one writer per
    thread, so concurrent runs without a thread id must not share a name: give each a
    ``run_id`` (``graph.invoke(state, {"run_id": uuid.uuid4()})``) or, better, a
    ``thread_id``. Runs named ``default`` continue one another's files, which is right only
    while they run one at a time.

    A node of a sub-graph runs in a checkpoint namespace such as
    ``researcher:<task>|model:<task>``; its conversation is ``<thread_id>/researcher:<task>``:
    the namespace without its last segment (the node itself, whose task changes at every
    step). The task of each enclosing node stays: it names one invocation, and is the same at
    every step of it (and again when a checkpointed run resumes it). So every agent
    invocation gets its own thread: a sub-agent's messages never mix with its parent's, nor
    with those of the same sub-agent invoked in parallel (three calls of one tool that runs
    a ``create_agent`` sub-agent are three threads), and every step of one invocation lands
    in the same place.

    Example:
        >>> thread_id_from_config({"configurable": {"thread_id": "t1",
        ...     "checkpoint_ns": "researcher:1f2|model:9ab"}})
        't1/researcher:1f2'
        >>> thread_id_from_config({"run_id": "5d1c"})
        'run-5d1c'
        >>> thread_id_from_config(None)
        'default'
    """
    configurable = (config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    run = (config or {}).get("run_id")
    if thread not in (None, ""):
        base = str(thread)
    elif run not in (None, ""):
        base = f"run-{run}"
    else:
        base = default
    namespace = configurable.get("checkpoint_ns") or ""
    parents = str(namespace).split("|")[:-1]
    return "/".join([base, *(segment for segment in parents if segment)])


def current_thread_id(default: str = DEFAULT_THREAD_ID) -> str:
    """The thread id of the graph run this is called from (see :func:`thread_id_from_config`).

    Inside a node, langgraph keeps the run's ``run_id`` in the run's runtime rather than in
    the node's config; it is read from there. Outside a graph run, ``default``.
    """
    from langgraph.config import get_config
    from langgraph.runtime import get_runtime

    try:
        config = get_config()
    except RuntimeError:  # not inside a runnable context
        return default
    if config.get("run_id") is None:
        runtime = get_runtime()
        info = getattr(runtime, "execution_info", None)
        if info is not None and info.run_id:
            config = {**config, "run_id": info.run_id}
    return thread_id_from_config(config, default=default)
