"""``ctxfs ls | cat | glob | grep | transcripts``: look into any workspace from a shell.

The listings and search results are the agent's own tool outputs (the same functions format
them), so what a person sees is what the model would see. Errors are what went wrong, without
the advice the tools add for a model, on stderr with exit status 2; ``grep`` exits 1 when
nothing matches, like ``rg``. Workspaces are opened read-only: these commands never write.
"""

from __future__ import annotations

import argparse
import hashlib
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from ctxfs._cli._common import (
    EXIT_ERROR,
    CliError,
    add_storage_arguments,
    open_workspace,
    write_file_bytes,
)
from ctxfs._cli._wording import OPERANDS, for_the_shell
from ctxfs._errors import (
    ArchiveError,
    IsADirectoryPathError,
    PathNotFoundError,
    ReadOnlyPathError,
    WorkspaceError,
)
from ctxfs._json import loads_bounded
from ctxfs._layout import TRANSCRIPTS_DIR
from ctxfs._workspace._workspace import Workspace
from ctxfs.tools import ToolFunction, tool_functions
from ctxfs.tools._format import format_grep

if TYPE_CHECKING:
    from ctxfs._archive._transcripts import ArchiveSegment

__all__ = ["EXIT_ERROR", "EXIT_NO_MATCH", "add_workspace_parsers", "parse_grep"]

EXIT_NO_MATCH = 1


def add_workspace_parsers(commands: Any) -> argparse.ArgumentParser:
    """Adds ``ls``, ``cat``, ``glob``, ``grep`` and ``transcripts`` to ``commands``.

    Returns:
        The ``grep`` parser, whose operands :func:`parse_grep` sorts out.
    """
    common = argparse.ArgumentParser(add_help=False)
    add_storage_arguments(common)
    url_help = "the workspace: a folder, memory://name, s3://bucket/prefix, any fsspec URL"

    ls = commands.add_parser(
        "ls", parents=[common], help="list a folder of a workspace", description=_LS
    )
    ls.add_argument("url", metavar="URL", help=url_help)
    ls.add_argument("path", metavar="PATH", nargs="?", default="/", help="folder (default: /)")
    ls.add_argument("--offset", type=int, default=0, metavar="N", help="skip N entries")
    ls.set_defaults(handler=_ls)

    cat = commands.add_parser(
        "cat", parents=[common], help="print a file of a workspace", description=_CAT
    )
    cat.add_argument("url", metavar="URL", help=url_help)
    cat.add_argument("path", metavar="PATH", help="the file, e.g. /tool_results/t/c.txt")
    cat.add_argument(
        "-n", "--number", action="store_true", help="number the lines, as read_file shows them"
    )
    cat.add_argument("--offset", type=int, metavar="N", help="start at line N+1 (implies -n)")
    cat.add_argument("--limit", type=int, metavar="N", help="at most N lines (implies -n)")
    cat.set_defaults(handler=_cat)

    glob = commands.add_parser(
        "glob", parents=[common], help="find files by name pattern", description=_GLOB
    )
    glob.add_argument("url", metavar="URL", help=url_help)
    glob.add_argument("pattern", metavar="PATTERN", help="e.g. '**/*.md'")
    glob.add_argument("path", metavar="PATH", nargs="?", default="/", help="default: /")
    glob.add_argument("--offset", type=int, default=0, metavar="N", help="skip N matches")
    glob.set_defaults(handler=_glob)

    grep = commands.add_parser(
        "grep",
        parents=[common],
        help="search file contents with a regular expression, like rg",
        description=_GREP,
        usage="ctxfs grep [options] URL PATTERN [PATH]\n       "
        "ctxfs grep [options] URL -- PATTERN [PATH]",
    )
    # The operands are sorted out by parse_grep, so that they may come in any order with the
    # options (argparse cannot interleave optional positionals with options).
    grep.add_argument("url", metavar="URL", nargs="?", help=url_help)
    grep.add_argument("pattern", metavar="PATTERN", nargs="?", help="a regular expression")
    grep.add_argument("path", metavar="PATH", nargs="?", help="folder or file (default: /)")
    grep.add_argument("-F", "--fixed-strings", action="store_true", help="PATTERN is literal")
    grep.add_argument("-i", "--ignore-case", action="store_true", help="ignore case")
    grep.add_argument("-U", "--multiline", action="store_true", help="matches may span lines")
    grep.add_argument("--glob", metavar="GLOB", help="only files matching GLOB, e.g. '*.py'")
    grep.add_argument("-A", "--after-context", type=int, default=0, metavar="N")
    grep.add_argument("-B", "--before-context", type=int, default=0, metavar="N")
    grep.add_argument("-C", "--context", type=int, default=0, metavar="N")
    modes = grep.add_mutually_exclusive_group()
    modes.add_argument(
        "--output-mode",
        choices=["content", "files_with_matches", "count"],
        default="content",
        help="default: content",
    )
    modes.add_argument(
        "-l",
        "--files-with-matches",
        dest="output_mode",
        action="store_const",
        const="files_with_matches",
        help="only the paths of matching files",
    )
    modes.add_argument(
        "-c",
        "--count",
        dest="output_mode",
        action="store_const",
        const="count",
        help="path:count per file",
    )
    grep.add_argument(
        "-N", "--no-line-number", action="store_true", help="no line numbers in content mode"
    )
    grep.add_argument(
        "--head-limit", type=int, default=0, metavar="N", help="at most N entries (0: all)"
    )
    grep.add_argument("--offset", type=int, default=0, metavar="N", help="skip N entries")
    grep.set_defaults(handler=_grep)

    transcripts = commands.add_parser(
        "transcripts",
        parents=[common],
        help="list the archived conversation segments, or show one",
        description=_TRANSCRIPTS,
    )
    transcripts.add_argument("url", metavar="URL", help=url_help)
    transcripts.add_argument("--thread", metavar="ID", help="only this conversation")
    shown = transcripts.add_mutually_exclusive_group()
    shown.add_argument(
        "--show", type=int, metavar="N", help="print segment N (its Markdown transcript)"
    )
    shown.add_argument(
        "--search",
        metavar="WORDS",
        help="the archived lines and saved tool results and inputs holding these words, best "
        "first (what the history_search tool answers), each with its segment, message and line",
    )
    transcripts.set_defaults(handler=_transcripts)
    return grep  # type: ignore[no-any-return]


