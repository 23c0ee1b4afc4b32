"""What every ``ctxfs`` subcommand owes a new user: it loads only what it uses, refuses a
mistyped workspace folder, names the extra a missing package comes from, and stops quietly
when its reader goes away. The subcommands are read from the parser, so a new one is covered.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxfs import Workspace
from ctxfs._cli._extras import extra_of, missing_dependency
from ctxfs._cli._main import EXIT_BROKEN_PIPE, build_parser, main

TRACE = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
]


def _leaves(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every runnable subcommand: its words and its parser."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield words, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _leaves(sub, (*words, name))


LEAVES = dict(_leaves(build_parser()))


def _argv(words: tuple[str, ...], workspace: str, folder: Path) -> list[str] | None:
    """A command line of ``words`` that gives ``workspace`` as the workspace and fills every
    other required argument; ``None`` when the command takes no workspace."""
    parser = LEAVES[words]
    argv = list(words)
    has_workspace = False
    for action in parser._actions:
        if action.dest == "url" and not action.option_strings:
            argv.append(workspace)
            has_workspace = True
        elif action.dest == "workspace" and action.option_strings:
            argv += [action.option_strings[-1], workspace]
            has_workspace = True
        elif action.dest == "trace":
            path = folder / "t.jsonl"
            path.write_text("\n".join(json.dumps(r) for r in TRACE) + "\n")
            argv.append(str(path))
        elif action.dest == "max_input_tokens" and words == ("replay",):
            argv += [action.option_strings[-1], "4000"]  # required, checked by replay itself
        elif not action.option_strings and action.dest != "help":
            argv.append("x")
        elif action.required:
            argv += [action.option_strings[-1], "x"]
    return argv if has_workspace else None


WITH_WORKSPACE = [
    words
    for words, parser in LEAVES.items()
    if any(a.dest in ("url", "workspace") for a in parser._actions)
]


def test_every_subcommand_is_listed() -> None:
    # the generated tests below cover these; a new subcommand joins them by itself
    assert {" ".join(w) for w in LEAVES} >= {
        "demo", "replay", "ls", "cat", "glob", "grep", "transcripts", "memory show",
        "memory search", "memory forget", "mcp serve", "session show", "session resume",
    }  # fmt: skip
    assert len(WITH_WORKSPACE) == len(LEAVES)


@pytest.mark.parametrize("words", WITH_WORKSPACE, ids=" ".join)
def test_a_missing_folder_is_refused_and_not_made(
    words: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo"
    argv = _argv(words, str(missing), tmp_path)
    assert argv is not None
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ctxfs {words[0]}: no workspace at {missing}: no such folder")
    assert err.count("\n") == 1
    assert ("--create" in err) == ("--create" in LEAVES[words].format_help())
    assert not missing.exists()


@pytest.mark.parametrize("words", WITH_WORKSPACE, ids=" ".join)
def test_a_file_given_as_the_workspace_is_no_such_folder(
    words: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("not a folder")
    argv = _argv(words, str(file), tmp_path)
    assert argv is not None
    if "--create" in LEAVES[words].format_help():
        argv.append("--create")  # not even when asked to make it
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"ctxfs {words[0]}: no workspace at {file}: no such folder (it is a file)\n"
    )
    assert file.read_text() == "not a folder"


def test_mcp_serve_makes_the_folder_only_with_create(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "ws"
    argv = ["mcp", "serve", str(folder), "--create", "--max-output-tokens", "5"]
    assert main(argv) == 2  # refused later, for the token limit: the folder was made first
    assert folder.is_dir()


# -- a missing extra ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "package", "extra"),
    [
        (["mcp", "serve", "{ws}"], "mcp", "mcp"),
        (["memory", "search", "{ws}", "port"], "bm25s", "memory"),
    ],
)
def test_a_missing_extra_names_what_to_install(
    argv: list[str],
    package: str,
    extra: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    Workspace(tmp_path / "ws").write_text("/notes.md", "port 8080\n")
    for name in list(sys.modules):  # import the package anew, and what uses it
        if name == package or name.startswith((f"{package}.", "ctxfs.integrations.mcp")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)  # importing it raises ModuleNotFoundError
    status = main([word.format(ws=tmp_path / "ws") for word in argv])
    err = capsys.readouterr().err
    assert (status, err.count("\n")) == (2, 1), err
    assert f"pip install 'ctxfs[{extra}]'" in err
    assert "internal error" not in err and "please report" not in err


def test_every_extra_package_maps_to_its_extra() -> None:
    from importlib import metadata

    extras = metadata.metadata("ctxfs").get_all("Provides-Extra") or []
    assert {"mcp", "memory", "s3", "demo", "plot", "deepagents"} <= set(extras)
    assert extra_of("mcp") == "mcp"
    assert extra_of("bm25s") == "memory"  # the narrow extra, not dev or bench
    assert extra_of("s3fs") == "s3"
    assert extra_of("matplotlib") == "plot"
    assert extra_of("no-such-package") is None


def test_an_import_error_inside_ctxfs_is_still_a_defect() -> None:
    error = ModuleNotFoundError("No module named 'ctxfs._gone'", name="ctxfs._gone")
    assert missing_dependency(error) is None
    assert missing_dependency(ValueError("x")) is None
    wrapped = RuntimeError("failed")
    wrapped.__cause__ = ModuleNotFoundError("No module named 'mcp'", name="mcp")
    assert missing_dependency(wrapped) == (
        "this command needs the package 'mcp', which is not installed: pip install 'ctxfs[mcp]'"
    )


# -- a reader that goes away ----------------------------------------------------------------


def _printing_commands(ws: Path) -> list[list[str]]:
    return [
        ["ls", str(ws)],
        ["cat", str(ws), "/big.txt"],
        ["cat", str(ws), "/big.txt", "-n"],
        ["glob", str(ws), "**"],
        ["grep", str(ws), "line"],
        ["memory", "show", str(ws)],
        ["memory", "show", str(ws), "-n", "alice", "--json"],
        ["memory", "show", str(ws), "-n", "alice"],
        ["session", "show", str(ws)],
    ]


def test_a_closed_stdout_ends_every_command_quietly(tmp_path: Path) -> None:
    from ctxfs.memory import LongTermMemory, MemoryUpdate

    ws = Workspace(tmp_path / "ws")
    ws.write_text("/big.txt", "".join(f"line {n}\n" for n in range(20_000)))
    facts = [
        {"content": f"fact {n}", "category": "knowledge", "confidence": 0.9} for n in range(50)
    ]
    LongTermMemory(ws, ("alice",)).apply(
        MemoryUpdate.model_validate({"new_facts": facts}), thread_id="t1"
    )
    for argv in _printing_commands(tmp_path / "ws"):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the command prints anything
        done = subprocess.run(
            [sys.executable, "-m", "ctxfs", *argv], stdout=write, stderr=subprocess.PIPE
        )
        os.close(write)
        assert (done.returncode, done.stderr.decode()) == (EXIT_BROKEN_PIPE, ""), argv


# -- what a command imports -----------------------------------------------------------------

_PROBE = """
import json, runpy, sys
sys.argv = ["ctxfs", *sys.argv[1:]]
try:
    runpy.run_module("ctxfs", run_name="__main__")
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _modules(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=False
    )
    line = done.stderr.rpartition("\nMODULES ")[2]
    return set(json.loads(line))


