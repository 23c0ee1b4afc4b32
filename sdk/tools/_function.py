"""ToolFunction: a tool as a plain callable with a JSON schema, that answers errors as text.

This is the one boundary between a model's tool call and the workspace: arguments are
validated here, and every failure (bad arguments, a workspace error, anything unexpected)
becomes a string starting with ``Error:`` that says what went wrong and what to do next.
Nothing raises into the agent loop.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ValidationError

from ctxfs._errors import (
    BackendError,
    IsADirectoryPathError,
    NotADirectoryPathError,
    NotTextError,
    PathNotFoundError,
    WorkspaceError,
)
from ctxfs._json import loads_bounded
from ctxfs._workspace._quote import quote
from ctxfs.tools._names import DEFAULT_NAMES, ToolNames

__all__ = ["ToolFunction", "error_text"]

_log = logging.getLogger("ctxfs.tools")

_MAX_SHOWN_INPUT = 80

_UNION_TAGS = frozenset({"constrained-int", "int", "str", "none", "float", "bool"})
"""Where pydantic names the arm of a union in an error's location, left out of the text."""


@dataclass(frozen=True, slots=True)
class ToolFunction:
    """One agent tool as a plain callable: name, description, JSON schema, and the call.

    For agents that do not use LangChain: send :meth:`openai_spec` (or :attr:`parameters`)
    to the model, then answer each tool call with ``function.invoke(call_arguments)``.
    The answer is always a string; failures are strings that start with ``Error:``.

    Example:
        >>> from ctxfs import Workspace
        >>> from ctxfs.tools import tool_functions
        >>> tools = {f.name: f for f in tool_functions(Workspace("memory://doc"))}
        >>> tools["write_file"](file_path="/a.txt", content="hi\\n")
        'Created /a.txt (3 bytes)'
        >>> tools["read_file"].invoke('{"file_path": "/a.txt"}')
        '     1\\thi'

    Attributes:
        name: The tool name the model calls (``read_file``...).
        description: What the model reads to decide when and how to call the tool.
        args_schema: The pydantic model of the arguments; the JSON schema comes from it.
        function: The implementation; called with the validated arguments as keyword
            arguments (Python field names, e.g. ``after`` for grep's ``-A``). It may raise;
            the call turns that into ``Error:`` text.
        clip_output: Applied to every answer, errors included, to keep it within the output
            budget of the tools (see :func:`~ctxfs.tools.tool_functions`); ``None`` leaves
            answers as they are.
    """

    name: str
    description: str
    args_schema: type[BaseModel]
    function: Callable[..., str] = field(repr=False)
    clip_output: Callable[[str], str] | None = field(default=None, repr=False)

    @property
    def parameters(self) -> dict[str, object]:
        """The JSON schema of the arguments (OpenAI function-calling style), a fresh copy."""
        schema = self.args_schema.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema

    def openai_spec(self) -> dict[str, object]:
        """The tool as OpenAI's ``{"type": "function", "function": {...}}`` spec."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def __call__(self, **arguments: object) -> str:
        """Run the tool with the model's arguments (aliases such as ``"-A"`` accepted).

        Returns:
            The tool result, or a string starting with ``Error:``; never raises.
        """
        validated = self.validate(arguments)
        if isinstance(validated, str):
            answer = validated
        else:
            try:
                answer = self.function(**dict(validated))
            except Exception as exc:  # the agent loop must never see an exception
                answer = error_text(exc)
        return answer if self.clip_output is None else self.clip_output(answer)

    def validate(self, arguments: Mapping[str, object]) -> BaseModel | str:
        """The validated arguments, or the ``Error:`` text that says what is wrong with them.

        A validator that raises something else than a validation error (a constraint that
        cannot compare the value it got) is answered the same way, never raised.
        """
        try:
            return self.args_schema.model_validate(dict(arguments))
        except ValidationError as exc:
            return self.validation_error_text(exc)
        except (TypeError, ValueError) as exc:
            return f"Error: invalid arguments for {self.name}: {exc}. " + self._call_again()

    def invoke(self, arguments: Mapping[str, object] | str) -> str:
        """Run the tool with arguments as a mapping or as a JSON object string.

        Returns:
            The tool result, or a string starting with ``Error:``; never raises.
        """
        if isinstance(arguments, str):
            try:
                arguments = loads_bounded(arguments, unique_keys=False) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return (
                    f"Error: the arguments of {self.name} are not valid JSON ({exc.msg} at "
                    f"position {exc.pos}); send a JSON object of arguments"
                )
        if not isinstance(arguments, Mapping):
            return (
                f"Error: the arguments of {self.name} must be a JSON object, not "
                f"{type(arguments).__name__}; valid arguments: {self._signature()}"
            )
        return self(**{str(key): value for key, value in arguments.items()})

    def validation_error_text(self, exc: ValidationError) -> str:
        """The ``Error:`` text for arguments that failed validation."""
        problems = []
        errors = exc.errors()
        valued = {error["loc"][:1] for error in errors if error["type"] != "none_required"}
        for error in errors:
            if error["type"] == "none_required" and error["loc"][:1] in valued:
                continue  # the null arm of an optional argument given a wrong value
            where = ".".join(str(part) for part in error["loc"] if part not in _UNION_TAGS)
            if error["type"] == "extra_forbidden":  # a name the caller made up: cut short
                problems.append(f"unknown argument {quote(where)}")
            elif error["type"] == "missing":
                problems.append(f"{where} is required")
            else:
                shown = repr(error["input"])
                if len(shown) > _MAX_SHOWN_INPUT:
                    shown = shown[:_MAX_SHOWN_INPUT] + "…"
                problems.append(f"{where}: {error['msg']} (got {shown})")
        return f"Error: invalid arguments for {self.name}: {'; '.join(problems)}. " + (
            self._call_again()
        )

    def _call_again(self) -> str:
        return f"Call {self.name} again with valid arguments: {self._signature()}"

    def _signature(self) -> str:
        parts = []
        for name, info in self.args_schema.model_fields.items():
            shown = info.alias or name
            parts.append(f"{shown} (required)" if info.is_required() else shown)
        return ", ".join(parts)


def error_text(exc: Exception, *, names: ToolNames = DEFAULT_NAMES) -> str:
    """The ``Error:`` text for an exception raised while a tool ran.

    Workspace errors carry their own message, completed with a next step where the message
    has none (naming the tools as ``names`` says); a ``ValueError`` is a bad argument value;
    anything else is an internal error, logged with its traceback for the developer and
    summarised in one line for the model.
    """
    if isinstance(exc, WorkspaceError):
        return f"Error: {exc.message}{_next_step(exc, names)}"
    if isinstance(exc, UnicodeEncodeError):  # JSON's "\ud800": half of a UTF-16 pair
        bad = exc.object[exc.start : exc.end]
        return (
            f"Error: the text is not valid Unicode: it holds a lone surrogate ({quote(bad)}) at "
            f"character {exc.start}; send the text without it"
        )
    if isinstance(exc, ValueError):
        return f"Error: {exc}"
    _log.exception("tool raised an unexpected exception")
    return f"Error: internal error ({type(exc).__name__}: {exc})"


def _next_step(exc: WorkspaceError, names: ToolNames) -> str:
    if isinstance(exc, PathNotFoundError):
        return f"; check the path with {names.ls} or {names.glob} (paths start at /)"
    if isinstance(exc, NotTextError):
        return f"; {names.read_file} and {names.edit_file} work only on UTF-8 text files"
    if isinstance(exc, BackendError):
        return "; the storage could not be asked, try again, and if it keeps failing, stop"
    if ";" in exc.message:  # the message already says what to do
        return ""
    if isinstance(exc, IsADirectoryPathError):
        return f"; list it with {names.ls}, or give a file path"
    if isinstance(exc, NotADirectoryPathError):
        return f"; read it with {names.read_file}"
    return ""