def parse_grep(grep: argparse.ArgumentParser, words: list[str]) -> argparse.Namespace:
    """Parses ``grep``'s words: options anywhere, operands URL PATTERN [PATH] in order.

    Every word after ``--`` is an operand, even one that looks like an option (or is another
    ``--``), so a pattern may start with ``-``. Exits through ``grep.error`` on a wrong number
    of operands, like any argparse error.
    """
    takes_value = {
        flag for action in grep._actions if action.nargs != 0 for flag in action.option_strings
    }
    options: list[str] = []
    operands: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            operands += words[index:]
            break
        if word.startswith("-") and word != "-":
            options.append(word)
            if word in takes_value and index < len(words):
                options.append(words[index])
                index += 1
        else:
            operands.append(word)
    args = grep.parse_args(options)
    if len(operands) < 2:
        missing = ["URL", "PATTERN"][len(operands) :]
        grep.error(f"the following arguments are required: {', '.join(missing)}")
    if len(operands) > 3:
        grep.error(f"unrecognized arguments: {' '.join(operands[3:])}")
    args.url, args.pattern = operands[0], operands[1]
    args.path = operands[2] if len(operands) > 2 else "/"
    return args


# -- handlers -------------------------------------------------------------------------------


def _open(args: argparse.Namespace) -> Workspace:
    return open_workspace(args.url, args, must_exist=True, read_only=True)


def _tools(workspace: Workspace) -> dict[str, ToolFunction]:
    return {f.name: f for f in tool_functions(workspace)}


def _run_tool(tool: ToolFunction, out: IO[str], **arguments: object) -> int:
    """Runs one agent tool and prints its output; a failure is raised as the bare reason."""
    try:
        validated = tool.args_schema.model_validate(arguments)
    except ValidationError as exc:
        raise CliError(_invalid(exc)) from None
    try:
        text = tool.function(**dict(validated))
    except (WorkspaceError, ValueError) as exc:
        raise CliError(str(exc)) from None
    out.write(for_the_shell(text) + "\n")
    return 0


