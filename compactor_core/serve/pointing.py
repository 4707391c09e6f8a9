"""How each coding agent is pointed at an API address: where it would go, and how to send it to
``ctxpack serve`` instead (for ``ctxpack run`` and ``ctxpack setup``).

Each agent reads its model's address in its own way (measured with the real agents):

- Claude Code: ``ANTHROPIC_BASE_URL``, which the ``env`` table of its ``settings.json`` overrides
  when it sets it; ``--settings`` overrides both. The default is Anthropic's API.
- Codex: its model provider. A provider of the user's own (``model_provider`` naming a table of
  ``model_providers`` in ``config.toml``) gets its ``base_url`` replaced with ``-c`` overrides;
  the built-in OpenAI provider cannot be changed so, and is replaced by a provider of the same
  name and sign-in (``requires_openai_auth``). Either way ``supports_websockets = false``: a
  WebSocket upgrade the proxy refuses costs Codex seconds at every start.
- Qwen Code: ``OPENAI_BASE_URL`` (its OpenAI-compatible sign-in).
- Copilot CLI: ``COPILOT_PROVIDER_BASE_URL``, with a provider of one's own only: without one it
  speaks GitHub's own API, which serve does not know.

The core reads nothing of the process: the environment and the home folder are given.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError, UsageError

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com/v1"
CHATGPT_API = "https://chatgpt.com/backend-api/codex"  # Codex signed in with a ChatGPT plan
CODEX_PROVIDER = "ctxpack"  # the provider that stands in for Codex's built-in OpenAI one

# The agents whose model address cannot be set from outside yet, and why.
NOT_YET = {
    "gemini": "Gemini CLI speaks the Gemini API, which ctxpack serve passes through untouched",
    "pi": "pi reads its providers' addresses only from ~/.pi/agent/models.json",
    "opencode": "OpenCode reads its providers' addresses only from its opencode.json",
    "cline": "Cline keeps its provider's address in ~/.cline/data/settings/providers.json",
}


@dataclass(frozen=True)
class Pointing:
    """Where an agent would send its requests, and how to send them to a proxy instead."""

    agent: str  # claude, codex, qwen, copilot
    base_url: str  # the API address the agent would have used
    variable: str | None = None  # the environment variable that gives the agent its address
    codex_provider: str | None = None  # Codex: the user's own provider, changed in place

    @property
    def upstream(self) -> str:
        """What serve forwards to: the address's scheme and host (requests keep their path)."""
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    def proxied(self, proxy: str) -> str:
        """The agent's address at the proxy: the proxy, then the path of the real address."""
        return proxy.rstrip("/") + urlsplit(self.base_url).path.rstrip("/")

    def environment(self, proxy: str) -> dict[str, str]:
        """The variables that send the agent to ``proxy``."""
        return {self.variable: self.proxied(proxy)} if self.variable else {}

    def arguments(self, proxy: str) -> list[str]:
        """The arguments, before the user's own, that send the agent to ``proxy``."""
        if self.agent == "claude":
            settings = {"env": {self.variable: self.proxied(proxy)}}
            return ["--settings", json.dumps(settings)]
        if self.agent != "codex":
            return []
        if self.codex_provider:
            table = f"model_providers.{self.codex_provider}"
            overrides = [
                f"{table}.base_url={toml_value(self.proxied(proxy))}",
                f"{table}.supports_websockets=false",
            ]
        else:
            overrides = [
                f"model_provider={json.dumps(CODEX_PROVIDER)}",
                f"model_providers.{CODEX_PROVIDER}={toml_value(codex_provider(self.proxied(proxy)))}",
            ]
        return [argument for override in overrides for argument in ("-c", override)]


def codex_provider(base_url: str) -> dict[str, Any]:
    """Codex's built-in OpenAI provider, at another address, without WebSockets."""
    return {
        "name": "OpenAI",
        "base_url": base_url,
        "wire_api": "responses",
        "requires_openai_auth": True,
        "supports_websockets": False,
    }


