"""A policy's numbers are one frozen Budget, resolved once per policy and window (issue 22)."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from _histories import policies
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import ContextPolicy, Threshold
from ctxfs._policy._budget import Budget

NUMBERS = [f.name for f in dataclasses.fields(Budget) if f.name != "policy"]


def _numbers(budget: Budget[ContextPolicy]) -> dict[str, object]:
    return {name: getattr(budget, name) for name in NUMBERS}


def _fresh(policy: ContextPolicy) -> ContextPolicy:
    """The same settings, constructed anew (nothing cached)."""
    return ContextPolicy(**{name: getattr(policy, name) for name in policy.model_fields_set})


@settings(max_examples=80, deadline=None)
@given(policy=policies(), window=st.integers(min_value=20_000, max_value=400_000))
def test_the_budget_is_resolved_once_and_copies_resolve_their_own(
    policy: ContextPolicy, window: int
) -> None:
    budget = policy.budget
    assert policy.budget is budget  # once
    with pytest.raises(dataclasses.FrozenInstanceError):
        budget.high_water = 1  # type: ignore[misc]
    # the properties read it
    assert policy.high_water_tokens == budget.high_water
    assert policy.keep_window == budget.keep_window
    assert policy.summary_target_tokens == budget.summary_target
    # the cache is not a setting: equality and dumps are those of the settings
    fresh = _fresh(policy)
    assert fresh == policy and fresh.model_dump() == policy.model_dump()
    assert _numbers(fresh.budget) == _numbers(budget)
    # a copy for another window, or with other settings, never reuses this budget
    try:
        other = policy.with_window(window)
    except ValueError:
        return  # settings that do not fit that window
    assert other.budget is not budget and other.budget.window == window
    assert _numbers(other.budget) == _numbers(_fresh(other).budget)
    for clone in (copy.copy(policy), copy.deepcopy(policy), policy.model_copy()):
        assert _numbers(clone.budget) == _numbers(budget)


def test_a_model_copy_with_updates_is_resolved_again() -> None:
    policy = ContextPolicy(max_input_tokens=100_000)
    assert policy.high_water_tokens > 1  # resolved and kept
    hard = policy.model_copy(
        update={"high_water": Threshold(tokens=1), "low_water": Threshold(tokens=1)}
    )
    assert hard.high_water_tokens == 1 and hard.low_water_tokens == 1
    assert policy.high_water_tokens > 1


def test_a_policy_without_a_window_has_no_budget() -> None:
    with pytest.raises(ValueError, match="max_input_tokens"):
        _ = ContextPolicy().budget
