"""``ctxpack setup AGENT``: the agent's own settings changed to go through a running serve."""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

import click

from compactor_core.errors import UsageError

from . import io, options
from .serve import DEFAULT_PORT

DEFAULT_ADDRESS = f"http://127.0.0.1:{DEFAULT_PORT}"


@click.command(
    epilog=options.epilog(
        "ctxpack setup claude                  # settings.json: env.ANTHROPIC_BASE_URL at serve",
        "ctxpack setup codex --dry-run         # show the change to config.toml, write nothing",
        "ctxpack setup claude --undo           # settings.json back as it was, byte for byte",
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
@click.option("--undo", is_flag=True, help="Put back the file as it was before the first setup.")
@click.option("--dry-run", is_flag=True, help="Show the change; write nothing.")
@click.option("-y", "--yes", is_flag=True, help="Write without asking.")
def setup(agent: str, address: str, undo: bool, dry_run: bool, yes: bool) -> None:
    """Make AGENT go through a running ctxpack serve every time, in its own settings.

    Claude Code: env.ANTHROPIC_BASE_URL in its settings.json. Codex: a provider "ctxpack" at
    serve in its config.toml, WebSockets off (the built-in OpenAI one's stand-in, or a copy of
    your own provider). Shows the change and asks first; the file as it was is kept beside it
    (NAME.before-ctxpack), and --undo puts it back. Start serve yourself, or once for good with
    `ctxpack serve --install`.
    """
    from compactor_core.serve import pointing
    from compactor_core.serve import setup as changes

    home = Path.home()
    if agent == "claude":
        path = pointing.claude_settings_path(os.environ, home)
    else:
        path = pointing.codex_config_path(os.environ, home)
    if undo:
        io.warn(changes.undo(path))
        return
    old = path.read_bytes() if path.exists() else None
    route = pointing.pointing(agent, os.environ, home)
    address = address.rstrip("/")
    if agent == "claude":
        new = changes.claude_settings(old, address)
    else:
        new = changes.codex_config(old, route, route.proxied(address))
    if new == old:
        io.warn(f"{path}: already set up, nothing to change")
        return
    io.write_stdout(_diff(path, old, new).encode())
    if dry_run or not _confirmed(yes):
        return
    from compactor_core.disk.atomic import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    changes.keep_original(path)
    atomic_write(path, new, new_file_mode=0o600)
    io.warn(f"{path}: written; as it was: {path.name}{changes.BACKUP} beside it")
    io.warn(f"undo: ctxpack setup {agent} --undo")
    if not route.base_url.startswith(address):
        io.warn(f"serve must be running: ctxpack serve --upstream {route.upstream} (--install)")


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
