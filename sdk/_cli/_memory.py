"""``ctxfs memory show | search | history | forget | rollback | consolidate``, from a shell.

``show``, ``search`` and ``history`` open the workspace read-only; ``forget``, ``rollback``
and ``consolidate`` write one memory document as a new version (by compare-and-swap, like
every memory update); ``forget`` changes nothing if one of the ids it is given is not
there. A malformed memory file is reported by file and field, exit status 2, and left as
it is.
"""

from __future__ import annotations

import argparse
import json
from typing import IO, Any

from ctxfs._cli._common import CliError, add_storage_arguments, open_workspace
from ctxfs._workspace._workspace import Workspace

__all__ = ["add_memory_parser"]

_DESCRIPTION = (
    "Long-term memory kept under /memories/ in a workspace: one document per namespace "
    "(a user, an agent, a user's agent), with facts, user context and history."
)


def add_memory_parser(commands: Any) -> None:
    """Adds ``memory`` and its subcommands to ``commands``."""
    common = argparse.ArgumentParser(add_help=False)
    add_storage_arguments(common)
    common.add_argument(
        "url", metavar="URL", help="the workspace: a folder, memory://name, s3://bucket/prefix"
    )
    memory = commands.add_parser(
        "memory",
        help="show, search, version or forget long-term memory",
        description=_DESCRIPTION,
    )
    actions = memory.add_subparsers(dest="action", required=True, metavar="ACTION")

    show = actions.add_parser(
        "show",
        parents=[common],
        help="list the memories, or print one",
        description="Without --namespace, list every memory with its fact count; with it, "
        "print that memory (Markdown, or the stored JSON with --json).",
    )
    show.add_argument("-n", "--namespace", metavar="NS", help="e.g. alice or alice/coder")
    show.add_argument("--json", action="store_true", help="print the stored JSON document")
    show.add_argument(
        "--version", type=int, metavar="N", help="print version N (see 'ctxfs memory history')"
    )
    show.set_defaults(handler=_show)

    history = actions.add_parser(
        "history",
        parents=[common],
        help="list the versions of one memory",
        description="Every version of one memory, oldest first: its number, when, what made "
        "it (learn, forget, rollback, consolidate...), who, from which thread, what it did.",
    )
    history.add_argument("-n", "--namespace", metavar="NS", required=True, help="e.g. alice")
    history.set_defaults(handler=_history)

    rollback = actions.add_parser(
        "rollback",
        parents=[common],
        help="write an old version's facts and summaries as a new version",
        description="Undo a bad extraction: the facts and summaries of version N become a "
        "new version (no version is removed, so a rollback can be rolled back).",
    )
    rollback.add_argument("-n", "--namespace", metavar="NS", required=True, help="e.g. alice")
    rollback.add_argument("--to", type=int, required=True, metavar="N", help="the version")
    rollback.set_defaults(handler=_rollback)

    consolidate = actions.add_parser(
        "consolidate",
        parents=[common],
        help="merge near-duplicate facts and drop expired ones, as a new version",
        description="Merge facts of one scope whose words overlap by at least --similarity "
        "and drop expired facts, written as a new version (contradictions need a model: "
        "LongTermMemory.consolidate(model=...) from code).",
    )
    consolidate.add_argument("-n", "--namespace", metavar="NS", required=True, help="e.g. alice")
    consolidate.add_argument(
        "--similarity",
        type=float,
        default=0.8,
        metavar="X",
        help="word overlap (Jaccard, 0 to 1) that makes two facts one (default 0.8)",
    )
    consolidate.add_argument(
        "--dry-run", action="store_true", help="say what would change, write nothing"
    )
    consolidate.set_defaults(handler=_consolidate)

    search = actions.add_parser(
        "search",
        parents=[common],
        help="keyword search over the facts and the archived transcripts",
        description="BM25 keyword search over the memories' facts and the archived "
        "transcripts, best first. A namespace narrows the facts to it and the transcripts to "
        "the threads it learned from.",
    )
    search.add_argument("query", metavar="QUERY", help="words to look for")
    search.add_argument("-n", "--namespace", metavar="NS", help="e.g. alice or alice/coder")
    search.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="only facts with this tag"
    )
    search.add_argument(
        "--thread",
        action="append",
        default=None,
        metavar="ID",
        help="only transcripts of this thread (repeatable)",
    )
    kinds = search.add_mutually_exclusive_group()
    kinds.add_argument("--facts", action="store_true", help="search the facts only")
    kinds.add_argument("--transcripts", action="store_true", help="search the transcripts only")
    search.add_argument("--task", metavar="ID", help="also the facts of this task")
    search.add_argument("--project", metavar="ID", help="the facts of this project")
    search.add_argument("-k", type=int, default=5, metavar="N", help="at most N hits (default 5)")
    search.add_argument("--json", action="store_true", help="one JSON object per hit")
    search.set_defaults(handler=_search)

    forget = actions.add_parser(
        "forget",
        parents=[common],
        help="remove facts by id",
        description="Remove facts from one memory by id (ids are shown by 'ctxfs memory "
        "show'). If any id is not there, nothing is removed.",
    )
    forget.add_argument("-n", "--namespace", metavar="NS", required=True, help="e.g. alice")
    forget.add_argument("ids", metavar="FACT_ID", nargs="+", help="e.g. fact-1a2b3c4d5e6f")
    forget.set_defaults(handler=_forget)


