"""The graph hooks under their former name: see :mod:`ctxfs.integrations._hooks`.

Kept so that the layers built on the hooks (memory, sub-agents, the demo) keep their
imports while they move to the new name.
"""

from ctxfs.integrations._hooks import (
    DEFAULT_THREAD_ID,
    ContextHooks,
    ContextMeasured,
    EventHandler,
    RequestShape,
    current_thread_id,
    is_context_overflow,
    plan_of,
    state_update,
    thread_id_from_config,
)

__all__ = [
    "DEFAULT_THREAD_ID",
    "ContextHooks",
    "ContextMeasured",
    "EventHandler",
    "RequestShape",
    "current_thread_id",
    "is_context_overflow",
    "plan_of",
    "state_update",
    "thread_id_from_config",
]
