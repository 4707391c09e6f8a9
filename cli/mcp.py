"""``ctxpack mcp``: an MCP server on standard input and output whose ``recall`` tool gives the
model back what a marker replaced, by the handle the marker carries.

It reads the store of originals that ``micro|full|auto --recall`` and ``serve`` keep (the user's
state folder, ``originals``); ``estimate`` and ``stats`` come with it. The protocol is the core's
(``compactor_core.recall.mcp``): no SDK to import, so the tools are listed within the time
agents give their MCP servers to start.
"""

from __future__ import annotations

import click

from compactor_core.ends.sources import Source, local_file
from compactor_core.recall.mcp import Server
from compactor_core.recall.tools import INSTRUCTIONS, ctxpack_tools
from compactor_core.release import release

from . import io, options
from .resolve import originals_store


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
    tools = ctxpack_tools(originals_store(), _source_of)
    server = Server("ctxpack", release(), INSTRUCTIONS, tools)
    server.serve(io.stdin_lines(), io.write_stdout)


def _source_of(path: str) -> Source:
    """Where estimate's file is. Standard input carries the protocol here, so ``-`` is only
    the name of a file."""
    if path == io.STDIN:
        return local_file(path)
    return io.source_of(path)
