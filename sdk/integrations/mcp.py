"""An MCP server over a ctxfs workspace, for agents outside Python (Claude Code, editors).

From a shell: ``ctxfs mcp serve WORKSPACE_URL`` serves a folder, ``memory://name`` or
``s3://bucket/prefix`` over stdio. From Python, :func:`create_server` builds the server and
:func:`serve_stdio` runs it::

    import anyio
    from ctxfs import Workspace
    from ctxfs.integrations.mcp import create_server, serve_stdio

    server = create_server(Workspace("s3://bucket/agents/run-1"))
    anyio.run(serve_stdio, server)

The tools follow the reference filesystem server's names and arguments where they overlap
(``list_directory``, ``read_text_file`` with ``head``/``tail``, ``read_multiple_files``,
``write_file``, ``edit_file`` with ``edits``/``dryRun``, ``search_files`` with
``excludePatterns``, ``get_file_info``, ``list_allowed_directories``), and add what it lacks:
``grep`` over file contents and paged reads (``offset``/``limit``/``column``). Every answer
fits ``max_output_tokens``: the reading tools page, a larger output of another tool is saved
under ``/tool_results`` and the answer points to it. Failures are tool results with
``isError`` set and a text that says what to do next, never a protocol error or a crash.
The files ctxfs saved (offloaded results and inputs, transcripts) are listed as resources,
and any workspace file can be read by its ``ctxfs:///<path>`` URI.

Needs the ``mcp`` extra: ``pip install 'ctxfs[mcp]'``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, Final

from ctxfs._errors import PathNotFoundError, WorkspaceError
from ctxfs._tokens import TokenCounter
from ctxfs._workspace._workspace import Workspace
from ctxfs.integrations._mcp_resources import (
    DEFAULT_PAGE_SIZE,
    ResourceContent,
    list_resources,
    read_resource,
)
from ctxfs.integrations._mcp_run import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    in_worker,
    run_until_client_leaves,
)
from ctxfs.integrations._mcp_tools import (
    MCP_NAMES,
    URI_PREFIX,
    McpAnswer,
    McpTool,
    McpToolbox,
    resource_uri,
)
from ctxfs.tools._function import error_text

if TYPE_CHECKING:
    import mcp_types
    from mcp.server import Server

__all__ = [
    "DEFAULT_MAX_CONCURRENT_CALLS",
    "DEFAULT_MAX_RESOURCE_BYTES",
    "McpToolbox",
    "create_server",
    "serve_stdio",
]

DEFAULT_MAX_RESOURCE_BYTES: Final = 10_000_000
"""The largest file :func:`create_server` serves as one resource read (10 MB)."""

_RESOURCE_NOT_FOUND: Final = -32002
_INVALID_PARAMS: Final = -32602
_INTERNAL_ERROR: Final = -32603


def create_server(
    workspace: Workspace,
    *,
    read_only_areas: Iterable[str] = (),
    max_output_tokens: int | None = None,
    token_counter: TokenCounter | Callable[[str], int] | None = None,
    thread_id: str = "mcp",
    max_resource_bytes: int = DEFAULT_MAX_RESOURCE_BYTES,
    resource_page_size: int = DEFAULT_PAGE_SIZE,
    max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
    name: str = "ctxfs",
) -> Server[Any]:
    """An MCP server (the SDK's low-level ``mcp.server.Server``) for one workspace.

    Run it with :func:`serve_stdio`, or over any transport the ``mcp`` SDK offers
    (``server.run(read_stream, write_stream, server.create_initialization_options())``); in
    tests, ``mcp.Client(server)`` connects to it in-process.

    Args:
        workspace: The workspace; ctxfs saves large outputs in its ``/tool_results`` area.
        read_only_areas: Folders the tools must not change, on top of ctxfs's own areas;
            ``"/"`` makes the whole workspace read-only (the writing tools are not offered).
        max_output_tokens: Most tokens of one tool answer; ``None`` for
            :data:`~ctxfs.tools.DEFAULT_MAX_OUTPUT_TOKENS`. Size it to the client's model:
            its window shares this with everything else.
        token_counter: What counts those tokens; ``None`` for a
            :class:`~ctxfs.TiktokenCounter`.
        thread_id: Names the folder large outputs are saved in (``/tool_results/<id>/``).
        max_resource_bytes: The largest file served as one resource read; a larger one is
            refused with a message saying to page through it with ``read_text_file``.
        resource_page_size: Resources per page of a ``resources/list`` answer.
        max_concurrent_calls: Tool calls and resource reads run at the same time (each in a
            worker thread); more wait for a free slot. A call whose client left or
            cancelled it is abandoned, not waited for.
        name: The server name the client shows.

    Raises:
        ImportError: The ``mcp`` extra is not installed.
        ValueError: ``max_output_tokens`` is under :data:`~ctxfs.tools.MIN_OUTPUT_TOKENS`,
            or ``max_resource_bytes``, ``resource_page_size`` or ``max_concurrent_calls`` is
            under 1.
    """
    try:
        import anyio
        import mcp_types as types
        from mcp.server import Server
        from mcp.shared.exceptions import MCPError
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "ctxfs.integrations.mcp needs the MCP SDK: pip install 'ctxfs[mcp]'"
        ) from exc
    if min(max_resource_bytes, resource_page_size, max_concurrent_calls) < 1:
        raise ValueError(
            "max_resource_bytes, resource_page_size and max_concurrent_calls must be at least 1"
        )
    limiter = anyio.CapacityLimiter(max_concurrent_calls)
    toolbox = McpToolbox(
        workspace,
        read_only_areas=read_only_areas,
        max_output_tokens=max_output_tokens,
        token_counter=token_counter,
        thread_id=thread_id,
    )
    view = toolbox.workspace
    listed = [_tool(tool) for tool in toolbox.tools]

    async def on_list_tools(
        ctx: object, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(
        ctx: object, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # The workspace is synchronous (and may wait on S3): worker threads keep the server
        # answering meanwhile, several calls at a time.
        answer = await in_worker(lambda: toolbox.call(params.name, params.arguments), limiter)
        return _result(answer)

    async def on_list_resources(
        ctx: object, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        try:
            entries, next_cursor = await in_worker(
                lambda: list_resources(view, cursor, page_size=resource_page_size), limiter
            )
        except WorkspaceError as exc:
            raise MCPError(_INTERNAL_ERROR, exc.message) from None
        resources = [
            types.Resource(
                name=entry.path,
                uri=entry.uri,
                description=entry.description,
                mime_type=entry.mime_type,
                size=entry.size,
            )
            for entry in entries
        ]
        return types.ListResourcesResult(resources=resources, next_cursor=next_cursor)

    async def on_list_resource_templates(
        ctx: object, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            name="workspace file",
            uri_template=URI_PREFIX + "/{path}",
            description=(
                f"Any file of the workspace by its path, e.g. {resource_uri('/notes/plan.md')}"
            ),
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def on_read_resource(
        ctx: object, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            content = await in_worker(
                lambda: read_resource(view, uri, max_bytes=max_resource_bytes), limiter
            )
        except PathNotFoundError as exc:
            raise MCPError(_RESOURCE_NOT_FOUND, error_text(exc, names=MCP_NAMES)) from None
        except (WorkspaceError, ValueError) as exc:
            raise MCPError(_INVALID_PARAMS, error_text(exc, names=MCP_NAMES)) from None
        return types.ReadResourceResult(contents=[_contents(content)])

    return Server(
        name,
        version=_version(),
        instructions=_instructions(toolbox),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )


async def serve_stdio(server: Server[Any], *, stop_when_orphaned: bool = True) -> None:
    """Serves ``server`` over this process's stdin and stdout until the client leaves.

    The client leaves when it closes stdin, when stdout breaks (it died mid-call: that ends
    the session quietly, it is not an error), or, with ``stop_when_orphaned``, when the process
    that started this one is gone (checked every second: then this process ends, as a server
    started by its client should). Calls still running are abandoned.
    Nothing else may write to stdout meanwhile: it carries the protocol.
    """
    import os

    from mcp.server.stdio import stdio_server

    parent = os.getppid() if stop_when_orphaned else None
    await run_until_client_leaves(server, stdio_server, parent=parent)


def _tool(tool: McpTool) -> mcp_types.Tool:
    import mcp_types as types

    annotations = types.ToolAnnotations(
        title=tool.title,
        read_only_hint=tool.read_only,
        destructive_hint=None if tool.read_only else tool.destructive,
        idempotent_hint=None if tool.read_only else tool.idempotent,
        open_world_hint=False,
    )
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.function.description,
        input_schema=_inlined(tool.function.parameters),
        annotations=annotations,
    )


def _inlined(schema: dict[str, object]) -> dict[str, object]:
    """The schema with its ``$defs`` written in place: some clients pass tool schemas on to
    model APIs that refuse ``$ref`` (the argument models have no cycles)."""
    definitions = schema.pop("$defs", None)
    if not isinstance(definitions, dict):
        return schema

    def resolve(node: object) -> object:
        if isinstance(node, dict):
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                return resolve(definitions[reference.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return {key: resolve(value) for key, value in schema.items()}


def _result(answer: McpAnswer) -> mcp_types.CallToolResult:
    import mcp_types as types

    content: list[types.TextContent | types.ResourceLink] = [
        types.TextContent(type="text", text=answer.text)
    ]
    if answer.saved_path is not None:
        content.append(
            types.ResourceLink(
                type="resource_link",
                name=answer.saved_path,
                uri=resource_uri(answer.saved_path),
                description="The whole output of this call",
            )
        )
    return types.CallToolResult(content=list(content), is_error=answer.is_error)


def _contents(
    content: ResourceContent,
) -> mcp_types.TextResourceContents | mcp_types.BlobResourceContents:
    import mcp_types as types

    if content.text is not None:
        return types.TextResourceContents(
            uri=content.uri, mime_type=content.mime_type, text=content.text
        )
    return types.BlobResourceContents(
        uri=content.uri, mime_type=content.mime_type, blob=content.blob or ""
    )


def _instructions(toolbox: McpToolbox) -> str:
    view = toolbox.workspace
    areas = ", ".join(f"{area}/" for area in view.read_only)
    return (
        f"The files of a ctxfs workspace ({view.url}), seen as paths starting at /. "
        f"Read-only: {areas}. Search contents with grep and names with search_files; read "
        f"long files in pages with read_text_file (offset, limit). Answers are at most "
        f"{toolbox.max_output_tokens} tokens; a larger output is saved under /tool_results "
        "and named in the answer."
    )


def _version() -> str:
    try:
        return version("ctxfs")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return ""
