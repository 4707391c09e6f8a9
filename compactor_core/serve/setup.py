"""``ctxpack setup``: an agent's own settings, changed to go through a running ``ctxpack serve``.

- Claude Code: ``settings.json``: ``env.ANTHROPIC_BASE_URL`` at serve. Every other key stays
  as it was (JSON, indented by 2).
- Codex: ``config.toml``: ``model_provider = "ctxpack"`` and a ``[model_providers.ctxpack]`` table
  at serve, WebSockets off: the built-in OpenAI provider's stand-in
  (``pointing.codex_provider``), or a copy of the user's own provider at serve; and
  ``ctxpack mcp`` as ``[mcp_servers.ctxpack]`` (Codex offers its tools as the namespace
  ``mcp__ctxpack``). The file is edited as text, so its comments and layout stay.

- Claude Code's ``.claude.json``: ``ctxpack mcp`` among its MCP servers,
  so the model can recall what a marker replaced; ``undo`` takes that entry out again.

The file as it was is kept beside it (``NAME.before-ctxpack``; ``NAME.before-ctxpack.absent``
when there was none) the first time, and ``undo`` puts it back byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from ..disk.atomic import atomic_write
from ..errors import ConfigError, UsageError
from .pointing import CODEX_PROVIDER, Pointing, codex_provider, toml_value

BACKUP = ".before-ctxpack"
MCP_SERVER = "ctxpack"  # its name among the agents' MCP servers: tools mcp__ctxpack__*
ABSENT = ".before-ctxpack.absent"
_TABLE_HEADER = re.compile(r"^\s*\[")


def claude_settings(old: bytes | None, base_url: str, statusline: str | None = None) -> bytes:
    """Claude Code's ``settings.json`` with serve's address in its ``env`` (``base_url``), and
    with ``statusline`` (a command) as its statusLine; every other key as it was."""
    settings: dict[str, Any] = _json_object(old) if old else {}
    env = settings.get("env") if isinstance(settings.get("env"), dict) else {}
    settings["env"] = {**env, "ANTHROPIC_BASE_URL": base_url}
    if statusline is not None:
        settings["statusLine"] = {"type": "command", "command": statusline, "padding": 0}
    return _json_bytes(settings)


def claude_mcp(old: bytes | None, command: str) -> bytes:
    """Claude Code's ``.claude.json`` with ``ctxpack mcp`` among its user-scope MCP servers
    (``mcpServers.ctxpack``); everything else in it (Claude Code's own state) as it was."""
    state: dict[str, Any] = _json_object(old) if old else {}
    servers = state.get("mcpServers") if isinstance(state.get("mcpServers"), dict) else {}
    entry = {"type": "stdio", "command": command, "args": ["mcp"], "env": {}}
    state["mcpServers"] = {**servers, MCP_SERVER: entry}
    return _json_bytes(state)


def claude_mcp_removed(old: bytes) -> bytes | None:
    """``.claude.json`` without ``mcpServers.ctxpack``; None if nothing else was left in it.
    (Claude Code rewrites this file as it runs: undo takes out ctxpack's entry, not the file.)"""
    state = _json_object(old)
    servers = state.get("mcpServers")
    if isinstance(servers, dict):
        servers.pop(MCP_SERVER, None)
        if not servers:
            del state["mcpServers"]
    return _json_bytes(state) if state else None


def codex_config(
    old: bytes | None, route: Pointing, base_url: str, mcp_command: str | None = None
) -> bytes:
    """Codex's ``config.toml`` with the provider ``ctxpack`` at ``base_url`` chosen, and with
    ``mcp_command mcp`` as its MCP server ``ctxpack`` when one is given."""
    text = old.decode("utf-8") if old else ""
    if route.codex_provider:
        provider = _own_provider_at(text, route.codex_provider, base_url)
    else:
        provider = codex_provider(base_url)
    tables = {f"model_providers.{CODEX_PROVIDER}": provider}
    if mcp_command is not None:
        tables[f"mcp_servers.{MCP_SERVER}"] = {"command": mcp_command, "args": ["mcp"]}
    lines = text.splitlines()
    for name in (f"model_providers.{CODEX_PROVIDER}", f"mcp_servers.{MCP_SERVER}"):
        lines = _without_table(lines, name)
    lines = _with_top_level(lines, "model_provider", json.dumps(CODEX_PROVIDER))
    body = "\n".join(lines).rstrip("\n")
    added = "\n".join(f"[{name}]\n{_table_lines(table)}" for name, table in tables.items())
    return f"{body}\n\n{added}".lstrip().encode()


def keep_original(path: Path) -> None:
    """Keep the file as it is now beside it, unless an earlier setup kept one already."""
    backup, absent = _beside(path, BACKUP), _beside(path, ABSENT)
    if backup.exists() or absent.exists():
        return
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        atomic_write(absent, b"")
        return
    atomic_write(backup, original, new_file_mode=_mode(path))


def undo(path: Path) -> str:
    """Put the file kept by ``keep_original`` back; what was done, in words."""
    backup, absent = _beside(path, BACKUP), _beside(path, ABSENT)
    if backup.exists():
        os.replace(backup, path)  # the very file: its bytes and its mode
        return f"{path}: put back as it was before ctxpack setup"
    if absent.exists():
        path.unlink(missing_ok=True)
        absent.unlink()
        return f"{path}: removed (there was none before ctxpack setup)"
    raise UsageError(f"{path}: nothing to undo (no {backup.name} beside it)")


def _json_bytes(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()


def _json_object(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError as error:
        raise ConfigError(f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ConfigError("not a JSON object")
    return value


def _own_provider_at(text: str, name: str, base_url: str) -> dict[str, Any]:
    """The user's provider ``name``, at ``base_url``, WebSockets off."""
    own = tomllib.loads(text).get("model_providers", {}).get(name, {})
    return {**own, "base_url": base_url, "supports_websockets": False}


def _table_lines(table: dict[str, Any]) -> str:
    return "".join(f"{key} = {toml_value(value)}\n" for key, value in table.items())


def _without_table(lines: list[str], name: str) -> list[str]:
    """The lines without table ``[name]`` (its header to the next header)."""
    kept: list[str] = []
    inside = False
    for line in lines:
        if _TABLE_HEADER.match(line):
            inside = line.strip() == f"[{name}]"
        if not inside:
            kept.append(line)
    return kept


def _with_top_level(lines: list[str], key: str, value: str) -> list[str]:
    """``key = value`` among the top-level keys (before the first table), once."""
    first_table = next((i for i, line in enumerate(lines) if _TABLE_HEADER.match(line)), len(lines))
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    top = [line for line in lines[:first_table] if not pattern.match(line)]
    return [f"{key} = {value}", *top, *lines[first_table:]]


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777
