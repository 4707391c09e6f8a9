"""Building a provider by name (SPEC §7); the table of providers is ``catalog.SPECS``, and
``defaults.PROVIDER_NAMES``, the CLI's ``--provider`` choices, names the same ones in the same
order (a test keeps the two in step).

Each provider's module is imported only when it is built, so a run that never summarizes never
pays for httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .catalog import ProviderSettings, spec_of

if TYPE_CHECKING:
    from .base import Summarizer

__all__ = ["ProviderSettings", "build_provider", "provider"]


def build_provider(settings: ProviderSettings, **client: Any) -> Summarizer:
    """The provider the settings name; raise ConfigError if they do not make a usable one.

    ``client`` goes to a network provider's JsonClient (``transport``, ``sleep``, ...), so tests
    can hand it an ``httpx.MockTransport`` and a clock that does not wait.
    """
    spec = spec_of(settings.name)
    summarizer = getattr(importlib.import_module(spec.module), spec.class_name)
    if spec.name == "extractive":
        return summarizer()
    if spec.is_network:
        return summarizer(settings, **client)
    return summarizer(settings)


def provider(name: str = "extractive", **settings: Any) -> Summarizer:
    """The provider ``name`` with these settings (``model``, ``base_url``, ``api_key``,
    ``timeout``, ``retries``, ``command``, …); whatever is not given is the provider's default.

    >>> provider("anthropic", api_key="…").model
    'claude-3-5-haiku-latest'
    """
    return build_provider(ProviderSettings(name, **settings))