@pytest.mark.parametrize("argv", [["--version"], ["--help"]], ids=" ".join)
def test_version_and_help_load_none_of_the_library(argv: list[str]) -> None:
    modules = _modules(*argv)
    ours = {m for m in modules if m == "ctxfs" or m.startswith("ctxfs.")}
    assert ours == {"ctxfs", "ctxfs._cli", "ctxfs._cli._main", "ctxfs._cli._common"}
    assert not {m.partition(".")[0] for m in modules} & {
        "langchain_core", "langgraph", "pydantic", "fsspec", "regex", "tiktoken", "mcp",
    }  # fmt: skip


_HEAVY_PACKAGES = {"langchain", "langgraph", "mcp", "bm25s", "rich"}
_HEAVY_OURS = (
    "ctxfs._compaction", "ctxfs._summary", "ctxfs._archive", "ctxfs._replay", "ctxfs.memory",
    "ctxfs.subagents", "ctxfs.workflows", "ctxfs.integrations",
)  # fmt: skip


def test_the_workspace_commands_load_only_the_workspace_and_its_tools(tmp_path: Path) -> None:
    Workspace(tmp_path).write_text("/a.md", "alpha\n")
    for argv in (["ls", "."], ["cat", ".", "/a.md"], ["grep", ".", "a"]):
        modules = _modules(*[str(tmp_path) if word == "." else word for word in argv])
        assert "ctxfs._workspace._workspace" in modules and "ctxfs.tools" in modules, argv
        heavy = {
            m
            for m in modules
            if m.partition(".")[0] in _HEAVY_PACKAGES or m.startswith(_HEAVY_OURS)
        }
        assert heavy == set(), argv
