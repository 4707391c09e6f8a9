"""The providers, in one table (SPEC §7); ``defaults.PROVIDER_NAMES``, the CLI's ``--provider``
choices, names the same ones in the same order.

Each provider's module is imported only when it is built, so a run that never summarizes never
pays for httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .settings import ProviderSettings

if TYPE_CHECKING:
    from .base import Summarizer

__all__ = ["PROVIDERS", "ProviderSettings", "build_provider"]

# name -> (module, class); a class takes the settings, network ones also JsonClient's options.
PROVIDERS: dict[str, tuple[str, str]] = {
    "extractive": ("extractive", "ExtractiveSummarizer"),
    "openai": ("openai", "OpenAISummarizer"),
    "anthropic": ("anthropic", "AnthropicSummarizer"),
    "command": ("command", "CommandSummarizer"),
}


def build_provider(settings: ProviderSettings, **client: Any) -> Summarizer:
    """The provider the settings name; raise ConfigError if they do not make a usable one.

    ``client`` goes to a network provider's JsonClient (``transport``, ``sleep``, ...), so tests
    can hand it an ``httpx.MockTransport`` and a clock that does not wait.
    """
    if settings.name not in PROVIDERS:
        choices = ", ".join(PROVIDERS)
        raise ConfigError(f"unknown provider {settings.name!r}: choose one of {choices}")
    module, name = PROVIDERS[settings.name]
    summarizer = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    if settings.name == "extractive":
        return summarizer()
    if settings.is_network:
        return summarizer(settings, **client)
    return summarizer(settings)
