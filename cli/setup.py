"""``ctxpack setup AGENT``: the agent's own settings changed to go through a running serve."""

from __future__ import annotations

import difflib
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from compactor_core.disk.atomic import atomic_write
from compactor_core.errors import ConfigError, UsageError
from compactor_core.serve import pointing
from compactor_core.serve import setup as changes

from . import io, options
from .serve import DEFAULT_PORT

DEFAULT_ADDRESS = f"http://127.0.0.1:{DEFAULT_PORT}"
T = TypeVar("T")


@click.command(
    epilog=options.epilog(
        "ctxpack setup claude                  # settings.json: env.ANTHROPIC_BASE_URL at serve",
        "ctxpack setup codex --dry-run         # show the change to config.toml, write nothing",
        "ctxpack setup claude --undo           # settings.json back as it was, byte for byte",
        "ctxpack setup claude --statusline     # and ctxpack statusline as its statusLine",
    )
)
@click.argument("agent", type=click.Choice(["claude", "codex"]))
@click.option(
    "--address",
    default=DEFAULT_ADDRESS,
    show_default=True,
    metavar="URL",
    help="Where serve listens (ctxpack serve --port, --host).",
)
@click.option(
    "--statusline",
    is_flag=True,
    help="Claude Code: also show `ctxpack statusline` at the bottom of its screen (the context, "
    "the cache, the session's cost, what serve saved).",
)
@click.option(
    "--no-recall",
    is_flag=True,
    help="Leave the agent's MCP servers alone (by default `ctxpack mcp` joins them: Claude "
    "Code's .claude.json, Codex's config.toml).",
)
@click.option("--undo", is_flag=True, help="Put back the file as it was before the first setup.")
@click.option("--dry-run", is_flag=True, help="Show the change; write nothing.")
@click.option("-y", "--yes", is_flag=True, help="Write without asking.")
def setup(
    agent: str,
    address: str,
    statusline: bool,
    no_recall: bool,
    undo: bool,
    dry_run: bool,
    yes: bool,
) -> None:
    """Make AGENT go through a running ctxpack serve every time, in its own settings.

    Claude Code: env.ANTHROPIC_BASE_URL in its settings.json. Codex: a provider "ctxpack" at
    serve in its config.toml, WebSockets off (the built-in OpenAI one's stand-in, or a copy of
    your own provider). `ctxpack mcp` (recall) joins the agent's MCP servers too. Shows the
    change and asks first; the file as it was is kept beside it (NAME.before-ctxpack), and
    --undo puts it back. Start serve yourself, or once for good with
    `ctxpack serve --install`.
    """
    home = Path.home()
    if agent == "claude":
        path = pointing.claude_settings_path(os.environ, home)
    else:
        path = pointing.codex_config_path(os.environ, home)
    recall = not no_recall
    state = pointing.claude_state_path(os.environ, home)
    if undo:
        io.warn(changes.undo(path))
        if agent == "claude":
            _unregister(state)
        return
    old = path.read_bytes() if path.exists() else None
    route = pointing.pointing(agent, os.environ, home)
    address = address.rstrip("/")
    if agent == "claude":
        shown = f"{shlex.quote(_ctxpack_command())} statusline" if statusline else None
        new = _read_as(path, lambda: changes.claude_settings(old, address, shown))
    else:
        mcp_command = _ctxpack_command() if recall else None
        new = changes.codex_config(old, route, route.proxied(address), mcp_command)
    if recall and agent == "claude" and not dry_run:
        _register(state, yes)
    if new == old:
        io.warn(f"{path}: already set up, nothing to change")
        return
    io.write_stdout(_diff(path, old, new).encode())
    if dry_run or not _confirmed(yes):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    changes.keep_original(path)
    atomic_write(path, new, new_file_mode=0o600)
    io.warn(f"{path}: written; as it was: {path.name}{changes.BACKUP} beside it")
    io.warn(f"undo: ctxpack setup {agent} --undo")
    if not route.base_url.startswith(address):
        io.warn(f"serve must be running: ctxpack serve --upstream {route.upstream} (--install)")


def _ctxpack_command() -> str:
    """This ctxpack, by an absolute path: the agent may start it with another PATH."""
    return os.path.abspath(shutil.which("ctxpack") or sys.argv[0])


def _register(state: Path, yes: bool) -> None:
    """``ctxpack mcp`` among Claude Code's MCP servers (``.claude.json``), asked like the rest."""
    old = state.read_bytes() if state.exists() else None
    new = _read_as(state, lambda: changes.claude_mcp(old, _ctxpack_command()))
    if new == old:
        return
    io.warn(f"{state}: mcpServers.{changes.MCP_SERVER} = {_ctxpack_command()} mcp (recall)")
    if _confirmed(yes):
        atomic_write(state, new, new_file_mode=0o600)


def _unregister(state: Path) -> None:
    if not state.exists():
        return
    old = state.read_bytes()
    new = _read_as(state, lambda: changes.claude_mcp_removed(old))
    if new is None:
        state.unlink()
    elif new != old:
        atomic_write(state, new)
    io.warn(f"{state}: mcpServers.{changes.MCP_SERVER} taken out")


def _read_as(path: Path, change: Callable[[], T]) -> T:
    """The change, its file named in a ConfigError (a file that is not JSON)."""
    try:
        return change()
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


def _diff(path: Path, old: bytes | None, new: bytes) -> str:
    before = old.decode("utf-8", "replace").splitlines(keepends=True) if old else []
    after = new.decode("utf-8").splitlines(keepends=True)
    label = "(none)" if old is None else str(path)
    return "".join(difflib.unified_diff(before, after, label, f"{path} (ctxpack setup)"))


def _confirmed(yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError("not a terminal to ask on: add --yes to write the change (or --dry-run)")
    return click.confirm("Write this change?", default=False, err=True)
