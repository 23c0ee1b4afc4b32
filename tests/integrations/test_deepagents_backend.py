"""Deep Agents' backend expectations, checked on WorkspaceBackend over memory, local disk and S3.

The expectations are the ones Deep Agents holds its own backends to (its protocol's docstrings
and its backend test suite: CRUD, pagination fields, degenerate read windows, the shared glob
contract, literal grep with include globs and a match cap, recursive delete, batched upload
and download with standard error codes, the async twins), plus what ctxfs adds: confinement,
read-only areas and byte-exact storage. The glob and grep properties compare against Deep
Agents' own in-memory implementation as the oracle.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from deepagents.backends.protocol import BackendProtocol, DeleteResult, ReadResult
from deepagents.backends.utils import (
    InvalidGlobPatternError,
    _glob_search_files,
    grep_matches_from_files,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ctxfs import Workspace
from ctxfs.integrations.deepagents import WorkspaceBackend
from ctxfs.sandbox import Limits
from tests.conftest import WorkspaceFactory


@pytest.fixture
def backend(make_workspace: WorkspaceFactory) -> WorkspaceBackend:
    return WorkspaceBackend(make_workspace())


def _paths(infos: list[Any] | None) -> set[str]:
    return {info["path"] for info in infos or []}


def _write_all(backend: WorkspaceBackend, files: dict[str, str]) -> None:
    for path, content in files.items():
        result = backend.write(path, content)
        assert result.error is None, result.error


# -- the protocol ---------------------------------------------------------------------------


def test_it_is_a_deep_agents_backend_with_delete(backend: WorkspaceBackend) -> None:
    assert isinstance(backend, BackendProtocol)
    # Deep Agents offers its delete tool only when the backend overrides delete.
    assert type(backend).delete is not BackendProtocol.delete


def test_write_read_edit_list_search(backend: WorkspaceBackend) -> None:
    written = backend.write("/docs/readme.md", "hello store")
    assert written.error is None and written.path == "/docs/readme.md"

    read = backend.read("/docs/readme.md")
    assert read.error is None and read.file_data == {"content": "hello store", "encoding": "utf-8"}

    edited = backend.edit("/docs/readme.md", "hello", "hi")
    assert edited.error is None and edited.occurrences == 1 and edited.path == "/docs/readme.md"

    listing = backend.ls("/docs/")
    assert listing.error is None
    assert listing.entries == [{"path": "/docs/readme.md", "is_dir": False, "size": 8}]

    grep = backend.grep("hi", path="/")
    assert grep.matches == [{"path": "/docs/readme.md", "line": 1, "text": "hi store"}]

    assert _paths(backend.glob("*.md", path="/").matches) == {"/docs/readme.md"}
    assert _paths(backend.glob("**/*.md", path="/").matches) == {"/docs/readme.md"}


def test_write_overwrites(backend: WorkspaceBackend) -> None:
    assert backend.write("/charmander.txt", "Hello world").error is None
    assert backend.write("/charmander.txt", "New content").error is None
    read = backend.read("/charmander.txt")
    assert read.file_data is not None and read.file_data["content"] == "New content"


def test_read_window_fields(backend: WorkspaceBackend) -> None:
    backend.write("/notes.txt", "one\ntwo\nthree\nfour\nfive")
    partial = backend.read("/notes.txt", offset=1, limit=2)
    assert partial.file_data is not None and partial.file_data["content"] == "two\nthree\n"
    assert (partial.total_lines, partial.start_line, partial.end_line) == (5, 2, 3)
    assert partial.next_offset == 3
    final = backend.read("/notes.txt", offset=3, limit=10)
    assert (final.total_lines, final.start_line, final.end_line) == (5, 4, 5)
    assert final.next_offset is None


def test_read_past_the_end_gives_the_length(backend: WorkspaceBackend) -> None:
    backend.write("/notes.txt", "one\ntwo\nthree\nfour\nfive")
    result = backend.read("/notes.txt", offset=99, limit=10)
    assert result.error == "Line offset 99 exceeds file length (5 lines)"
    assert result.file_data is None and result.total_lines is None


@pytest.mark.parametrize(("offset", "limit"), [(0, 0), (0, -3), (-1, 0)])
def test_read_of_no_lines_is_empty_not_an_error(
    backend: WorkspaceBackend, offset: int, limit: int
) -> None:
    backend.write("/notes.txt", "one\ntwo\nthree")
    result = backend.read("/notes.txt", offset=offset, limit=limit)
    assert result.error is None and result.no_lines_requested
    assert result.file_data is not None and result.file_data["content"] == ""
    assert result.start_line is None


def test_negative_offset_reads_from_the_first_line(backend: WorkspaceBackend) -> None:
    backend.write("/notes.txt", "one\ntwo\nthree")
    result = backend.read("/notes.txt", offset=-1, limit=2)
    assert (result.error, result.start_line, result.end_line) == (None, 1, 2)


def test_empty_file_reads_empty_without_window(backend: WorkspaceBackend) -> None:
    backend.write("/empty.txt", "")
    result = backend.read("/empty.txt")
    assert result.error is None and result.file_data is not None
    assert result.file_data["content"] == ""
    assert (result.total_lines, result.start_line, result.next_offset) == (None, None, None)


@pytest.mark.parametrize("content", ["foo\nbar\n", "foo\nbar"])
def test_read_keeps_the_trailing_newline_state(backend: WorkspaceBackend, content: str) -> None:
    backend.write("/f.txt", content)
    result = backend.read("/f.txt")
    assert result.file_data is not None and result.file_data["content"] == content


def test_read_errors(backend: WorkspaceBackend) -> None:
    assert backend.read("/missing.txt").error == "File '/missing.txt' not found"
    backend.write("/dir/f.txt", "x")
    assert backend.read("/dir").error == "/dir is a directory, not a file; list it with ls"
    backend.upload_files([("/latin1.txt", "café".encode("latin-1"))])
    error = backend.read("/latin1.txt").error
    assert error is not None and error.startswith("/latin1.txt is not valid UTF-8 text")


def test_media_is_read_whole_as_base64(backend: WorkspaceBackend) -> None:
    data = bytes(range(256)) * 3
    backend.upload_files([("/img/pixel.png", data)])
    result = backend.read("/img/pixel.png", offset=5, limit=1)
    assert result.error is None and result.file_data is not None
    assert result.file_data["encoding"] == "base64"
    assert base64.standard_b64decode(result.file_data["content"]) == data


@given(
    size=st.integers(0, 300),
    cap=st.integers(0, 200),
    name=st.sampled_from(["clip.mp4", "photo.png", "voice.mp3", "report.pdf"]),
)
@settings(max_examples=40, deadline=None)
def test_media_over_the_cap_is_refused_without_being_read(size: int, cap: int, name: str) -> None:
    workspace = Workspace("memory://media-cap")
    workspace.write_bytes(f"/m/{name}", b"\x00" * size)
    backend = WorkspaceBackend(workspace, max_media_bytes=cap)
    reads: list[str] = []
    original = backend.workspace.read_bytes

    def spy(path: str) -> bytes:
        reads.append(path)
        return original(path)

    backend.workspace.read_bytes = spy  # type: ignore[method-assign]
    result = backend.read(f"/m/{name}")
    if size <= cap:
        assert result.error is None and result.file_data is not None
        assert base64.standard_b64decode(result.file_data["content"]) == b"\x00" * size
    else:
        assert result.file_data is None and reads == []  # never loaded into memory
        assert result.error is not None
        assert result.error.startswith(f"/m/{name} is ") and "limit of a media file" in result.error


def test_the_default_media_cap_refuses_a_large_video() -> None:
    from ctxfs.integrations.deepagents import DEFAULT_MAX_MEDIA_BYTES

    workspace = Workspace("memory://big-video")
    workspace.write_bytes("/v/run.mp4", b"\x00" * (DEFAULT_MAX_MEDIA_BYTES + 1))
    error = WorkspaceBackend(workspace).read("/v/run.mp4").error
    assert error == (
        "/v/run.mp4 is 5.0 MiB, over the 5.0 MiB limit of a media file read_file returns to "
        "the model; use a smaller file (e.g. a frame or an excerpt)"
    )
    with pytest.raises(ValueError, match="max_media_bytes"):
        WorkspaceBackend(workspace, max_media_bytes=-1)


def test_files_are_stored_byte_exact(backend: WorkspaceBackend) -> None:
    backend.write("/crlf.txt", "a\r\nb\rc\n")
    (download,) = backend.download_files(["/crlf.txt"])
    assert download.content == b"a\r\nb\rc\n"
    # The window handed to the model has LF endings, as on Deep Agents' own backends; a lone
    # CR stays inside its line, as grep and ctxfs's read_file number the lines.
    read = backend.read("/crlf.txt")
    assert read.file_data is not None and read.file_data["content"] == "a\nb\rc\n"
    assert read.total_lines == 2


# -- ls -------------------------------------------------------------------------------------


def test_ls_lists_direct_children_folders_with_a_slash(backend: WorkspaceBackend) -> None:
    _write_all(
        backend,
        {
            "/src/main.py": "main code",
            "/src/utils/helper.py": "helper code",
            "/src/utils/common.py": "common code",
            "/docs/readme.md": "readme",
            "/docs/api/reference.md": "api reference",
            "/config.json": "config",
        },
    )
    root = backend.ls("/").entries
    assert root == [
        {"path": "/config.json", "is_dir": False, "size": 6},
        {"path": "/docs/", "is_dir": True, "size": 0},
        {"path": "/src/", "is_dir": True, "size": 0},
    ]
    assert _paths(backend.ls("/src/").entries) == {"/src/main.py", "/src/utils/"}
    assert _paths(backend.ls("/src/utils").entries) == {
        "/src/utils/helper.py",
        "/src/utils/common.py",
    }
    assert backend.ls("/src").entries == backend.ls("/src/").entries


def test_ls_errors_use_deep_agents_codes(backend: WorkspaceBackend) -> None:
    assert backend.ls("/").entries == []  # an empty workspace
    missing = backend.ls("/missing/")
    assert (missing.entries, missing.error) == (None, "Path '/missing/': path_not_found")
    backend.write("/file.txt", "content")
    not_dir = backend.ls("/file.txt")
    assert (not_dir.entries, not_dir.error) == (None, "Path '/file.txt': not_a_directory")


# -- glob -----------------------------------------------------------------------------------

TREE = {
    "/a.py": "a",
    "/sub/b.py": "b",
    "/sub/nested/c.py": "c",
    "/readme.md": "docs",
    "/.hidden.py": "h",
    "/.hidden/x.py": "x",
    "/.github/workflows/ci.yml": "name: ci",
}
BARE_PY = {"/a.py", "/sub/b.py", "/sub/nested/c.py", "/.hidden/x.py"}
WALKED_PY = {"/a.py", "/sub/b.py", "/sub/nested/c.py"}
ALL_VISIBLE_NAMES = BARE_PY | {"/readme.md", "/.github/workflows/ci.yml"}

# Deep Agents' shared glob contract, as a table: (pattern, search root, matches).
GLOB_CONTRACT: list[tuple[str, str, set[str]]] = [
    ("*.py", "/", BARE_PY),  # a bare pattern is a file name at any depth, even in .hidden/
    ("**/*.py", "/", WALKED_PY),  # ** does not enter hidden folders
    ("*.md", "/", {"/readme.md"}),
    ("sub/*.py", "/", {"/sub/b.py"}),
    ("sub/**/*.py", "/", {"/sub/b.py", "/sub/nested/c.py"}),
    ("/*.py", "/", {"/a.py"}),  # a leading / anchors
    ("a.py/**", "/", set()),
    ("*.py", "/sub", {"/sub/b.py", "/sub/nested/c.py"}),
    ("*.yml", "/", {"/.github/workflows/ci.yml"}),
    ("**/*.yml", "/", set()),
    (".github/**/*.yml", "/", {"/.github/workflows/ci.yml"}),
    (".hidden.py", "/", {"/.hidden.py"}),
    (".*.py", "/", {"/.hidden.py"}),
    ("*", "/", ALL_VISIBLE_NAMES),
    ("*.{py,md}", "/", BARE_PY | {"/readme.md"}),
    ("*.{yml,yaml}", "/", {"/.github/workflows/ci.yml"}),
    ("?.py", "/", BARE_PY),
    ("[ab].py", "/", {"/a.py", "/sub/b.py"}),
    ("[!a].py", "/", {"/sub/b.py", "/sub/nested/c.py", "/.hidden/x.py"}),
    ("[^a].py", "/", {"/sub/b.py", "/sub/nested/c.py", "/.hidden/x.py"}),
    ("sub/", "/", set()),  # a trailing / names folders: no file matches
    ("*.py/", "/", set()),
]


def test_glob_follows_the_shared_contract(backend: WorkspaceBackend) -> None:
    _write_all(backend, TREE)
    wrong = {}
    for pattern, root, expected in GLOB_CONTRACT:
        result = backend.glob(pattern, path=root)
        assert result.error is None, (pattern, result.error)
        assert all(info["is_dir"] is False for info in result.matches or [])
        if _paths(result.matches) != expected:
            wrong[(pattern, root)] = _paths(result.matches)
    assert wrong == {}


def test_glob_refuses_traversal_and_reports_caps(make_workspace: WorkspaceFactory) -> None:
    backend = WorkspaceBackend(make_workspace(limits=Limits(max_glob_results=2)))
    _write_all(backend, {"/a.py": "", "/b.py": "", "/c.py": ""})
    refused = backend.glob("../*.py")
    assert refused.matches is None
    assert refused.error == "Path traversal not allowed in glob pattern '../*.py'"
    capped = backend.glob("*.py")
    assert capped.truncated and capped.truncation_reason == "budget"
    assert len(capped.matches or []) == 2
    assert backend.glob("*.py", path="/missing").matches == []


# -- grep -----------------------------------------------------------------------------------


def test_grep_is_literal(backend: WorkspaceBackend) -> None:
    _write_all(
        backend,
        {
            "/code.py": "def __init__(self, arg):\n    pass",
            "/types.py": "def func(x: str | int) -> None:\n    return x",
            "/regex.py": "pattern = r'[a-z]+'\nchars = '(.*)'",
            "/config.json": '{"api.key": "value", "url": "https://example.com"}',
            "/math.py": "result = x * y + z\nformula = a^2 + b^2",
            "/price.txt": "costs $19.99 for user@example",
        },
    )
    cases = {
        "def __init__(": {"/code.py"},
        "str | int": {"/types.py"},
        "[a-z]": {"/regex.py"},
        "(.*)": {"/regex.py"},
        "api.key": {"/config.json"},
        "x * y": {"/math.py"},
        "a^2": {"/math.py"},
        "$19.99": {"/price.txt"},
        "user@example": {"/price.txt"},
    }
    found = {pattern: _paths(backend.grep(pattern).matches) for pattern in cases}
    assert found == cases


def test_grep_include_glob_is_relative_to_the_search_root(backend: WorkspaceBackend) -> None:
    _write_all(
        backend,
        {"/src/app/main.py": "import os\n", "/top.py": "import sys\n", "/README.md": "import x\n"},
    )

    def files(glob: str, path: str = "/") -> list[str]:
        result = backend.grep("import", path=path, glob=glob)
        assert result.error is None
        return sorted(_paths(result.matches))

    assert files("src/**/*.py") == ["/src/app/main.py"]
    assert files("**/*.py") == ["/src/app/main.py", "/top.py"]
    assert files("*.py") == ["/src/app/main.py", "/top.py"]
    assert files("*.md") == ["/README.md"]
    assert files("app/*.py", path="/src") == ["/src/app/main.py"]
    refused = backend.grep("import", glob="../*.py")
    assert refused.error == "Path traversal not allowed in glob pattern '../*.py'"


def test_grep_one_file_and_line_numbers(backend: WorkspaceBackend) -> None:
    _write_all(backend, {"/a.txt": "x\nneedle one\ny\nneedle two\n", "/b.txt": "needle"})
    result = backend.grep("needle", path="/a.txt")
    assert result.matches == [
        {"path": "/a.txt", "line": 2, "text": "needle one"},
        {"path": "/a.txt", "line": 4, "text": "needle two"},
    ]
    assert backend.grep("needle", path="/missing").matches == []


def test_grep_max_count_is_a_total_cap(backend: WorkspaceBackend) -> None:
    _write_all(backend, {"/a.txt": "hit\nhit\nhit\n", "/b.txt": "hit\nhit\n"})
    assert len(backend.grep("hit").matches or []) == 5
    capped = backend.grep("hit", max_count=3)
    assert len(capped.matches or []) == 3 and capped.truncated
    exact = backend.grep("hit", max_count=5)
    assert len(exact.matches or []) == 5 and not exact.truncated


def test_grep_searches_hidden_files_when_the_glob_names_them(backend: WorkspaceBackend) -> None:
    _write_all(backend, {"/.github/ci.yml": "on: push", "/app.yml": "on: push"})
    assert _paths(backend.grep("on: push").matches) == {"/app.yml"}
    assert _paths(backend.grep("on: push", glob=".github/*.yml").matches) == {"/.github/ci.yml"}


# -- edit and delete ------------------------------------------------------------------------


def test_edit_errors(backend: WorkspaceBackend) -> None:
    backend.write("/f.txt", "a b a")
    assert backend.edit("/missing.txt", "a", "b").error == "Error: File '/missing.txt' not found"
    ambiguous = backend.edit("/f.txt", "a", "c")
    assert ambiguous.error is not None and "occurs 2 times" in ambiguous.error
    absent = backend.edit("/f.txt", "zzz", "c")
    assert absent.error is not None and "was not found in /f.txt" in absent.error
    assert backend.edit("/f.txt", "a", "c", replace_all=True).occurrences == 2
    (download,) = backend.download_files(["/f.txt"])
    assert download.content == b"c b c"


def test_edit_of_a_crlf_file_with_what_read_showed(backend: WorkspaceBackend) -> None:
    backend.upload_files([("/win.txt", b"one\r\ntwo\r\nthree\r\n")])
    shown = backend.read("/win.txt")
    assert shown.file_data is not None and shown.file_data["content"] == "one\ntwo\nthree\n"
    edited = backend.edit("/win.txt", "one\ntwo\n", "1\n2\n")
    assert (edited.error, edited.occurrences) == (None, 1)
    (download,) = backend.download_files(["/win.txt"])
    assert download.content == b"1\r\n2\r\nthree\r\n"  # the file keeps its line endings
    absent = backend.edit("/win.txt", "four\n", "4\n")
    assert absent.error is not None and "was not found in /win.txt" in absent.error


def test_delete_a_file_then_it_is_gone(backend: WorkspaceBackend) -> None:
    backend.write("/docs/readme.md", "hello store")
    result = backend.delete("/docs/readme.md")
    assert result == DeleteResult(path="/docs/readme.md")
    assert backend.read("/docs/readme.md").error == "File '/docs/readme.md' not found"
    missing = backend.delete("/docs/readme.md")
    assert missing.path is None and missing.error == "Error: '/docs/readme.md' not found"


def test_delete_a_folder_recursively_keeps_siblings(backend: WorkspaceBackend) -> None:
    _write_all(backend, {"/work/a.txt": "a", "/work/sub/b.txt": "b", "/keep.txt": "k"})
    assert backend.delete("/work") == DeleteResult(path="/work")
    assert backend.read("/work/a.txt").error is not None
    assert backend.read("/work/sub/b.txt").error is not None
    assert backend.read("/keep.txt").error is None


def test_delete_of_the_root_is_refused(backend: WorkspaceBackend) -> None:
    backend.write("/keep.txt", "k")
    refused = backend.delete("/")
    assert (refused.path, refused.error) == (None, "Error: / is the workspace root, not a file")
    assert backend.read("/keep.txt").error is None


def test_delete_takes_wildcards_literally(backend: WorkspaceBackend) -> None:
    _write_all(backend, {"/a.md": "a", "/b.md": "b"})
    assert backend.delete("*").error == "Error: '*' not found"
    backend.write("*", "literal star")
    assert backend.delete("*") == DeleteResult(path="/*")
    assert backend.read("/a.md").error is None and backend.read("/b.md").error is None


# -- upload and download --------------------------------------------------------------------


def test_upload_download_round_trip(backend: WorkspaceBackend) -> None:
    files = [("/file1.bin", b"Content 1"), ("/sub/file2.bin", bytes(range(256)))]
    responses = backend.upload_files(files)
    assert [(r.path, r.error) for r in responses] == [
        ("/file1.bin", None),
        ("/sub/file2.bin", None),
    ]
    downloads = backend.download_files([path for path, _ in files])
    assert [(d.path, d.content, d.error) for d in downloads] == [(p, c, None) for p, c in files]


def test_upload_download_errors_are_per_file(backend: WorkspaceBackend) -> None:
    backend.write("/dir/inside.txt", "x")
    backend.write("/parent.txt", "I am a file")
    uploads = backend.upload_files(
        [
            ("/valid1.txt", b"1"),
            ("/../invalid.txt", b"2"),
            ("/parent.txt/child.txt", b"3"),
            ("/tool_results/t/1.txt", b"4"),
            ("/dir", b"5"),
            ("/valid2.txt", b"6"),
        ]
    )
    assert [r.error for r in uploads] == [
        None,
        "invalid_path",
        "invalid_path",
        "permission_denied",
        "is_directory",
        None,
    ]
    downloads = backend.download_files(["/valid1.txt", "/nope.txt", "/dir", "/../etc/passwd"])
    assert [(d.content, d.error) for d in downloads] == [
        (b"1", None),
        (None, "file_not_found"),
        (None, "is_directory"),
        (None, "invalid_path"),
    ]


# -- what ctxfs adds: read-only areas and confinement ---------------------------------------


def test_ctxfs_areas_are_readable_but_never_changed(make_workspace: WorkspaceFactory) -> None:
    workspace = make_workspace()
    workspace.write_text("/tool_results/t1/1-search.txt", "the full result\n")
    backend = WorkspaceBackend(workspace)
    read = backend.read("/tool_results/t1/1-search.txt")
    assert read.file_data is not None and read.file_data["content"] == "the full result\n"
    assert _paths(backend.grep("full result").matches) == {"/tool_results/t1/1-search.txt"}
    refusal = (
        "Error: /tool_results/t1/1-search.txt is in the read-only area /tool_results/ "
        "(written by ctxfs itself); write your own files elsewhere, e.g. /notes/"
    )
    assert backend.write("/tool_results/t1/1-search.txt", "x").error == refusal
    assert backend.edit("/tool_results/t1/1-search.txt", "full", "x").error == refusal
    assert backend.delete("/tool_results/t1/1-search.txt").error == refusal
    deleted_parent = backend.delete("/tool_results")
    assert deleted_parent.error is not None and "read-only area" in deleted_parent.error
    assert workspace.read_text("/tool_results/t1/1-search.txt") == "the full result\n"


def test_more_read_only_folders(make_workspace: WorkspaceFactory) -> None:
    backend = WorkspaceBackend(make_workspace(), read_only=("/specs",))
    assert backend.write("/specs/a.md", "x").error is not None
    assert backend.write("/notes/a.md", "x").error is None


@pytest.mark.parametrize("path", ["/../outside.txt", "s3://other/x", "~/x", "/a\x00b"])
def test_no_path_leaves_the_workspace(backend: WorkspaceBackend, path: str) -> None:
    assert backend.write(path, "x").error is not None
    assert backend.read(path).error is not None
    assert backend.delete(path).error is not None
    assert backend.ls("/").entries == []


def test_it_needs_a_workspace() -> None:
    with pytest.raises(TypeError, match=r"WorkspaceBackend\(Workspace\('s3://bucket/agent'\)\)"):
        WorkspaceBackend("memory://x")  # type: ignore[arg-type]


# -- the async twins ------------------------------------------------------------------------


def test_async_twins(backend: WorkspaceBackend) -> None:
    async def scenario() -> None:
        assert (await backend.awrite("/work/a.txt", "alpha\n")).error is None
        await backend.awrite("/work/sub/b.txt", "beta\n")
        read = await backend.aread("/work/a.txt")
        assert isinstance(read, ReadResult) and read.file_data is not None
        assert read.file_data["content"] == "alpha\n"
        assert (await backend.aedit("/work/a.txt", "alpha", "gamma")).occurrences == 1
        assert _paths((await backend.als("/work")).entries) == {"/work/a.txt", "/work/sub/"}
        assert _paths((await backend.aglob("*.txt")).matches) == {"/work/a.txt", "/work/sub/b.txt"}
        grep = await backend.agrep("gamma", max_count=1)
        assert grep.matches == [{"path": "/work/a.txt", "line": 1, "text": "gamma"}]
        assert (await backend.adelete("/work")).error is None
        assert (await backend.aread("/work/sub/b.txt")).error is not None
        uploads = await backend.aupload_files([("/x.bin", b"\x00\x01")])
        assert uploads[0].error is None
        (download,) = await backend.adownload_files(["/x.bin"])
        assert download.content == b"\x00\x01"

    asyncio.run(scenario())


# -- properties, against Deep Agents' own in-memory implementation --------------------------

_SEGMENTS = ["a", "b", "src", ".hidden", "x.py", "y.md", ".env", "a.py", "{c}", "[d]"]
_GLOB_TOKENS = ["*", "**", "?", "a", "b", ".", "py", "md", "/", "[ab]", "[!a]", "{py,md}", "x", "_"]


def _tree_strategy() -> st.SearchStrategy[dict[str, str]]:
    path = st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4).map(
        lambda parts: "/" + "/".join(parts)
    )
    return st.dictionaries(path, st.text("ab \n", max_size=12), max_size=8)


def _consistent(files: dict[str, str]) -> dict[str, str]:
    """Drop paths that would sit under another file (a path cannot be both)."""
    kept: dict[str, str] = {}
    for path in sorted(files, key=len):
        if not any(path.startswith(other + "/") for other in kept):
            kept[path] = files[path]
    return kept


def _oracle_files(files: dict[str, str]) -> dict[str, Any]:
    return {path: {"content": text, "encoding": "utf-8"} for path, text in files.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=_tree_strategy().map(_consistent),
    pattern=st.lists(st.sampled_from(_GLOB_TOKENS), min_size=1, max_size=6).map("".join),
    root=st.sampled_from(["/", "/a", "/src"]),
)
def test_glob_agrees_with_deep_agents(files: dict[str, str], pattern: str, root: str) -> None:
    backend = WorkspaceBackend(Workspace("memory://glob-property", check=False))
    backend.upload_files([(path, text.encode()) for path, text in files.items()])
    result = backend.glob(pattern, path=root)
    try:
        expected_text = _glob_search_files(_oracle_files(files), pattern, root)
    except InvalidGlobPatternError as refused:
        assert (result.matches, result.error) == (None, str(refused))
        return
    expected = set() if expected_text == "No files found" else set(expected_text.split("\n"))
    assert result.error is None
    assert _paths(result.matches) == expected


@settings(max_examples=100, deadline=None)
@given(
    files=_tree_strategy().map(_consistent),
    pattern=st.text("ab \n", min_size=1, max_size=3).filter(lambda p: "\n" not in p),
)
def test_grep_agrees_with_deep_agents_on_visible_files(files: dict[str, str], pattern: str) -> None:
    visible = {p: t for p, t in files.items() if not any(s.startswith(".") for s in p.split("/"))}
    backend = WorkspaceBackend(Workspace("memory://grep-property", check=False))
    backend.upload_files([(path, text.encode()) for path, text in visible.items()])
    expected = grep_matches_from_files(_oracle_files(visible), pattern, "/").matches or []
    found = backend.grep(pattern).matches or []
    key = lambda m: (m["path"], m["line"])  # noqa: E731
    assert sorted(found, key=key) == sorted(expected, key=key)


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(
        st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=200
    ),
    limit=st.integers(1, 7),
)
def test_paging_through_a_file_gives_back_all_of_it(text: str, limit: int) -> None:
    # (Text with NUL is binary to ctxfs: read_file refuses it, download_files returns it.)
    backend = WorkspaceBackend(Workspace("memory://paging-property", check=False))
    backend.write("/f.txt", text)
    (download,) = backend.download_files(["/f.txt"])
    assert download.content == text.encode()
    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = backend.read("/f.txt", offset=offset, limit=limit)
        assert page.error is None and page.file_data is not None
        pages.append(page.file_data["content"])
        offset = page.next_offset
    lf = text.replace("\r\n", "\n")
    lf = lf.removesuffix("\r") if not lf.endswith("\n") else lf
    assert "".join(pages) == (lf if text.strip() else text)


_NAMES = st.sampled_from(["/a.md", "/b.md", "/d/a.md", "/d/e/f.txt", "/d/g.txt", "/*", "/d[1]"])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), _NAMES, st.text("xy\n", max_size=5)),
        st.tuples(st.just("edit"), _NAMES, st.sampled_from(["x", "y"])),
        st.tuples(st.just("delete"), st.sampled_from(["/a.md", "/d", "/d/e", "/*", "/d[1]"])),
    ),
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(ops=_OPS)
def test_every_view_agrees_after_any_writes_edits_and_deletes(ops: list[tuple[str, ...]]) -> None:
    """What write_file, edit_file and delete did is what ls, glob, read and grep then see."""
    backend = WorkspaceBackend(Workspace("memory://ops-property", check=False))
    model: dict[str, str] = {}
    for op, path, *arg in ops:
        if op == "write":
            blocked = any(path.startswith(p + "/") or p.startswith(path + "/") for p in model)
            assert (backend.write(path, arg[0]).error is None) is not blocked
            if not blocked:
                model[path] = arg[0]
        elif op == "edit":
            result = backend.edit(path, arg[0], "z")
            if path in model and model[path].count(arg[0]) == 1:
                assert result.error is None
                model[path] = model[path].replace(arg[0], "z")
            else:
                assert result.error is not None
        else:
            gone = [p for p in model if p == path or p.startswith(path + "/")]
            assert (backend.delete(path).error is None) is bool(gone)
            for p in gone:
                del model[p]
    assert _paths(backend.glob("**/*").matches) | _paths(backend.glob("*").matches) == set(model)
    tops = {"/" + p.split("/")[1] + ("/" if p.count("/") > 1 else "") for p in model}
    assert _paths(backend.ls("/").entries) == tops
    for path, text in model.items():
        read = backend.read(path)
        assert read.error is None and read.file_data is not None
        (download,) = backend.download_files([path])
        assert download.content == text.encode()
    assert _paths(backend.grep("z").matches) == {p for p, t in model.items() if "z" in t}


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(
        st.text(
            st.characters(
                blacklist_characters="\r\n\x00", blacklist_categories=("Cs", "Zl", "Zp", "Cc")
            ),
            max_size=40,
        ),
        min_size=1,
        max_size=60,
    ),
    crlf=st.booleans(),
    offset=st.integers(-2, 70),
    limit=st.integers(-1, 30),
)
def test_a_text_file_over_the_read_cap_is_read_as_a_stream_with_the_same_window(
    lines: list[str], crlf: bool, offset: int, limit: int
) -> None:
    """Over ``limits.max_read_bytes`` the backend streams (found in a fresh pass: a 200 MB
    file read whole for 10 lines took 616 MB); the window it reports is the one of the
    whole-file read for text whose lines end at a newline."""
    text = "".join(f"{line}\r\n" if crlf else f"{line}\n" for line in lines)
    assume(text.strip())  # a blank file is given back whole by Deep Agents' slicing
    whole = WorkspaceBackend(Workspace("memory://da-whole"))
    streamed = WorkspaceBackend(Workspace("memory://da-stream", limits=Limits(max_read_bytes=1)))
    for backend in (whole, streamed):
        backend.write("/big.txt", text)
    expected, got = whole.read("/big.txt", offset, limit), streamed.read("/big.txt", offset, limit)
    assert got == expected


_BREAKS = st.sampled_from(["\n", "\r\n", "\r", "\u2028", "\u2029", "\x0b", "\x0c", "\x85", "\x1c"])
_PIECES = st.lists(
    st.one_of(_BREAKS, st.sampled_from(["alpha", "é", "e\u0301", "👩‍💻", "\t", " ", "x" * 30])),
    max_size=30,
)


@settings(max_examples=80, deadline=None)
@given(before=_PIECES, after=_PIECES, big=st.booleans())
def test_a_grep_hit_is_the_line_read_shows_at_its_number(
    before: list[str], after: list[str], big: bool
) -> None:
    """grep's line number N is the line read gives at ``offset=N-1``, for text with every
    kind of line break, read whole or streamed: lines end at ``\\n`` only (a ``\\r`` before
    it dropped), as ctxfs's grep, read_file and pointers count them. Deep Agents' own slicing
    also breaks at a lone ``\\r``, U+2028 and the like, so a hit's number named another line."""
    text = "".join(before) + "zebra" + "".join(after)
    limits = Limits(max_read_bytes=1) if big else Limits()
    backend = WorkspaceBackend(Workspace("memory://da-lines", limits=limits))
    backend.write("/f.txt", text)
    (hit,) = backend.grep("zebra").matches or []
    read = backend.read("/f.txt", offset=hit["line"] - 1, limit=1)
    assert read.error is None and read.file_data is not None, read
    assert read.file_data["content"].removesuffix("\n") == hit["text"]
    lines = text.split("\n")
    assert read.total_lines == len(lines) - (lines[-1] == "")