def toml_value(value: Any) -> str:
    """A value as TOML writes it (tables inline), for ``-c`` overrides and ``config.toml``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def agent_kind(command: str) -> str:
    """Which agent a command runs, by its name: ``/opt/bin/claude`` -> ``claude``."""
    return os.path.basename(command)


def pointing(command: str, environ: Mapping[str, str], home: Path) -> Pointing:
    """How the agent ``command`` runs is pointed at an API, read from its environment and its
    own settings under ``home``; UsageError for an agent that cannot be pointed from outside."""
    kind = agent_kind(command)
    if kind in NOT_YET:
        raise UsageError(f"{kind}: not supported by ctxpack run yet: {NOT_YET[kind]}")
    if kind == "claude":
        return _claude(environ, home)
    if kind == "codex":
        return _codex(environ, home)
    if kind == "qwen":
        return Pointing(kind, environ.get("OPENAI_BASE_URL") or OPENAI_API, "OPENAI_BASE_URL")
    if kind == "copilot":
        return _copilot(environ)
    known = ", ".join(("claude", "codex", "qwen", "copilot"))
    raise UsageError(f"{kind}: not an agent ctxpack run knows (it knows {known})")


def _claude(environ: Mapping[str, str], home: Path) -> Pointing:
    variable = "ANTHROPIC_BASE_URL"
    settings = _json_file(claude_settings_path(environ, home))
    from_settings = settings.get("env", {}).get(variable) if isinstance(settings, dict) else None
    base_url = from_settings or environ.get(variable) or ANTHROPIC_API  # as Claude Code ranks them
    return Pointing("claude", base_url, variable)


def claude_settings_path(environ: Mapping[str, str], home: Path) -> Path:
    """Claude Code's user settings: ``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude``."""
    folder = environ.get("CLAUDE_CONFIG_DIR") or str(home / ".claude")
    return Path(folder) / "settings.json"


def claude_state_path(environ: Mapping[str, str], home: Path) -> Path:
    """Claude Code's own state, user-scope MCP servers in it: ``$CLAUDE_CONFIG_DIR/.claude.json``,
    else ``~/.claude.json``."""
    folder = environ.get("CLAUDE_CONFIG_DIR")
    return Path(folder) / ".claude.json" if folder else home / ".claude.json"


def codex_config_path(environ: Mapping[str, str], home: Path) -> Path:
    """Codex's ``config.toml``: in ``$CODEX_HOME``, else ``~/.codex``."""
    return Path(environ.get("CODEX_HOME") or home / ".codex") / "config.toml"


def _codex(environ: Mapping[str, str], home: Path) -> Pointing:
    path = codex_config_path(environ, home)
    config = _toml_file(path)
    provider = config.get("model_provider")
    own = config.get("model_providers", {}).get(provider) if provider else None
    if isinstance(own, dict):
        if not own.get("base_url"):
            raise ConfigError(f"{path}: model_providers.{provider} has no base_url")
        return Pointing("codex", own["base_url"], codex_provider=provider)
    base_url = environ.get("OPENAI_BASE_URL") or config.get("openai_base_url")
    if not base_url:
        base_url = CHATGPT_API if _codex_chatgpt_login(path.parent / "auth.json") else OPENAI_API
    return Pointing("codex", base_url)


def _codex_chatgpt_login(auth_file: Path) -> bool:
    """Whether Codex is signed in with a ChatGPT plan (its tokens, no API key): it then talks
    to ChatGPT's backend rather than the OpenAI API."""
    signed_in = _json_file(auth_file)
    return (
        isinstance(signed_in, dict)
        and bool(signed_in.get("tokens"))
        and not signed_in.get("OPENAI_API_KEY")
    )


def _copilot(environ: Mapping[str, str]) -> Pointing:
    variable = "COPILOT_PROVIDER_BASE_URL"
    if not environ.get(variable):
        raise UsageError(
            "copilot: ctxpack run needs a provider of your own (COPILOT_PROVIDER_BASE_URL, "
            "COPILOT_PROVIDER_TYPE, COPILOT_PROVIDER_API_KEY): GitHub's own API is not one "
            "ctxpack serve knows"
        )
    return Pointing("copilot", environ[variable], variable)


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: cannot read: {error}") from None


def _toml_file(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: cannot read: {error}") from None
