"""What every ``ctxfs`` subcommand owes a new user: it loads only what it uses, refuses a
mistyped workspace folder, names the extra a missing package comes from, and stops quietly
when its reader goes away. The subcommands are read from the parser, so a new one is covered.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs import Workspace
from ctxfs._cli._common import EXIT_ERROR
from ctxfs._cli._extras import extra_of, missing_dependency
from ctxfs._cli._main import EXIT_BROKEN_PIPE, build_parser, main
from tests._zygote import Zygote

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
        elif action.dest == "older_than" and words == ("gc",):
            argv += [action.option_strings[-1], "30d"]  # gc needs a retention, checked by gc
        elif not action.option_strings and action.dest != "help":
            argv.append("x")
        elif action.required:
            value = "1" if action.type is int else "x"  # e.g. memory rollback --to N
            argv += [action.option_strings[-1], value]
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


_HOSTILE_VALUES = [
    "9" * 5_000,
    "9" * 400 + "GiB",
    "1e999",
    "-1e999",
    "nan",
    "inf",
    "-0",
    "0x10",
    "١٢",  # Arabic-Indic digits, which int() reads
    "1_000",
    "",
    " ",
    "\x00",
    "../x",
    "99999999999999999999999w",
]


@pytest.mark.parametrize("words", sorted(LEAVES))
def test_every_argument_check_fails_only_as_a_usage_error(words: tuple[str, ...]) -> None:
    # argparse turns ArgumentTypeError, ValueError and TypeError into a usage line; anything
    # else escaped as a traceback ('gc --max-bytes 999...9': OverflowError from int(inf))
    checks = [
        action.type
        for action in LEAVES[words]._actions
        if callable(action.type) and action.type not in (str,)
    ]
    for check in checks:
        for value in _HOSTILE_VALUES:
            with contextlib.suppress(argparse.ArgumentTypeError, ValueError, TypeError):
                check(value)


def test_an_argument_too_large_for_its_check_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["gc", str(tmp_path), "--max-bytes", "9" * 5_000])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.endswith(
        "is larger than any size; write e.g. 200MB or 2GiB\n"
    )


def test_a_defect_in_an_argument_check_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxfs._cli import _lifecycle

    def broken(text: str) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(_lifecycle, "parse_bytes", broken)
    assert main(["gc", str(tmp_path), "--max-bytes", "1"]) == 70
    assert capsys.readouterr().err == (
        "ctxfs gc: internal error (RuntimeError: boom); please report it\n"
    )


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


@pytest.mark.parametrize("words", WITH_WORKSPACE, ids=" ".join)
@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"], ids=["nul", "lone-surrogate"])
def test_a_word_no_command_can_take_is_refused_by_its_position(
    words: tuple[str, ...], bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # main(argv) from Python can pass what a shell cannot: a NUL reached open() in replay
    # ('embedded null byte') and was reported as a defect of ctxfs, exit status 70
    argv = _argv(words, str(tmp_path / "ws"), tmp_path)
    assert argv is not None
    for position in range(len(words), len(argv)):
        hostile = [*argv[:position], bad, *argv[position + 1 :]]
        assert main(hostile) == 2, hostile
        err = capsys.readouterr().err
        what = "holds a NUL character" if "\x00" in bad else "is not valid text"
        assert err.startswith(f"ctxfs {words[0]}: argument {position + 1} {what}"), err
        assert err.count("\n") == 1
    assert not (tmp_path / "ws").exists()


def test_a_file_name_that_is_not_utf8_prints_on_a_strict_stdout(tmp_path: Path) -> None:
    # In most UTF-8 locales stdout encodes strictly; a name's non-UTF-8 byte reaches Python
    # as a lone surrogate, which replay printed in its header: exit status 70, no report
    trace = os.fsencode(tmp_path) + b"/run\xff.jsonl"
    with open(trace, "w") as f:
        f.write("\n".join(json.dumps(r) for r in TRACE) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "ctxfs", "replay", trace, "--max-input-tokens", "4000",
         "--workspace", str(tmp_path), "--plain"],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b"")
    assert b"/run\\udcff.jsonl: 2 messages" in done.stdout


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


def _extra_packages() -> list[tuple[str, str]]:
    """Every package an extra of ctxfs brings, as an import name, with that extra."""
    import re
    from importlib import metadata

    found: dict[str, str] = {}
    for requirement in metadata.requires("ctxfs") or []:
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", requirement)
        if name and extra:
            found.setdefault(name.group().replace("-", "_").lower(), extra.group(1))
    return sorted(found.items())


@pytest.mark.parametrize(("package", "listed_in"), _extra_packages())
def test_any_missing_extra_package_is_named_with_an_extra_that_brings_it(
    package: str, listed_in: str
) -> None:
    from importlib import metadata

    error = ModuleNotFoundError(f"No module named {package!r}", name=package)
    line = missing_dependency(RuntimeError("while running"))  # not an import error at all
    assert line is None
    wrapped = RuntimeError("while running")
    wrapped.__context__ = error
    line = missing_dependency(wrapped)
    assert line is not None and line.startswith(f"this command needs the package {package!r}")
    extra = line.rpartition("ctxfs[")[2].rstrip("]'")
    brings = [r for r in metadata.requires("ctxfs") or [] if f'extra == "{extra}"' in r]
    assert any(r.replace("-", "_").lower().startswith(package) for r in brings), (line, brings)


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


@pytest.mark.slow
def test_a_closed_stdout_ends_every_command_quietly(tmp_path: Path, zygote: Zygote) -> None:
    from ctxfs.memory import LongTermMemory, MemoryUpdate

    ws = Workspace(tmp_path / "ws")
    ws.write_text("/big.txt", "".join(f"line {n}\n" for n in range(20_000)))
    facts = [
        {"content": f"fact {n}", "category": "knowledge", "confidence": 0.9} for n in range(50)
    ]
    LongTermMemory(ws, ("alice",)).apply(
        MemoryUpdate.model_validate({"new_facts": facts}), thread_id="t1"
    )
    # The first in a fresh interpreter, the others forked from the tests' zygote: each is a
    # process of its own that ends as python -m ctxfs does (the interpreter's exit flushes its
    # stdout into the closed pipe), without the start-up's second and a half.
    for n, argv in enumerate(_printing_commands(tmp_path / "ws")):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the command prints anything
        command = [sys.executable, "-m", "ctxfs", *argv]
        if n == 0:
            done = subprocess.run(command, stdout=write, stderr=subprocess.PIPE, text=True)
        else:
            done = zygote.run(command, stdout=write, timeout=120)
        os.close(write)
        assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, ""), argv


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


_HEAVY_PACKAGES = {"langchain", "langchain_core", "langgraph", "mcp", "bm25s", "rich", "imagesize"}
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
        # a local folder needs no fsspec (only other storage loads it)
        assert not {m for m in modules if m.partition(".")[0] == "fsspec"}, argv
        assert "ctxfs.backends._fsspec" not in modules, argv
        # only grep matches: ls and cat load no matcher and no regex module
        matching = {m for m in modules if m.partition(".")[0] == "regex" or m.endswith("._grep")}
        assert bool(matching) == (argv[0] == "grep"), (argv, matching)


# -- what reaches a terminal ----------------------------------------------------------------

_ACTED_ON = {
    *(chr(c) for c in range(0x20) if c not in (0x09, 0x0A)),
    *(chr(c) for c in range(0x7F, 0xA0)),
    "\u061c", "\u200e", "\u200f", *(chr(c) for c in range(0x202A, 0x202F)),
    *(chr(c) for c in range(0x2066, 0x206A)),
}  # fmt: skip


@given(st.text(alphabet=st.sampled_from(sorted(_ACTED_ON)) | st.characters(), max_size=60))
def test_nothing_a_terminal_acts_on_gets_through(text: str) -> None:
    from ctxfs._cli._common import TerminalText, terminal_safe

    safe = terminal_safe(text)
    assert not set(safe) & _ACTED_ON
    assert safe.count("\n") == text.count("\n") and safe.count("\t") == text.count("\t")
    if not set(text) & _ACTED_ON:
        # ordinary text, any script, is left alone; a lone surrogate (half of a UTF-16
        # pair, which no terminal can be sent) is shown as its escape
        assert safe == "".join(
            f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text
        )
    buffer = io.StringIO()
    TerminalText(buffer).write(text)
    assert buffer.getvalue() == safe


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@given(
    st.text(alphabet=st.sampled_from(sorted(_ACTED_ON)) | st.characters(codec="utf-8"),
            min_size=1, max_size=30)
)  # fmt: skip
@settings(max_examples=25, deadline=None)
def test_listings_contents_and_errors_cannot_drive_the_terminal(text: str) -> None:
    import tempfile

    from ctxfs._cli._common import TerminalText

    with tempfile.TemporaryDirectory() as folder:
        ws = Workspace(folder)
        name = "".join(c for c in text if c not in "/\\\x00") or "x"
        try:
            ws.write_text(f"/d/{name}.txt", f"hit {text}\n")
        except (ValueError, OSError):  # a name the workspace refuses is not listed at all
            name = "x"
            ws.write_text("/d/x.txt", f"hit {text}\n")
        for argv in (
            ["ls", folder, "/d"],
            ["glob", folder, "**"],
            ["grep", folder, "hit"],
            ["cat", folder, f"/d/{name}.txt"],
            ["cat", folder, f"/d/{name}.txt", "-n"],
            ["cat", folder, f"/missing{text}"],
        ):
            out, err = _Terminal(), _Terminal()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                main(argv)
            printed = out.getvalue() + err.getvalue()
            assert printed and not set(printed) & _ACTED_ON, argv
        assert isinstance(TerminalText(io.StringIO()), TerminalText)


def test_cat_is_byte_exact_off_a_terminal(tmp_path: Path) -> None:
    data = b"colour \x1b[31mred\x1b[0m\r\n"
    (tmp_path / "a.txt").write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "ctxfs", "cat", str(tmp_path), "/a.txt"], capture_output=True
    )
    assert (done.returncode, done.stdout) == (0, data)
    listing = subprocess.run(
        [sys.executable, "-m", "ctxfs", "grep", str(tmp_path), "red"], capture_output=True
    )
    assert b"\x1b" not in listing.stdout and b"\\x1b[31m" in listing.stdout


# -- messages name the flags ------------------------------------------------------------------


def _tool_texts() -> list[str]:
    """Every paging note and error text the workspace tools give that the CLI prints,
    produced by the library itself (so a new wording is checked as it is written)."""
    from ctxfs._workspace._grep import GrepOptions, timeout_error

    texts = [str(timeout_error("/logs/app.log", GrepOptions(pattern="(a+)+b")))]
    ws = Workspace("memory://wording")
    ws.write_text("/long.txt", "y" * 50_000 + "\n")
    for n in range(40):
        ws.write_text(f"/d/f{n}.log", f"line {n} error\n" * 3)
    from ctxfs.tools import tool_functions

    tools = {f.name: f for f in tool_functions(ws, max_output_tokens=200)}
    calls: list[tuple[str, dict[str, object]]] = [
        ("ls", {"path": "/d"}),
        ("ls", {"path": "/d", "offset": 99}),
        ("glob", {"pattern": "**"}),
        ("glob", {"pattern": "**", "offset": 99}),
        ("grep", {"pattern": "line", "output_mode": "content"}),
        ("grep", {"pattern": "line", "output_mode": "content", "head_limit": 3}),
        ("grep", {"pattern": "(a"}),
        ("read_file", {"file_path": "/long.txt"}),
        ("read_file", {"file_path": "/d/f1.log", "limit": 1}),
        ("read_file", {"file_path": "/d/f1.log", "offset": 9}),
    ]
    for name, arguments in calls:
        tool = tools[name]
        try:
            texts.append(tool.function(**dict(tool.args_schema.model_validate(arguments))))
        except Exception as exc:  # the errors are texts too
            texts.append(str(exc))
    return texts


def test_every_tool_note_is_reworded_to_the_flags() -> None:
    from ctxfs._cli._wording import TOOL_WORDS, for_the_shell

    texts = _tool_texts()
    assert sum(bool(TOOL_WORDS.search(text)) for text in texts) >= 8  # they did name them
    for text in texts:
        assert not TOOL_WORDS.search(for_the_shell(text)), text


@given(
    st.from_regex(
        r"/[a-z_]{0,6}(offset|fixed_strings|head_limit|limit)[a-z_.]{0,6}", fullmatch=True
    )
)
def test_file_names_are_left_as_they_are(path: str) -> None:
    from ctxfs._cli._wording import for_the_shell

    message = f"{path}: no such file or directory"
    assert for_the_shell(message) == message


def test_the_commands_print_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ctxfs._cli._wording import TOOL_WORDS

    ws = Workspace(tmp_path)
    for n in range(30):
        ws.write_text(f"/f{n}.log", f"line {n} error\n")
    ws.write_text("/long.txt", "y" * 300_000 + "\n")
    root = str(tmp_path)
    for argv in (
        ["grep", root, "line", "--head-limit", "3"],
        ["grep", root, "(a"],
        ["grep", root, "line", "--head-limit", "-1"],
        ["grep", root, "line", "-C", "-1"],
        ["grep", root, "line", "-A", "-2"],
        ["ls", root, "--offset", "99"],
        ["ls", root, "--offset", "-1"],
        ["glob", root, "*", "--offset", "99"],
        ["cat", root, "/f1.log", "--offset", "9"],
        ["cat", root, "/long.txt", "-n"],
    ):
        main(argv)
        captured = capsys.readouterr()
        printed = captured.out + captured.err
        assert printed and not TOOL_WORDS.search(printed), (argv, printed[-300:])


def test_a_full_stdout_is_named_as_standard_output(tmp_path: Path, zygote: Zygote) -> None:
    # "[Errno 28] No space left on device" alone reads as if the workspace were full
    ws = Workspace(tmp_path / "ws")
    ws.write_text("/big.txt", "".join(f"line {n}\n" for n in range(20_000)))
    with open("/dev/full", "w") as full:  # every write fails with ENOSPC
        done = zygote.run(
            [sys.executable, "-m", "ctxfs", "cat", str(tmp_path / "ws"), "/big.txt"],
            stdout=full.fileno(),
            timeout=120,
        )
    assert done.returncode == EXIT_ERROR
    assert "ctxfs cat: [Errno 28] writing to standard output: No space left" in done.stderr


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["grep", "--help"]])
def test_help_and_version_that_cannot_be_written_are_a_failure(
    argv: list[str], zygote: Zygote
) -> None:
    # argparse dropped the failed write: status 0 with nothing printed
    with open("/dev/full", "w") as full:
        done = zygote.run([sys.executable, "-m", "ctxfs", *argv], stdout=full.fileno(), timeout=120)
    assert done.returncode == EXIT_ERROR, done.stderr
    assert done.stderr == (
        f"ctxfs {argv[0]}: [Errno 28] writing to standard output: No space left on device\n"
    )


def test_a_commands_help_still_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grep", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: ctxfs grep ")
