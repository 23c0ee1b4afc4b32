from ctxfs import Workspace


def test_write_read_roundtrip(workspace: Workspace) -> None:
    workspace.write_text("/a/b.txt", "hello\nworld\n")
    assert workspace.read_text("/a/b.txt") == "hello\nworld\n"
    assert [i.path for i in workspace.ls("/")] == ["/a"]
