"""Names on disk that no workspace path can be (a newline, a control character, a backslash,
bytes that are not UTF-8): every listing shows each as one escaped line of valid Unicode,
marked as not openable, and the names that are paths exactly as they are."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs import Workspace
from ctxfs._workspace._quote import UNUSABLE_NAME, shown_path, usable_path
from ctxfs.integrations._mcp_resources import list_resources
from ctxfs.integrations.deepagents import WorkspaceBackend
from ctxfs.tools import tool_functions

_ODD = [
    b"new\nline.txt",
    b"tab\there.txt",
    b"esc\x1b[31mred.txt",
    b"back\\slash.txt",
    b"\xff\xfe.txt",
]


def _tree(root: Path, names: list[bytes]) -> None:
    folder = root / "d"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plain.txt").write_text("needle plain\n")
    for name in names:
        with open(os.path.join(os.fsencode(folder), name), "wb") as f:
            f.write(b"needle odd\n")


def _outputs(root: Path) -> dict[str, str]:
    tools = {f.name: f for f in tool_functions(Workspace(str(root)))}
    return {
        "ls": tools["ls"](path="/d"),
        "glob": tools["glob"](pattern="**"),
        "files": tools["grep"](pattern="needle"),
        "content": tools["grep"](pattern="needle", output_mode="content"),
        "count": tools["grep"](pattern="needle", output_mode="count"),
    }


def test_each_odd_name_is_one_marked_line_of_valid_unicode(tmp_path: Path) -> None:
    _tree(tmp_path, _ODD)
    for kind, text in _outputs(tmp_path).items():
        text.encode("utf-8")  # no lone surrogate: a request to a model can carry it
        lines = text.splitlines()
        assert len(lines) == len(_ODD) + 1, (kind, text)
        assert any(line.startswith("/d/plain.txt") for line in lines)
        odd = [line for line in lines if not line.startswith("/d/plain.txt")]
        if kind in ("ls", "glob", "files"):
            assert all(line.endswith(UNUSABLE_NAME) for line in odd), (kind, odd)
        assert "/d/\\xff\\xfe.txt" in text and "/d/new\\nline.txt" in text


def test_the_deep_agents_backend_and_the_mcp_resources_carry_no_lone_surrogate(
    tmp_path: Path,
) -> None:
    _tree(tmp_path, _ODD)
    results = tmp_path / "tool_results" / "t"
    results.mkdir(parents=True)
    (results / "a.txt").write_text("saved\n")
    with open(os.path.join(os.fsencode(results), b"\xff.txt"), "wb") as f:
        f.write(b"dropped in by hand\n")
    workspace = Workspace(str(tmp_path))
    backend = WorkspaceBackend(workspace)
    paths = [entry["path"] for entry in backend.ls("/d").entries or []]
    paths += [entry["path"] for entry in backend.glob("**", "/").matches or []]
    paths += [entry["path"] for entry in backend.grep("needle", "/").matches or []]
    assert "/d/\\xff\\xfe.txt" in paths and "/d/plain.txt" in paths
    for path in paths:
        path.encode("utf-8")
        assert "\n" not in path
    entries, _ = list_resources(workspace)
    assert [entry.path for entry in entries] == ["/tool_results/t/a.txt"]


_NAME = st.binary(min_size=1, max_size=24).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=st.lists(_NAME, min_size=1, max_size=6, unique=True))
def test_any_names_list_one_line_each_and_usable_ones_as_they_are(
    tmp_path_factory: object, names: list[bytes]
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "d").mkdir()
        for name in names:
            with open(os.path.join(os.fsencode(root / "d"), name), "wb") as f:
                f.write(b"x\n")
        text = _outputs(root)["ls"]
        text.encode("utf-8")
        lines = text.splitlines()
        assert len(lines) == len(names)
        for name in names:
            path = "/d/" + os.fsdecode(name)
            if usable_path(path):
                # hidden names (a leading dot) are listed by ls too
                assert path in lines or f"{path}/" in lines
            else:
                assert f"{shown_path(path)}{UNUSABLE_NAME}" in lines


def test_shown_path_escapes_only_what_a_path_cannot_hold() -> None:
    assert shown_path("/a/b c.txt") == "/a/b c.txt"
    assert shown_path("/a/café.txt") == "/a/café.txt"
    assert shown_path("/a/x\\y") == "/a/x\\\\y"
    assert shown_path("/a/\x7f\x85") == "/a/\\x7f\\x85"
    assert shown_path("/a/\ud800") == "/a/\\ud800"
    assert not usable_path("/a/\udcff") and usable_path("/a/\u00a0")