def _invalid(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(OPERANDS.get(str(part), str(part)) for part in error["loc"])
        problems.append(f"{where}: {error['msg']} (got {error['input']!r})")
    return "; ".join(problems)


def _ls(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    return _run_tool(_tools(_open(args))["ls"], out, path=args.path, offset=args.offset)


def _glob(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    tool = _tools(_open(args))["glob"]
    return _run_tool(tool, out, pattern=args.pattern, path=args.path, offset=args.offset)


def _cat(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    workspace = _open(args)
    if args.number or args.offset is not None or args.limit is not None:
        arguments: dict[str, object] = {"file_path": args.path}
        if args.offset is not None:
            arguments["offset"] = args.offset
        if args.limit is not None:
            arguments["limit"] = args.limit
        return _run_tool(_tools(workspace)["read_file"], out, **arguments)
    try:
        data = workspace.read_bytes(args.path)
    except WorkspaceError as exc:
        raise CliError(str(exc)) from None
    write_file_bytes(data, out)
    return 0


def _grep(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    workspace = _open(args)
    path = args.path
    # -A/-B override -C, as in rg (and the agent's grep tool).
    before = args.before_context or args.context
    after = args.after_context or args.context
    try:
        result = workspace.grep(
            args.pattern,
            path,
            glob=args.glob,
            fixed_strings=args.fixed_strings,
            ignore_case=args.ignore_case,
            multiline=args.multiline,
            output_mode=args.output_mode,
            before=before,
            after=after,
        )
        text = format_grep(
            result,
            pattern=args.pattern,
            path=workspace.resolve(path),
            head_limit=args.head_limit,
            offset=args.offset,
            line_numbers=not args.no_line_number,
            separators=before > 0 or after > 0,
        )
    except (WorkspaceError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if not result.files:
        err.write(for_the_shell(text) + "\n")
        return EXIT_NO_MATCH
    out.write(for_the_shell(text) + "\n")
    return 0


def _transcripts(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ctxfs.subagents._record import describe_relations

    workspace = _open(args)
    relations = describe_relations(workspace)  # sub-agent threads and their parents
    threads = sorted({*_threads(workspace), *relations})
    if args.thread is not None:
        if args.thread not in threads:
            known = ", ".join(repr(t) for t in threads) or "none"
            raise CliError(f"no transcripts for thread {args.thread!r} (threads: {known})")
        threads = [args.thread]
    if args.search is not None:
        return _search(workspace, args.search, args.thread, out)
    if args.show is None:
        if not threads:
            out.write(f"No transcripts in {workspace.url} (nothing was summarized yet)\n")
        for number, thread in enumerate(threads):
            related = "".join(f"{line}\n" for line in relations.get(thread, ()))
            out.write(("\n" if number else "") + _listing(workspace, thread) + related)
        return 0
    if len(threads) != 1:
        names = ", ".join(repr(t) for t in threads) or "none"
        raise CliError(f"choose the thread of segment {args.show} with --thread ({names})")
    segments = _segments(workspace, threads[0])
    segment = next((s for s in segments if s.number == args.show), None)
    if segment is None:
        numbers = ", ".join(str(s.number) for s in segments)
        raise CliError(f"thread {threads[0]!r} has no segment {args.show} (segments: {numbers})")
    try:
        markdown = workspace.read_bytes(segment.markdown_path)
    except WorkspaceError as exc:
        raise CliError(f"could not read {segment.markdown_path}: {exc}") from None
    digest = hashlib.sha256(markdown).hexdigest()
    if len(markdown) != segment.markdown_bytes or digest != segment.markdown_sha256:
        raise CliError(
            f"{segment.markdown_path} was changed after it was archived: its size and SHA-256 "
            "differ from those its record holds, so it is not the archived transcript "
            "(`ctxfs cat` prints what it holds now)"
        )
    write_file_bytes(markdown, out)
    return 0


def _search(workspace: Workspace, words: str, thread: str | None, out: IO[str]) -> int:
    from ctxfs.tools._history import hit_line, search_history

    notes: list[str] = []
    try:
        hits = search_history(workspace, words, thread_id=thread, notes=notes)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if not hits:
        out.write("No match in the archived conversations or the saved files\n")
    out.write("".join(f"{hit_line(hit)}\n" for hit in hits))
    out.write("".join(f"({note})\n" for note in notes))
    return 0


def _threads(workspace: Workspace) -> list[str]:
    """The thread ids that have transcripts, sorted: named by their index, or, when it is
    missing or damaged, by the heading of one of their segments (a run that stopped between
    committing its first segment and writing the index leaves records and no index)."""
    from ctxfs._archive._transcripts import INDEX_NAME

    try:
        folders = [e for e in workspace.ls(TRANSCRIPTS_DIR) if e.is_dir]
    except PathNotFoundError:
        return []
    threads = []
    for folder in folders:
        index = f"{folder.path}/{INDEX_NAME}"
        problem = None
        try:
            data = loads_bounded(workspace.read_text(index))
            threads.append(str(data["thread_id"]))
            continue
        except PathNotFoundError:
            pass  # nothing committed, or a run that stopped before writing the index
        except IsADirectoryPathError:
            problem = f"{index} is a folder, not a transcript index"
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            problem = f"{index} is not a transcript index ({_reason(exc)})"
        thread = _thread_of_segments(workspace, folder.path)
        if thread is not None:
            threads.append(thread)
        elif problem is not None:
            raise ArchiveError(problem)
    return sorted(threads)


def _thread_of_segments(workspace: Workspace, folder: str) -> str | None:
    """The thread whose segments ``folder`` holds, read from their Markdown headings."""
    from ctxfs._archive._codec import markdown_thread
    from ctxfs._archive._segment import segment_number, thread_transcript_dir

    names = sorted(
        e.path for e in workspace.ls(folder) if e.path.endswith(".md") and segment_number(e.path)
    )
    for path in names:
        try:
            thread = markdown_thread(workspace.read_bytes(path))
        except WorkspaceError:
            continue
        if thread is not None and thread_transcript_dir(thread) == folder:
            return thread
    return None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "its JSON is nested too deeply"
    if isinstance(exc, KeyError):
        return f"no {exc} field"
    return str(exc) or type(exc).__name__


def _segments(
    workspace: Workspace, thread: str, notes: list[str] | None = None
) -> tuple[ArchiveSegment, ...]:
    """The thread's segments, as the archive reads them from its index (or around it, from
    the segments' records, when it is missing or damaged: then ``notes`` says so)."""
    from ctxfs._archive._transcripts import TranscriptArchive

    archive = TranscriptArchive(workspace, thread)
    try:
        segments = archive.segments()
        if notes is not None:
            notes += archive.repairs
        return segments
    except (WorkspaceError, ValueError, TypeError, KeyError, RecursionError) as exc:
        reason = _reason(exc)
        if _caused_by_read_only(exc):
            reason = (
                "it is damaged, and rebuilding it from the segment records means writing, "
                "which this command does not do"
            )
        raise ArchiveError(
            f"the transcript index of thread {thread!r} cannot be read ({reason})"
        ) from None


def _caused_by_read_only(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, ReadOnlyPathError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _listing(workspace: Workspace, thread: str) -> str:
    from ctxfs._archive._branches import branches
    from ctxfs._archive._transcripts import TranscriptArchive

    archive = TranscriptArchive(workspace, thread)
    notes: list[str] = []
    segments = _segments(workspace, thread, notes)
    lines = [f"Thread {thread!r}: {len(segments)} segment(s) in {archive.directory}/"]
    lines += [f"  ({note})" for note in notes]
    for segment in segments:
        lines.append(_segment_line(segment))
    found = branches(segments)
    if len(found) > 1:  # a forked thread: which segments each of its histories is made of
        lines.append(f"  {len(found)} branches:")
        for branch in found:
            numbers = ", ".join(str(n) for n in branch.numbers)
            forked = f" (forked after segment {branch.forked_from})" if branch.forked_from else ""
            lines.append(f"    branch {branch.number}: segments {numbers}{forked}")
    return "\n".join(lines) + "\n"


def _segment_line(segment: ArchiveSegment) -> str:
    return (
        f"  {segment.number:>3}  messages {segment.start}-{segment.stop - 1}  "
        f"{segment.tokens:,} tokens  {segment.created}  {segment.markdown_path}"
    )


_LS = """List a folder of a workspace, as the agent's ls tool shows it: one path per line,
folders end with '/'. The areas ctxfs writes (/tool_results, /tool_inputs, /transcripts) are
ordinary folders."""

_CAT = """Print a file of a workspace byte-exact (an offloaded tool result, a saved tool input, a
transcript). With -n, --offset or --limit: a page numbered as the agent's read_file tool shows
it."""

_GLOB = """Find files by name pattern, as the agent's glob tool: '*.md' matches at any depth,
'**' spans folders, '{a,b}' alternates."""

_GREP = """Search the text files of a workspace with a regular expression (Python 'regex'
syntax), with the agent's grep tool's semantics and rg's flags. Prints matching lines
(path:line:text) unless -l or -c is given. Use -- before a PATTERN that starts with '-'.
Exit status: 0 when something matched, 1 when nothing did, 2 on an error."""

_TRANSCRIPTS = """List the conversation segments ctxfs archived before summarizing (from each
thread's index.json), or print one with --show N: its Markdown transcript, every message
verbatim. The lossless .jsonl file sits next to it. --search WORDS ranks the archived lines
(and the saved tool results and inputs) holding the words, as the history_search tool does.
A forked thread (time travel, a rewind)
lists its branches and the segments each is made of. A sub-agent's thread says which thread
handed it its task, and a parent thread lists the sub-agent threads it started."""
