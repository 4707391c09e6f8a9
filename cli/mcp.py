"""``ctxpack mcp``: an MCP server on standard input and output whose ``recall`` tool gives the
model back what a marker replaced, by the handle the marker carries.

It reads the store of originals that ``micro|full|auto --recall`` and ``serve`` keep (the user's
state folder, ``originals``); ``estimate`` and ``stats`` come with it. The official ``mcp`` SDK
is an optional extra (``pip install 'ctxpack[mcp]'``), imported only here.
"""

from __future__ import annotations

from typing import Any

import click

from compactor_core.ends.documents import open_document
from compactor_core.errors import ConfigError

from . import io, options
from .run import originals_store

INSTRUCTIONS = (
    "ctxpack replaces old tool results in this conversation with markers such as "
    "[truncated: Bash result, 1204 chars; recall HANDLE] or [superseded: Read src/app.py, read "
    "again 4 turns later; recall HANDLE], where HANDLE is 12 hex digits. When you need what such "
    "a marker replaced, call recall with its handle rather than running the tool again."
)


@click.command(
    epilog=options.epilog(
        "ctxpack mcp          # on stdio; ctxpack setup claude registers it with Claude Code",
    )
)
def mcp() -> None:
    """An MCP server (stdio) with a recall tool: the original of a marker's handle.

    Markers carry a handle with micro, full and auto --recall, and through serve when the agent
    has this tool. Also offers estimate (a conversation's or session's tokens, and how much of
    them is stale) and stats (what the store holds).
    """
    server = _server()
    server.run("stdio")


def _server() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise ConfigError("ctxpack mcp needs the mcp extra: pip install 'ctxpack[mcp]'") from None
    store = originals_store()
    server = MCPServer("ctxpack", instructions=INSTRUCTIONS)

    @server.tool(structured_output=False)
    def recall(handle: str) -> str:
        """The original content a ctxpack marker replaced: give the handle (12 hex digits) the
        marker shows after "recall"."""
        return store.find(handle).answer

    @server.tool()
    def estimate(path: str) -> dict[str, Any]:
        """Tokens of a conversation file or an agent's session file, by role and tool, and the
        share of its tool-result tokens that later results made stale."""
        return _estimate(path)

    @server.tool()
    def stats() -> dict[str, int]:
        """How many originals the recall store holds, their bytes, and its limit."""
        return store.stats()

    return server


def _estimate(path: str) -> dict[str, Any]:
    with open_document(io.source_of(path), "auto") as document:
        return {"tokens": document.tokens(), **document.breakdown()}