def test_a_streamed_line_shown_in_part_says_so() -> None:
    """A line over ``limits.max_line_chars`` in a file read as a stream is marked clipped,
    with its length, as grep marks it: it was cut at 2,000 characters without a word, and
    passed for the whole line."""
    backend = WorkspaceBackend(Workspace("memory://da-clip", limits=Limits(max_read_bytes=10)))
    backend.write("/f.txt", "a\n" + "y" * 200_000 + "\nlast\n")
    read = backend.read("/f.txt", offset=1, limit=1)
    assert read.file_data is not None
    assert read.file_data["content"] == "y" * 2_000 + " … [line clipped: 200000 chars]\n"
    (hit,) = backend.grep("yyy").matches or []
    assert read.file_data["content"] == hit["text"] + "\n"


def test_an_offload_pointer_followed_with_the_backend_reads_the_lines_it_names() -> None:
    """'read_file it from offset=N for the rest', given to Deep Agents' read_file (this
    backend's read), starts at the first line the preview did not show, whatever line
    breaks the lines hold (a lone CR, U+2028 and form feeds counted as breaks named a line
    further on)."""
    import re

    from langchain_core.messages import ToolMessage

    from ctxfs import ContextEngine, ContextPolicy

    lines = [f"row {i}\u2028cont\x0c{i}\ra" for i in range(40)]
    text = "\r\n".join(lines) + "\r\n"
    ws = Workspace("memory://da-pointer")
    engine = ContextEngine(
        ws, ContextPolicy(max_input_tokens=8_000, tool_results={"threshold": {"tokens": 50}})
    )
    result = ToolMessage(text, tool_call_id="c", name="x")
    shown = str(engine.offload_tool_result(result, thread_id="t").content)
    path = re.search(r"saved to (\S+)\.\n", shown)
    offset = re.search(r"from offset=(\d+) for the rest", shown)
    assert path is not None and offset is not None, shown
    read = WorkspaceBackend(ws).read(path.group(1), offset=int(offset.group(1)), limit=1_000)
    assert read.file_data is not None and read.total_lines == len(lines)
    assert read.file_data["content"] == "".join(f"{line}\n" for line in lines[int(offset[1]) :])
