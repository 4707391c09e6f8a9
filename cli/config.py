"""Provider settings: flag > environment > config file > default (SPEC §7).

The config file is TOML, at ``$CTXPACK_CONFIG`` or ``$XDG_CONFIG_HOME/ctxpack/config.toml``
(``~/.config/ctxpack/config.toml``). Top-level keys apply to every provider; a table named after a
provider (``[openai]``, ``[anthropic]``, ``[command]``) overrides them for that provider.
API keys come only from the environment: a config file may name the variable that holds one
(``api_key_env``), never hold the key itself. ``tokenizer`` is a top-level key only: it says who
counts tokens for every command, whatever the provider.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from compactor_core import defaults
from compactor_core.errors import ConfigError

if TYPE_CHECKING:
    from compactor_core.providers.settings import ProviderSettings

FILE_KEYS = {
    "provider",
    "model",
    "base_url",
    "timeout",
    "retries",
    "command",
    "api_key_env",
    "lang",
}
LANGS = ("auto", "zh", "en")
FORBIDDEN_KEYS = {"api_key", "key", "token", "secret"}
TOP_LEVEL_KEYS = {"tokenizer"}
DEFAULT_TOKENIZER = "heuristic"


def config_path(environ: Mapping[str, str]) -> str:
    if environ.get("CTXPACK_CONFIG"):
        return environ["CTXPACK_CONFIG"]
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "ctxpack", "config.toml")


def load_config_file(path: str, required: bool) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        if required:
            raise ConfigError(f"{path}: config file not found (CTXPACK_CONFIG)") from None
        return {}
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config file: {error.strerror}") from None
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: bad config file: {error}") from None


def _file_settings(config: dict[str, Any], provider: str, path: str) -> dict[str, Any]:
    merged = {
        key: value
        for key, value in config.items()
        if not isinstance(value, dict) and key not in TOP_LEVEL_KEYS
    }
    table = config.get(provider)
    if isinstance(table, dict):
        merged.update(table)
    for key in merged:
        if key in FORBIDDEN_KEYS:
            raise ConfigError(
                f"{path}: {key!r} is not allowed: keep API keys in the environment "
                "(name the variable with api_key_env)"
            )
        if key not in FILE_KEYS:
            raise ConfigError(f"{path}: unknown setting {key!r}")
    return merged


def _number(kind: Callable[[str], Any], name: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        try:
            converted = kind(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be a number, got {value!r}") from None
        if converted < 0:
            raise ConfigError(f"{name} must not be negative, got {value!r}")
        return converted

    return convert


def resolve_tokenizer(flag: str | None, environ: Mapping[str, str]) -> str:
    """Who counts tokens: ``--tokenizer`` > ``CTXPACK_TOKENIZER`` > the config file > heuristic.

    The name is not checked here: ``compactor_core.tokenizers.counter`` does that.
    """
    if flag:
        return flag
    if environ.get("CTXPACK_TOKENIZER"):
        return environ["CTXPACK_TOKENIZER"]
    path = config_path(environ)
    value = load_config_file(path, required=bool(environ.get("CTXPACK_CONFIG"))).get("tokenizer")
    if value is None:
        return DEFAULT_TOKENIZER
    if not isinstance(value, str):
        raise ConfigError(f"{path}: tokenizer must be a name, got {value!r}")
    return value


def resolve_provider(flags: Mapping[str, Any], environ: Mapping[str, str]) -> ProviderSettings:
    """Resolve the provider settings from flags, the environment and the config file."""
    # imported here: `estimate` reads this file for its tokenizer and should start fast
    from compactor_core.providers.registry import PROVIDERS
    from compactor_core.providers.settings import (
        DEFAULT_BASE_URLS,
        DEFAULT_MODELS,
        KEY_VARIABLES,
        ProviderSettings,
    )

    path = config_path(environ)
    config = load_config_file(path, required=bool(environ.get("CTXPACK_CONFIG")))
    top = {key: value for key, value in config.items() if not isinstance(value, dict)}

    def first(flag: str, variables: tuple[str, ...], file_value: Any, default: Any) -> Any:
        if flags.get(flag) is not None:
            return flags[flag]
        for variable in variables:
            if environ.get(variable):
                return environ[variable]
        return default if file_value is None else file_value

    name = first("provider", ("CTXPACK_PROVIDER",), top.get("provider"), "extractive")
    if name not in PROVIDERS:
        raise ConfigError(f"unknown provider {name!r}: choose one of {', '.join(PROVIDERS)}")
    file = _file_settings(config, name, path)
    prefix = name.upper()
    key_variable = file.get("api_key_env") or KEY_VARIABLES.get(name)
    settings = ProviderSettings(
        name=name,
        model=first("model", ("CTXPACK_MODEL",), file.get("model"), DEFAULT_MODELS.get(name)),
        base_url=first(
            "base_url",
            ("CTXPACK_BASE_URL", f"{prefix}_BASE_URL"),
            file.get("base_url"),
            DEFAULT_BASE_URLS.get(name),
        ),
        api_key=environ.get(key_variable) if key_variable else None,
        key_variable=key_variable,
        timeout=_number(float, "timeout")(
            first("timeout", ("CTXPACK_TIMEOUT",), file.get("timeout"), defaults.TIMEOUT)
        ),
        retries=_number(int, "retries")(
            first("retries", ("CTXPACK_RETRIES",), file.get("retries"), defaults.RETRIES)
        ),
        command=first("command", ("CTXPACK_COMMAND",), file.get("command"), None),
        environment=dict(environ) if name == "command" else None,
    )
    _check_command(settings)
    return replace(settings, key_required=_needs_key(settings, bool(file.get("api_key_env"))))


def resolve_lang(flag: str | None, environ: Mapping[str, str]) -> str:
    """The summary language: --lang > CTXPACK_LANG > the config file's ``lang`` > auto."""
    if flag is not None:
        return flag
    path = config_path(environ)
    if environ.get("CTXPACK_LANG"):
        value, where = environ["CTXPACK_LANG"], "CTXPACK_LANG"
    else:
        config = load_config_file(path, required=bool(environ.get("CTXPACK_CONFIG")))
        value, where = config.get("lang", "auto"), f"{path}: lang"
    if value not in LANGS:
        raise ConfigError(f"{where} must be one of {', '.join(LANGS)}, got {value!r}")
    return value


def _check_command(settings: ProviderSettings) -> None:
    if settings.name == "command" and not settings.command:
        raise ConfigError("provider 'command' needs a command: use --command or CTXPACK_COMMAND")


def _needs_key(settings: ProviderSettings, named_key: bool) -> bool:
    """Whether the provider needs an API key: checked when a summary is needed, not before."""
    from compactor_core.providers.settings import DEFAULT_BASE_URLS

    # A local server (Ollama, llama.cpp, vLLM, ...) may need no key; the hosted services do, and
    # so does any server whose key variable the config file names.
    if not settings.is_network:
        return False
    return named_key or _host(settings.base_url) == _host(DEFAULT_BASE_URLS.get(settings.name))


def _host(url: str | None) -> str | None:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname if url else None


def environment() -> Mapping[str, str]:
    return os.environ
