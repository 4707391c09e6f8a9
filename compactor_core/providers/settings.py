"""Provider settings and their defaults: plain frozen data that travels to batch worker processes.

The API key is kept out of ``repr`` so it cannot leak into a log line or an error message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import defaults
from ..errors import ConfigError

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}


@dataclass(frozen=True)
class ProviderSettings:
    name: str = "extractive"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    key_variable: str | None = None  # where the key came from, for error messages
    timeout: float = defaults.TIMEOUT
    retries: int = defaults.RETRIES
    command: str | None = None
    # What a command provider's program runs in (CTXPACK_SYSTEM_PROMPT is added): the CLI passes
    # its own environment, as a shell would; the core never reads the process's. None: empty.
    environment: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
    # A hosted service (or a server whose key variable the config file names) needs a key. Its
    # absence is an error only once a summary is needed: `auto` under its threshold needs none.
    key_required: bool = False

    @property
    def is_network(self) -> bool:
        return self.name in KEY_VARIABLES

    def check_key(self) -> None:
        """Raise ConfigError if a key is required and there is none."""
        if self.key_required and not self.api_key:
            raise ConfigError(f"no API key for provider {self.name!r}: set {self.key_variable}")
