"""Fixtures of the integration tests."""

from __future__ import annotations

import pytest

from ctxfs import ContextPolicy


@pytest.fixture
def policy() -> ContextPolicy:
    """A 16k window; results over 1,000 tokens are offloaded."""
    return ContextPolicy(max_input_tokens=16_000, tool_results={"threshold": {"tokens": 1_000}})
