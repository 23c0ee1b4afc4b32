"""Invariants of the MCP tools, as properties: every answer fits the budget, nothing an answer
leaves out is lost (a saved output reads back byte-exact), edits are all or nothing, and
``tail`` is the end of the file."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ctxfs import TiktokenCounter, Workspace
from ctxfs.integrations.mcp import McpToolbox

_names = itertools.count()
_COUNTER = TiktokenCounter()

_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"),
    max_size=300,
)
_word = st.sampled_from(["alpha", "beta", "gamma", "x", "é", "  ", "\t"])
_words = st.lists(_word, max_size=40).map(" ".join)  # what the edits and greps look for
_lines = st.lists(st.one_of(_line, _words), min_size=0, max_size=200)
_budget = st.integers(min_value=100, max_value=2_000)


def _workspace() -> Workspace:
    return Workspace(f"memory://mcp-prop-{next(_names)}")


def _calls(path: str) -> st.SearchStrategy[tuple[str, dict[str, object]]]:
    edit = st.fixed_dictionaries({"oldText": _word, "newText": _line, "replaceAll": st.just(True)})
    return st.one_of(
        st.builds(lambda o: ("read_text_file", {"path": path, "offset": o}), st.integers(0, 50)),
        st.builds(lambda n: ("read_text_file", {"path": path, "tail": n}), st.integers(1, 300)),
        st.builds(lambda n: ("read_text_file", {"path": path, "head": n}), st.integers(1, 300)),
        st.builds(
            lambda w, mode: ("grep", {"pattern": w, "fixed_strings": True, "output_mode": mode}),
            _word,
            st.sampled_from(["content", "files_with_matches", "count"]),
        ),
        st.just(("read_multiple_files", {"paths": [path, path]})),
        st.just(("list_directory", {"path": "/"})),
        st.just(("search_files", {"pattern": "**"})),
        st.builds(
            lambda edits, dry: ("edit_file", {"path": path, "edits": edits, "dryRun": dry}),
            st.lists(edit, min_size=1, max_size=3),
            st.booleans(),
        ),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_lines, budget=_budget, data=st.data())
def test_every_answer_fits_the_budget_and_a_saved_output_reads_back(
    lines: list[str], budget: int, data: st.DataObject
) -> None:
    workspace = _workspace()
    workspace.write_text("/f.txt", "\n".join(lines))
    box = McpToolbox(workspace, max_output_tokens=budget, token_counter=_COUNTER)
    name, arguments = data.draw(_calls("/f.txt"))
    before = workspace.read_text("/f.txt")
    answer = box.call(name, arguments)
    assert _COUNTER.count_text(answer.text) <= budget
    event("saved" if answer.saved_path else "error" if answer.is_error else "answered")
    if answer.saved_path is not None:
        # the same call with room for everything gives exactly what was saved
        workspace.write_text("/f.txt", before)
        whole = McpToolbox(workspace, max_output_tokens=10_000_000, token_counter=_COUNTER)
        full = whole.call(name, arguments)
        assert full.saved_path is None and not full.is_error
        assert workspace.read_text(answer.saved_path) == full.text
        assert answer.text.startswith("[ctxfs: output saved]")


@settings(max_examples=80, deadline=None)
@given(
    text=st.text(alphabet="abx\n ", max_size=200),
    edits=st.lists(
        st.tuples(st.text(alphabet="abx\n ", max_size=4), st.text(alphabet="ABx", max_size=3)),
        min_size=1,
        max_size=4,
    ),
    replace_all=st.booleans(),
)
def test_edits_are_all_or_nothing(
    text: str, edits: list[tuple[str, str]], replace_all: bool
) -> None:
    workspace = _workspace()
    workspace.write_text("/f.txt", text)
    box = McpToolbox(workspace, token_counter=_COUNTER)
    operations = [{"oldText": o, "newText": n, "replaceAll": replace_all} for o, n in edits]
    answer = box.call("edit_file", {"path": "/f.txt", "edits": operations})
    # the oracle: each edit applies to the text the edits before it left, or the call fails
    expected: str | None = text
    for old, new in edits:
        assert expected is not None
        count = expected.count(old) if old else 0
        if old == new or count == 0 or (count > 1 and not replace_all):
            expected = None
            break
        expected = expected.replace(old, new) if replace_all else expected.replace(old, new, 1)
    if expected is None:
        assert answer.is_error and answer.text.endswith("; nothing was changed")
        assert workspace.read_text("/f.txt") == text
    else:
        assert not answer.is_error, answer.text
        assert workspace.read_text("/f.txt") == expected


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.text(alphabet="ab c", max_size=20), max_size=60), tail=st.integers(1, 80))
def test_tail_is_the_end_of_the_file(lines: list[str], tail: int) -> None:
    workspace = _workspace()
    workspace.write_text("/f.txt", "".join(line + "\n" for line in lines))
    box = McpToolbox(workspace, token_counter=_COUNTER)
    answer = box.call("read_text_file", {"path": "/f.txt", "tail": tail})
    if not lines:
        assert answer.text == "(file /f.txt is empty: 0 lines)"
        return
    shown = [row.split("\t", 1)[1] for row in answer.text.split("\n")]
    assert shown == lines[-tail:]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.lists(_word, min_size=3, max_size=30).map(" ".join), min_size=30),
    budget=st.integers(min_value=100, max_value=600),
    old=_word,
    new=_line,
    dry_run=st.booleans(),
)
def test_an_edit_diff_over_the_budget_is_saved_byte_exact(
    lines: list[str], budget: int, old: str, new: str, dry_run: bool
) -> None:
    workspace = _workspace()
    text = "\n".join(lines)
    workspace.write_text("/f.txt", text)
    arguments = {
        "path": "/f.txt",
        "edits": [{"oldText": old, "newText": new, "replaceAll": True}],
        "dryRun": dry_run,
    }
    answer = McpToolbox(workspace, max_output_tokens=budget, token_counter=_COUNTER).call(
        "edit_file", arguments
    )
    assert _COUNTER.count_text(answer.text) <= budget
    event("saved" if answer.saved_path else "error" if answer.is_error else "answered")
    edited = workspace.read_text("/f.txt")
    workspace.write_text("/f.txt", text)
    whole = McpToolbox(workspace, max_output_tokens=10_000_000, token_counter=_COUNTER)
    full = whole.call("edit_file", arguments)
    assert full.is_error == answer.is_error
    if answer.saved_path is not None:
        assert workspace.read_text(answer.saved_path) == full.text
    elif not answer.is_error:
        assert answer.text == full.text
    assert edited == (text if dry_run or answer.is_error else text.replace(old, new))


_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_json_value_for_any_argument_is_an_answer_never_a_crash(data: st.DataObject) -> None:
    """A client may send any JSON for any argument (null for an optional integer included):
    the answer is text, an error naming the tool when the value is wrong, never an exception
    (the MCP client would see an internal error)."""
    box = McpToolbox(_workspace())
    box.workspace.write_text("/f.txt", "a\nb\n")
    for tool in box.tools:
        for field in tool.function.args_schema.model_fields:
            arguments: dict[str, object] = {"path": "/f.txt"} if field != "path" else {}
            arguments[field] = data.draw(st.none() | _json_value, label=f"{tool.name}.{field}")
            answer = box.call(tool.name, arguments)
            assert isinstance(answer.text, str)
            if answer.is_error:
                assert answer.text.startswith("Error:"), answer.text


def test_null_for_an_optional_line_count_is_not_given() -> None:
    """Regression: ``{"head": null}`` raised TypeError out of validation (an internal error)."""
    box = McpToolbox(_workspace())
    box.workspace.write_text("/f.txt", "a\nb\n")
    for name in ("head", "tail", "limit"):
        answer = box.call("read_text_file", {"path": "/f.txt", name: None})
        assert not answer.is_error, answer.text
        assert "a" in answer.text
    zero = box.call("read_text_file", {"path": "/f.txt", "head": 0})
    assert zero.is_error
    assert zero.text.startswith(
        "Error: invalid arguments for read_text_file: head: Input should be greater than or "
        "equal to 1 (got 0)."
    ), zero.text
