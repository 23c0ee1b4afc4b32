"""``ctxfs memory show | search | forget``: long-term memory of any workspace, from a shell.

``show`` and ``search`` open the workspace read-only; ``forget`` rewrites one memory
document (by compare-and-swap, like every memory update) and changes nothing if one of the
ids it is given is not there. A malformed memory file is reported by file and field, exit
status 2, and left as it is.
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
    """Adds ``memory`` and its subcommands ``show``, ``search`` and ``forget`` to ``commands``."""
    common = argparse.ArgumentParser(add_help=False)
    add_storage_arguments(common)
    common.add_argument(
        "url", metavar="URL", help="the workspace: a folder, memory://name, s3://bucket/prefix"
    )
    memory = commands.add_parser(
        "memory", help="show, search or forget long-term memory", description=_DESCRIPTION
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
    show.set_defaults(handler=_show)

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


def _open(args: argparse.Namespace, *, write: bool = False) -> Workspace:
    return open_workspace(args.url, args, must_exist=True, read_only=not write)


def _show(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ctxfs.memory import MemoryFile, render_markdown
    from ctxfs.memory._retrieval import memory_documents

    workspace = _open(args)
    if args.namespace is None:
        documents = list(memory_documents(workspace))
        if not documents:
            out.write(f"No memories in {workspace.url}\n")
        for path, document in documents:
            name = "/".join(document.namespace)
            out.write(f"{name}\t{len(document.facts)} facts\t{path}\n")
        return 0
    memory = MemoryFile(workspace, _namespace(args.namespace))
    if not workspace.exists(memory.path):
        raise CliError(f"no memory for {args.namespace!r} ({memory.path} does not exist)")
    document = memory.load()
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
        lambda d: d.model_copy(update={"facts": tuple(f for f in d.facts if f.id not in drop)})
    )
    out.write(f"Forgot {len(drop)} fact{'s' if len(drop) != 1 else ''} in {memory.path}\n")
    return 0
