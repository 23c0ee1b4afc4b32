"""``ctxfs session show | resume``: look at staged workflows and resume them from a shell.

``show`` reads the state files under ``/sessions/`` of any workspace (read-only). ``resume``
needs the workflow's stages, which are code: ``--workflow FILE.py:NAME`` (or
``module:NAME``) names a function that takes the :class:`~ctxfs.Workspace` and returns the
:class:`~ctxfs.workflows.Workflow`. Exit status: ``0`` completed (or shown), ``1`` halted on an
invalid stage output or stopped by a stage's agent that raised (the record is printed; the
state file holds it), ``2`` an error, the workflow's own code that fails to load or to build
the workflow included (its exception is named, never reported as a defect of ctxfs).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from typing import IO, Any

from ctxfs._cli._common import CliError, add_storage_arguments, open_workspace
from ctxfs._errors import WorkflowStateError
from ctxfs._workspace._workspace import Workspace
from ctxfs.workflows import Workflow, list_workflows, read_state, runner_status, state_path
from ctxfs.workflows._stage import check_name
from ctxfs.workflows._state import WorkflowState

__all__ = ["EXIT_HALTED", "add_session_parser", "describe"]

EXIT_HALTED = 1
"""Exit status of ``resume`` when the workflow halted on an invalid stage output, or a
stage's agent raised."""

_SESSION = (
    "Staged workflows keep their state in /sessions/<workflow id>.json of their workspace. "
    "'show' lists the workflows of a workspace, or shows one: its stages, the halt record of "
    "an invalid output, its memory snapshots. 'resume' continues one from its first "
    "incomplete stage."
)
_RESUME = (
    "Resume a workflow from its first incomplete stage. Its stages are code: --workflow "
    "names a function (in a .py file or an importable module) that takes the workspace and "
    "returns the Workflow, e.g. --workflow examples/workflow_research.py:build_workflow. A "
    "halted workflow's recorded output (fixed by hand in the state file's halt.raw_output) is "
    "validated again; --retry runs the halted stage again instead. Exit status: 0 completed, "
    "1 halted (or a stage's agent raised), 2 an error."
)


def add_session_parser(commands: Any) -> None:
    """Adds ``session show`` and ``session resume`` to ``commands``."""
    common = argparse.ArgumentParser(add_help=False)
    add_storage_arguments(common)
    url_help = "the workspace: a folder, memory://name, s3://bucket/prefix, any fsspec URL"
    session = commands.add_parser(
        "session", help="show or resume staged workflows", description=_SESSION
    )
    actions = session.add_subparsers(dest="action", required=True)
    show = actions.add_parser(
        "show",
        parents=[common],
        help="list the workflows of a workspace, or show one",
        description=_SESSION,
    )
    show.add_argument("url", metavar="URL", help=url_help)
    show.add_argument(
        "workflow_id", metavar="WORKFLOW_ID", nargs="?", type=_workflow_id, help="the workflow"
    )
    show.add_argument("--json", action="store_true", help="print the state file as it is")
    show.set_defaults(handler=_show)
    resume = actions.add_parser(
        "resume", parents=[common], help="resume a workflow", description=_RESUME
    )
    resume.add_argument("url", metavar="URL", help=url_help)
    resume.add_argument(
        "workflow_id", metavar="WORKFLOW_ID", type=_workflow_id, help="the workflow"
    )
    resume.add_argument(
        "--workflow",
        required=True,
        metavar="FILE.py:NAME",
        help="a function from the workspace to the Workflow (or module:NAME)",
    )
    resume.add_argument(
        "--retry", action="store_true", help="run a halted stage again instead of re-validating"
    )
    resume.set_defaults(handler=_resume)


