"""Who writes the summaries: each provider's declaration, and the settings of one provider.

Each provider declares what it needs (``ProviderSpec``): the module that implements it, the
environment variables a front end reads its key and base URL from, its default model and base
URL. ``ProviderSettings`` fills in what is not given from that declaration, so the library works
without the CLI: ``ProviderSettings("anthropic", api_key=key)`` talks to Anthropic's API with its
default model. Plain frozen data that travels to batch worker processes; the API key is kept out
of ``repr`` so it cannot leak into a log line or an error message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .. import defaults
from ..errors import ConfigError


@dataclass(frozen=True)
class ProviderSpec:
    """What one provider is and needs."""

    name: str
    module: str  # where it is implemented: _HERE + "openai"
    class_name: str
    key_variable: str | None = None  # the environment variable of its API key
    base_url_variable: str | None = None  # the environment variable of its base URL
    default_model: str | None = None
    default_base_url: str | None = None  # a hosted service: it needs a key

    @property
    def is_network(self) -> bool:
        return self.default_base_url is not None


_HERE = "compactor_core.providers."
SPECS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec("extractive", _HERE + "extractive", "ExtractiveSummarizer"),
        ProviderSpec(
            "openai",
            _HERE + "openai",
            "OpenAISummarizer",
            key_variable="OPENAI_API_KEY",
            base_url_variable="OPENAI_BASE_URL",
            default_model="gpt-4o-mini",
            default_base_url="https://api.openai.com/v1",
        ),
        ProviderSpec(
            "anthropic",
            _HERE + "anthropic",
            "AnthropicSummarizer",
            key_variable="ANTHROPIC_API_KEY",
            base_url_variable="ANTHROPIC_BASE_URL",
            default_model="claude-3-5-haiku-latest",
            default_base_url="https://api.anthropic.com",
        ),
        ProviderSpec("command", _HERE + "command", "CommandSummarizer"),
    )
}


def spec_of(name: str) -> ProviderSpec:
    """The declaration of provider ``name``; ConfigError for an unknown one."""
    if name not in SPECS:
        raise ConfigError(f"unknown provider {name!r}: choose one of {', '.join(SPECS)}")
    return SPECS[name]


@dataclass(frozen=True)
class ProviderSettings:
    name: str = "extractive"
    model: str | None = None  # None: the provider's default model
    base_url: str | None = None  # None: the provider's default base URL
    api_key: str | None = field(default=None, repr=False)
    key_variable: str | None = None  # where the key came from, for error messages
    timeout: float = defaults.TIMEOUT
    retries: int = defaults.RETRIES
    command: str | None = None
    # What a command provider's program runs in (CTXPACK_SYSTEM_PROMPT is added): the CLI passes
    # its own environment, as a shell would; the core never reads the process's. None: empty.
    environment: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
    # Whether a key is needed. None: when the base URL is the hosted service's (a local server
    # such as Ollama or llama.cpp may need none). Its absence is an error only once a summary is
    # needed: `auto` under its threshold needs none.
    key_required: bool | None = None

    def __post_init__(self) -> None:
        spec = spec_of(self.name)
        defaults_of = {
            "model": spec.default_model,
            "base_url": spec.default_base_url,
            "key_variable": spec.key_variable,
        }
        for name, default in defaults_of.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        if self.key_required is None:
            hosted = spec.is_network and _host(self.base_url) == _host(spec.default_base_url)
            object.__setattr__(self, "key_required", hosted)

    @property
    def is_network(self) -> bool:
        return spec_of(self.name).is_network

    def check_key(self) -> None:
        """Raise ConfigError if a key is required and there is none."""
        if self.key_required and not self.api_key:
            where = f": set {self.key_variable}" if self.key_variable else ""
            raise ConfigError(f"no API key for provider {self.name!r}{where}")


def _host(url: str | None) -> str | None:
    return urlsplit(url).hostname if url else None
