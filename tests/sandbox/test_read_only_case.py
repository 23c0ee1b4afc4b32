"""Read-only areas hold on case-insensitive stores too (macOS and Windows disks by default).

The store here folds every path to lower case before it reaches the storage underneath, as
such a disk does; on it, ``/TOOL_RESULTS/t/c1.txt`` is the SDK's ``/tool_results/t/c1.txt``.
Read-only checks compare folded paths on every store, so the write is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import BinaryIO

import pytest

from ctxfs import FileInfo, ReadOnlyPathError, Workspace
from ctxfs._layout import SDK_AREAS
from ctxfs.backends import Store
from ctxfs.sandbox import case_key
from ctxfs.tools import tool_functions

WorkspaceFactory = Callable[..., Workspace]


class CaseFoldingStore:
    """A store that sees ``/A`` and ``/a`` as one path, as a case-insensitive disk does."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    @property
    def url(self) -> str:
        return self.inner.url

    def local_path(self, path: str) -> str | None:
        return self.inner.local_path(path.lower())

    def real_path(self, path: str) -> str:
        return self.inner.real_path(path.lower())

    def info(self, path: str) -> FileInfo:
        return self.inner.info(path.lower())

    def ls(self, path: str) -> list[FileInfo]:
        return self.inner.ls(path.lower())

    def walk(self, path: str) -> Iterator[FileInfo]:
        return self.inner.walk(path.lower())

    def open_read(self, path: str) -> AbstractContextManager[BinaryIO]:
        return self.inner.open_read(path.lower())

    def read_bytes(self, path: str) -> bytes:
        return self.inner.read_bytes(path.lower())

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        return self.inner.fetch(FileInfo(f.path.lower(), f.type, f.size) for f in files)

    def write(self, path: str, data: bytes, *, create_only: bool = False) -> None:
        self.inner.write(path.lower(), data, create_only=create_only)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        self.inner.remove(path.lower(), recursive=recursive)


@pytest.mark.parametrize(
    "spelling",
    ["/TOOL_RESULTS/t/c1.txt", "/Tool_Results/t/c1.txt", "/tool_reſults/t/c1.txt"],
)
def test_a_differently_cased_path_cannot_overwrite_an_offloaded_result(
    make_workspace: WorkspaceFactory, spelling: str
) -> None:
    sdk = Workspace(CaseFoldingStore(make_workspace().store))
    sdk.write_text("/tool_results/t/c1.txt", "the full result", create_only=True)
    agent = sdk.view(read_only=SDK_AREAS)
    with pytest.raises(ReadOnlyPathError) as caught:
        agent.write_text(spelling, "overwritten")
    assert str(caught.value) == (
        f"{spelling} is in the read-only area /tool_results/ (written by ctxfs itself); "
        "write your own files elsewhere, e.g. /notes/"
    )
    write = {f.name: f for f in tool_functions(sdk)}["write_file"]
    assert write(file_path=spelling, content="overwritten").startswith(
        f"Error: {spelling} is in the read-only area /tool_results/"
    )
    with pytest.raises(ReadOnlyPathError):
        agent.rm("/TOOL_RESULTS", recursive=True)
    with pytest.raises(ReadOnlyPathError):
        agent.rm("/tool_results/t", recursive=True)
    assert sdk.read_text("/tool_results/t/c1.txt") == "the full result"


def test_case_key_folds_what_case_insensitive_disks_fold() -> None:
    assert case_key("/TOOL_INPUTS") == case_key("/tool_ınputs") == "/tool_inputs"
    assert case_key("/Transcripts/é") == case_key("/transcripts/e\u0301")
    assert case_key("/notes") != case_key("/tool_results")


def test_own_files_with_other_names_stay_writable(workspace: Workspace) -> None:
    agent = workspace.view(read_only=SDK_AREAS)
    assert agent.write_text("/tool_results_copy/x.txt", "x").path == "/tool_results_copy/x.txt"
    assert agent.write_text("/Notes/Tool_Results.md", "x").path == "/Notes/Tool_Results.md"


@pytest.mark.parametrize("area", sorted(SDK_AREAS))
@pytest.mark.parametrize(
    "disguise",
    [
        lambda a: a + "\u200b",  # a zero-width space after the name
        lambda a: (
            a.replace("o", "\u043e").replace("e", "\u0435").replace("a", "\u0430")
        ),  # Cyrillic
        lambda a: a[:2] + "\u0301" + a[2:],  # a combining accent
        lambda a: a.replace("s", "\ua731"),  # small capital S
    ],
    ids=["zero-width", "cyrillic", "accent", "small-capital"],
)
def test_a_folder_that_only_looks_like_a_read_only_area_is_refused_too(
    area: str, disguise: Callable[[str], str]
) -> None:
    """A listing shows ``/tооl_results`` (Cyrillic ``о``) as a reader sees ``/tool_results``:
    a file planted there would pass for ctxfs's own, so the name is compared as it reads."""
    name = disguise(area.strip("/"))
    assert name != area.strip("/")
    tools = {f.name: f for f in tool_functions(Workspace("memory://lookalike-areas"))}
    answer = tools["write_file"](file_path=f"/{name}/planted.txt", content="obey")
    assert answer.startswith("Error:") and "read-only area" in answer
    assert case_key(f"/{name}") == case_key(area.rstrip("/"))


def test_other_scripts_elsewhere_stay_writable() -> None:
    tools = {f.name: f for f in tool_functions(Workspace("memory://other-scripts"))}
    for path in ("/отчёт/итог.md", "/σημειώσεις.md", "/résumé/cv.md", "/tool_results_mine/x"):
        assert tools["write_file"](file_path=path, content="ok").startswith("Created"), path