def _workflow_id(text: str) -> str:
    """A workflow id as the library takes it, checked before any file is read."""
    try:
        return check_name("workflow_id", text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _show(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    workspace = open_workspace(args.url, args, must_exist=True, read_only=True)
    if args.workflow_id is None:
        ids = list_workflows(workspace)
        if not ids:
            out.write(f"no workflows in {workspace.url}\n")
        unreadable = 0
        for workflow_id in ids:
            try:
                state = read_state(workspace, workflow_id)
            except WorkflowStateError as exc:  # one broken file does not hide the others
                first, _, rest = str(exc).partition("\n")
                more = f" (and {rest.count(chr(10)) + 1} more)" if rest else ""
                out.write(f"{workflow_id}  unreadable: {first}{more}\n")
                unreadable += 1
                continue
            done = len(state.completed_stages)
            where = f", at {state.current_stage}" if state.current_stage else ""
            out.write(
                f"{workflow_id}  {runner_status(state)}{where}  {done}/{len(state.stages)} stages  "
                f"updated {state.updated_at.isoformat()}\n"
            )
        # listed, but the status says something needs mending, as ``memory show`` does
        return 2 if unreadable else 0
    if args.json:
        state = read_state(workspace, args.workflow_id)  # checks it first
        out.write(workspace.read_text(state_path(state.workflow_id)))
        return 0
    out.write(describe(read_state(workspace, args.workflow_id)))
    return 0


def describe(state: WorkflowState) -> str:
    """A workflow's state as a person reads it."""
    done = {record.stage: record for record in state.completed_stages}
    lines = [
        f"workflow {state.workflow_id}: {runner_status(state)} (version {state.version}, "
        f"updated {state.updated_at.isoformat()})",
        f"task: {state.task}",
        f"state file: {state_path(state.workflow_id)}",
        "stages:",
    ]
    width = max(len(name) for name in state.stages)
    for number, name in enumerate(state.stages, 1):
        record = done.get(name)
        if record is not None:
            confidence = record.output.get("confidence")
            extra = f"  confidence {confidence:<6}" if isinstance(confidence, str) else ""
            lines.append(f"  {number}. {name:<{width}}  completed{extra}  {record.output_path}")
        elif state.halt is not None and state.halt.stage == name:
            lines.append(f"  {number}. {name:<{width}}  HALTED: invalid output (below)")
        elif name == state.current_stage:
            lines.append(f"  {number}. {name:<{width}}  next")
        else:
            lines.append(f"  {number}. {name:<{width}}  pending")
    if state.halt is not None:
        raw = json.dumps(state.halt.raw_output, indent=2, ensure_ascii=False)
        lines += [
            f"halted at {state.halt.stage}: its output does not match the stage's schema:",
            *(f"  {line}" for line in state.halt.error.splitlines()),
            "raw output (fix it in the state file's halt.raw_output, then resume):",
            *(f"  {line}" for line in raw.splitlines()),
        ]
    if state.progress is not None:
        lines.append(
            f"last checkpoint: {state.progress.stage}: {state.progress.note} "
            f"({state.progress.at.isoformat()})"
        )
    if state.errors:
        lines.append(f"errors so far: {len(state.errors)}")
        lines += [f"  {e.stage}: {e.error.splitlines()[0]}" for e in state.errors]
    if state.memory_snapshots:
        lines.append("memory snapshots:")
        lines += [f"  {s.stage}: {s.summary}" for s in state.memory_snapshots]
    if state.set_aside:
        lines.append("stage files set aside (not written by the runner, never trusted):")
        lines += [f"  {s.stage}: {s.path} -> {s.kept_as}" for s in state.set_aside]
    text = "\n".join(lines) + "\n"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate, escaped


def _resume(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    workspace = open_workspace(args.url, args, must_exist=True)
    build = _load(args.workflow)
    try:
        workflow = build(workspace)
    except Exception as exc:  # the user's code: its failure is no defect of ctxfs
        raise CliError(f"--workflow {args.workflow!r}: it raised {_exception(exc)}") from None
    if not isinstance(workflow, Workflow):
        raise CliError(
            f"{args.workflow} returned {type(workflow).__name__}, not a Workflow; it must take "
            "the workspace and return the Workflow"
        )
    errors = len(read_state(workspace, args.workflow_id).errors)
    try:
        run = workflow.resume(args.workflow_id, retry=args.retry)
    except Exception:
        # A stage's agent that raised is recorded in the state file as one more error of an
        # interrupted workflow: that is the workflow stopping, not a defect of ctxfs.
        state = _state_after(workspace, args.workflow_id)
        if state is None or state.status != "interrupted" or len(state.errors) <= errors:
            raise
        out.write(describe(state))
        failed = state.errors[-1]
        err.write(
            f"ctxfs session: stage {failed.stage!r} stopped the workflow: "
            f"{failed.error.splitlines()[0]} (recorded in {state_path(state.workflow_id)}; "
            "resume it to run the stage again)\n"
        )
        return EXIT_HALTED
    out.write(describe(run.state))
    return EXIT_HALTED if run.status == "halted" else 0


def _state_after(workspace: Workspace, workflow_id: str) -> WorkflowState | None:
    """The state file after a failed resume, or ``None`` if it cannot be read."""
    try:
        return read_state(workspace, workflow_id)
    except Exception:  # the original exception is the one to report
        return None


def _exception(exc: BaseException) -> str:
    """``exc`` as one line: its type and message (a syntax error: its line)."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _load(spec: str) -> Callable[[Workspace], object]:
    """The function named by ``FILE.py:NAME`` or ``module:NAME``."""
    source, _, name = spec.rpartition(":")
    if not source or not name:
        raise CliError(f"--workflow {spec!r}: give FILE.py:NAME or module:NAME")
    try:
        if source.endswith(".py"):
            if not os.path.isfile(source):
                raise CliError(f"--workflow {spec!r}: no such file {source}")
            module_name = f"_ctxfs_workflow_{abs(hash(os.path.abspath(source)))}"
            loader_spec = importlib.util.spec_from_file_location(module_name, source)
            if loader_spec is None or loader_spec.loader is None:
                raise CliError(f"--workflow {spec!r}: cannot load {source}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[module_name] = module  # dataclasses and pydantic look it up
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(source)
    except ImportError as exc:
        raise CliError(f"--workflow {spec!r}: cannot import {source}: {exc}") from None
    except CliError:
        raise
    except Exception as exc:  # the user's code ran and failed: name it, as Python would
        raise CliError(f"--workflow {spec!r}: loading {source} raised {_exception(exc)}") from None
    except SystemExit as exc:  # a script's own exit when loaded is no exit status of ctxfs
        raise CliError(
            f"--workflow {spec!r}: loading {source} called sys.exit({exc.code!r}); the file "
            "must define the function without running anything"
        ) from None
    build = getattr(module, name, None)
    if not callable(build):
        raise CliError(f"--workflow {spec!r}: {source} has no function {name!r}")
    return build  # type: ignore[no-any-return]
