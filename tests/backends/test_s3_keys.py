"""S3 keys that no local disk can hold, written by other tools: what the workspace makes of
them, and that nothing is lost. Also listings longer than one S3 page (1,000 keys)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ctxfs import FileInfo, Workspace
from ctxfs.tools import tool_functions
from tests.conftest import s3_client, s3_options


def _open(endpoint: str, bucket: str, session: Any, prefix: str = "w") -> Workspace:
    return Workspace(f"s3://{bucket}/{prefix}", storage_options=s3_options(endpoint, session))


def test_a_key_that_is_a_file_and_a_folder_prefix_shows_both_and_loses_neither(
    s3_endpoint: str, s3_bucket: str, aio_session: Any
) -> None:
    client = s3_client(s3_endpoint)
    client.put_object(Bucket=s3_bucket, Key="w/a/b", Body=b"the file b\n")
    client.put_object(Bucket=s3_bucket, Key="w/a/b/c", Body=b"the file c\n")
    ws = _open(s3_endpoint, s3_bucket, aio_session)
    assert ws.ls("/a") == [FileInfo("/a/b", "file", 11), FileInfo("/a/b", "directory")]
    assert ws.info("/a/b") == FileInfo("/a/b", "file", 11)  # a path names the file first
    assert ws.ls("/a/b") == [FileInfo("/a/b/c", "file", 11)]
    assert ws.read_bytes("/a/b") == b"the file b\n"
    assert ws.read_bytes("/a/b/c") == b"the file c\n"
    assert ws.glob("**").paths == ("/a/b", "/a/b/c")
    assert [f.path for f in ws.grep("the file").files] == ["/a/b", "/a/b/c"]
    tools = {f.name: f for f in tool_functions(ws)}
    assert tools["ls"](path="/a") == "/a/b\n/a/b/"
    assert tools["read_file"](file_path="/a/b") == "     1\tthe file b"
    assert tools["read_file"](file_path="/a/b/c") == "     1\tthe file c"
    # Nothing new goes below the file (as on every backend); the file can still change.
    assert "is a file" in tools["write_file"](file_path="/a/b/d", content="x")
    ws.edit("/a/b", "the file b", "b, edited")
    assert ws.read_bytes("/a/b/c") == b"the file c\n"
    ws.rm("/a/b")  # the file only: the folder and what is in it stay
    assert ws.glob("**").paths == ("/a/b/c",)
    assert ws.ls("/a") == [FileInfo("/a/b", "directory")]


def test_folder_markers_are_folders_not_files(
    s3_endpoint: str, s3_bucket: str, aio_session: Any
) -> None:
    # The zero-byte "name/" objects that consoles and sync tools create for empty folders.
    client = s3_client(s3_endpoint)
    client.put_object(Bucket=s3_bucket, Key="w/empty/", Body=b"")
    client.put_object(Bucket=s3_bucket, Key="w/full/", Body=b"")
    client.put_object(Bucket=s3_bucket, Key="w/full/f.txt", Body=b"needle\n")
    ws = _open(s3_endpoint, s3_bucket, aio_session)
    assert ws.ls("/") == [FileInfo("/empty", "directory"), FileInfo("/full", "directory")]
    assert ws.ls("/empty") == []
    assert ws.ls("/full") == [FileInfo("/full/f.txt", "file", 7)]
    assert ws.info("/empty").is_dir
    assert ws.glob("**").paths == ("/full/f.txt",)
    found = ws.grep("needle", output_mode="count")
    assert [f.path for f in found.files] == ["/full/f.txt"] and found.searched == 1
    ws.write_text("/empty/new.txt", "x")
    assert ws.ls("/empty") == [FileInfo("/empty/new.txt", "file", 1)]


def test_listings_longer_than_one_s3_page_are_whole(
    s3_endpoint: str, s3_bucket: str, aio_session: Any
) -> None:
    client = s3_client(s3_endpoint)
    names = [f"f{i:04d}.txt" for i in range(1_003)]  # one S3 list page is 1,000 keys
    with ThreadPoolExecutor(8) as pool:  # boto3 clients are thread-safe
        list(
            pool.map(
                lambda name: client.put_object(
                    Bucket=s3_bucket, Key=f"w/d/{name}", Body=name.encode()
                ),
                names,
            )
        )
    client.put_object(Bucket=s3_bucket, Key="w/zz.txt", Body=b"f")
    ws = _open(s3_endpoint, s3_bucket, aio_session)
    assert [i.path for i in ws.ls("/d")] == [f"/d/{name}" for name in names]
    everything = ws.glob("**", limit=5_000)
    assert everything.paths == (*(f"/d/{name}" for name in names), "/zz.txt")
    assert not everything.truncated
    tools = {f.name: f for f in tool_functions(ws)}
    seen: list[str] = []
    offset = pages = 0
    while True:
        pages += 1
        out = tools["ls"](path="/d", offset=offset)
        rows = [row for row in out.split("\n") if row.startswith("/d/")]
        seen += rows
        if "call ls again with offset=" not in out:
            break
        offset = int(out.rsplit("offset=", 1)[1].split()[0])
    assert seen == [f"/d/{name}" for name in names] and pages > 1
