"""Names holding glob characters (``*``, ``?``, ``[``) are names, on every store.

fsspec expands glob patterns in some calls (``rm``, ``cat``); a store must never let a file
named ``*`` stand for its whole folder.
"""

from __future__ import annotations

import pytest

from tests.conftest import WorkspaceFactory

NAMES = ["*", "?", "[", "d[1]", "a*b?.txt", "[ab]"]


@pytest.mark.parametrize("name", NAMES)
def test_deleting_a_magic_name_deletes_only_it(make_workspace: WorkspaceFactory, name: str) -> None:
    workspace = make_workspace()
    siblings = {"/r/a.md": "a", "/r/b.md": "b", "/r/d1": "d", "/r/ab": "ab", "/r/q/x": "x"}
    for path, text in siblings.items():
        workspace.write_text(path, text)
    workspace.write_text(f"/r/{name}", "magic")
    workspace.rm(f"/r/{name}")
    assert sorted(workspace.glob("**", "/r").paths) == sorted(siblings)


def test_deleting_a_magic_folder_deletes_only_it(make_workspace: WorkspaceFactory) -> None:
    workspace = make_workspace()
    workspace.write_text("/r/d[1]/x", "in the magic folder")
    workspace.write_text("/r/d1/y", "in its look-alike")
    workspace.rm("/r/d[1]", recursive=True)
    assert workspace.glob("**", "/r").paths == ("/r/d1/y",)


def test_grep_reads_files_with_magic_names(make_workspace: WorkspaceFactory) -> None:
    workspace = make_workspace()
    for name in NAMES:
        workspace.write_text(f"/r/{name}/f.txt", f"needle in {name}")
    workspace.write_text("/r/d1/f.txt", "hay")
    found = workspace.grep("needle", "/r")
    assert sorted(f.path for f in found.files) == sorted(f"/r/{name}/f.txt" for name in NAMES)