def _namespace(text: str) -> tuple[str, ...]:
    from ctxfs.memory._document import check_namespace

    try:
        return check_namespace(tuple(part for part in text.split("/") if part))
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _without_path(message: str, path: str) -> str:
    """``message`` without the ``path: `` it starts with (the line names the path once)."""
    return message.removeprefix(f"{path}: ")


def _open(args: argparse.Namespace, *, write: bool = False) -> Workspace:
    return open_workspace(args.url, args, must_exist=True, read_only=not write)


def _show(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ctxfs.memory import MemoryFile, render_markdown
    from ctxfs.memory._retrieval import memory_documents

    workspace = _open(args)
    if args.namespace is None:
        damaged: list[str] = []

        def skipped(path: str, exc: Exception) -> None:
            damaged.append(path)
            err.write(f"ctxfs memory: {path} cannot be read: {_without_path(str(exc), path)}\n")

        documents = list(memory_documents(workspace, on_skip=skipped))
        if not documents and not damaged:
            out.write(f"No memories in {workspace.url}\n")
        for path, document in documents:
            name = "/".join(document.namespace)
            out.write(f"{name}\t{len(document.facts)} facts\t{path}\n")
        return 2 if damaged else 0
    memory = MemoryFile(workspace, _namespace(args.namespace))
    if not workspace.exists(memory.path):
        raise CliError(f"no memory for {args.namespace!r} ({memory.path} does not exist)")
    document = memory.load()
    if args.version is not None:
        try:
            document = memory.version(args.version)
        except LookupError as exc:
            raise CliError(str(exc)) from None
    if args.json:
        out.write(json.dumps(document.model_dump(mode="json"), ensure_ascii=False, indent=2))
        out.write("\n")
    else:
        out.write(render_markdown(document))
    return 0


def _search(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ctxfs.memory import KeywordRetriever, Scope

    if args.k < 1:
        raise CliError("-k must be at least 1")
    if not any(character.isalnum() for character in args.query):
        raise CliError("the query holds no word to search for; give some words")
    kinds: tuple[Any, ...] = ("fact", "transcript")
    if args.facts:
        kinds = ("fact",)
    elif args.transcripts:
        kinds = ("transcript",)
    scope = Scope(
        namespace=_namespace(args.namespace) if args.namespace else (),
        tags=tuple(args.tag),
        threads=tuple(args.thread) if args.thread is not None else None,
        kinds=kinds,
        task=args.task,
        project=args.project,
    )
    hits = KeywordRetriever(_open(args)).search(args.query, k=args.k, scope=scope)
    for hit in hits:
        if args.json:
            record = {
                "kind": hit.kind,
                "score": round(hit.score, 4),
                "path": hit.path,
                "ref": hit.ref,
                "text": hit.text,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            text = " ".join(hit.text.split())
            out.write(f"{hit.score:.3f}\t{hit.kind}\t{hit.path} {hit.ref}\n\t{text}\n")
    if not hits:  # on stderr, as grep says it: stdout stays the hits (JSON lines with --json)
        searched = {("fact",): "facts", ("transcript",): "archived transcripts"}
        what = searched.get(kinds, "facts or the archived transcripts")
        query = " ".join(args.query.split())
        query = query if len(query) <= 200 else query[:200] + "…"
        err.write(f"No match for {query!r} in the {what}\n")
    return 0 if hits else 1


def _forget(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ctxfs.memory import MemoryFile

    memory = MemoryFile(_open(args, write=True), _namespace(args.namespace))
    known = {fact.id for fact in memory.load().facts}
    missing = [i for i in args.ids if i not in known]
    if missing:
        raise CliError(
            f"no fact {', '.join(missing)} in the memory {args.namespace!r}; nothing was "
            "removed (ids are listed by 'ctxfs memory show')"
        )
    drop = set(args.ids)
    memory.update(
        lambda d: d.model_copy(update={"facts": tuple(f for f in d.facts if f.id not in drop)}),
        kind="forget",
        by="ctxfs memory forget",
        note="removed " + ", ".join(sorted(drop)),
    )
    out.write(f"Forgot {len(drop)} fact{'s' if len(drop) != 1 else ''} in {memory.path}\n")
    return 0


def _existing(args: argparse.Namespace, *, write: bool = False) -> Any:
    from ctxfs.memory import MemoryFile

    memory = MemoryFile(_open(args, write=write), _namespace(args.namespace))
    if not memory.workspace.exists(memory.path):
        raise CliError(f"no memory for {args.namespace!r} ({memory.path} does not exist)")
    return memory


def _history(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ctxfs._sections import one_line

    for document in _existing(args).history():
        change = document.change
        when = document.updated_at.isoformat() if document.updated_at else "-"
        if change is None:
            what = "before versions"
        else:
            what = change.kind
            what += f" by {one_line(change.by)}" if change.by else ""
            what += f" from {one_line(change.thread)}" if change.thread else ""
            what += f": {one_line(change.note)}" if change.note else ""
        out.write(f"{document.revision}\t{when}\t{len(document.facts)} facts\t{what}\n")
    return 0


def _rollback(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    memory = _existing(args, write=True)
    try:
        written = memory.rollback(args.to, by="ctxfs memory rollback")
    except LookupError as exc:
        raise CliError(str(exc)) from None
    out.write(
        f"Version {written.revision} of {memory.path} holds version {args.to}'s "
        f"{len(written.facts)} facts\n"
    )
    return 0


def _consolidate(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ctxfs.memory import LongTermMemory

    if not 0.0 < args.similarity <= 1.0:
        raise CliError("--similarity must be greater than 0 and at most 1")
    file = _existing(args, write=not args.dry_run)
    memory = LongTermMemory(file.workspace, file.namespace)
    done = memory.consolidate(
        similarity=args.similarity, dry_run=args.dry_run, by="ctxfs memory consolidate"
    )
    for ids, into in done.merged:
        out.write(f"merge {', '.join(ids)} -> {into}\n")
    for fact in done.expired:
        out.write(f"expired {fact}\n")
    if not done.changed:
        out.write("Nothing to consolidate\n")
    elif args.dry_run:
        out.write(f"Would write a new version: {done.note()} (nothing written)\n")
    else:
        out.write(f"Wrote version {done.document.revision}: {done.note()}\n")
    return 0
