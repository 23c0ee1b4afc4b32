"""The settings' typed constructors and dict forms agree with the models they describe.

Type checkers read the constructor each settings model declares under ``TYPE_CHECKING``
(so that ``ContextPolicy(clearing={"keep": {"results": 4}})`` type-checks) and the
``...Dict`` TypedDicts; pydantic validates against the fields. A field added to one and not
the others would type-check wrongly, so this test compares them.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any, is_typeddict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import ctxfs
from ctxfs._policy import _settings as _policy

SOURCE = ast.parse(Path(inspect.getfile(_policy)).read_text(encoding="utf-8"))
MODELS = {
    name: cls
    for name, cls in vars(_policy).items()
    if isinstance(cls, type)
    and issubclass(cls, BaseModel)
    and cls.__module__ == _policy.__name__
    and not name.startswith("_")
}


def _declared_init(name: str) -> list[str] | None:
    """The keyword-only parameters of the ``__init__`` declared for type checkers, if any."""
    for node in SOURCE.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            for statement in node.body:
                if isinstance(statement, ast.If):
                    for inner in statement.body:
                        if isinstance(inner, ast.FunctionDef) and inner.name == "__init__":
                            assert not inner.args.args[1:], "settings are keyword-only"
                            return [a.arg for a in inner.args.kwonlyargs]
    return None


def _nested(cls: type[BaseModel]) -> bool:
    """Whether a field holds another settings model or a collection (what a dict or a set
    literal would not match in the fields' own types)."""
    for field in cls.model_fields.values():
        text = str(field.annotation)
        if any(other.__name__ in text for other in MODELS.values()) or "frozenset" in text:
            return True
        if "dict[" in text:
            return True
    return False


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_declared_constructor_lists_exactly_the_fields(name: str) -> None:
    declared = _declared_init(name)
    cls = MODELS[name]
    if declared is None:
        assert not _nested(cls), f"{name} needs a typed __init__ that accepts dicts"
        return
    assert declared == list(cls.model_fields)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_has_a_dict_form_with_the_same_keys(name: str) -> None:
    form = getattr(ctxfs, f"{name}Dict")
    assert is_typeddict(form)
    assert not form.__required_keys__
    assert list(form.__annotations__) == list(MODELS[name].model_fields)


def test_a_policy_written_as_nested_dicts_equals_one_written_with_models() -> None:
    from_dicts = ctxfs.ContextPolicy(
        max_input_tokens=64_000,
        tool_results={"threshold": {"tokens": 2_000}, "exempt_tools": {"grep"}},
        tool_inputs={"args": {"write_file": ["content"]}},
        clearing={"keep": {"results": 4}, "clear_at_least": {"fraction": 0.1}},
        summarization={"trigger": {"messages": 40}, "keep": {"messages": 6}},
    )
    from_models = ctxfs.ContextPolicy(
        max_input_tokens=64_000,
        tool_results=ctxfs.ToolResultOffload(
            threshold=ctxfs.Threshold(tokens=2_000), exempt_tools=frozenset({"grep"})
        ),
        tool_inputs=ctxfs.ToolInputOffload(args={"write_file": ("content",)}),
        clearing=ctxfs.ToolResultClearing(
            keep=ctxfs.KeepToolResults(results=4),
            clear_at_least=ctxfs.Threshold(fraction=0.1),
        ),
        summarization=ctxfs.Summarization(
            trigger=ctxfs.SummaryTrigger(messages=40), keep=ctxfs.KeepRecent(messages=6)
        ),
    )
    assert from_dicts == from_models


def _resolved(policy: ctxfs.ContextPolicy) -> tuple[int, ...]:
    return (
        policy.result_threshold_tokens,
        policy.request_limit_tokens,
        policy.high_water_tokens,
        policy.tool_output_tokens,
    )


@given(
    window=st.integers(min_value=1_000, max_value=400_000),
    threshold=st.one_of(st.none(), st.integers(min_value=1, max_value=1_000)),
    keep=st.one_of(st.none(), st.integers(min_value=0, max_value=12)),
)
def test_a_dumped_policy_loads_back_as_the_same_policy(
    window: int, threshold: int | None, keep: int | None
) -> None:
    chosen: dict[str, Any] = {"max_input_tokens": window}
    if threshold is not None:
        chosen["tool_results"] = {"threshold": {"tokens": threshold}}
    if keep is not None:
        chosen["clearing"] = {"keep": {"results": keep}}
    policy = ctxfs.ContextPolicy.model_validate(chosen)
    for loaded in (
        ctxfs.ContextPolicy.model_validate(policy.model_dump()),
        ctxfs.ContextPolicy.model_validate_json(policy.model_dump_json()),
    ):
        assert loaded == policy
        assert _resolved(loaded) == _resolved(policy)  # defaults still scale with the window
    assert policy.model_dump() == chosen  # a dump holds what was chosen
