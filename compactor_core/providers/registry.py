"""Building a provider by name (SPEC §7); the table of providers is ``catalog.SPECS``, and
``defaults.PROVIDER_NAMES``, the CLI's ``--provider`` choices, names the same ones in the same
order (a test keeps the two in step).

Each provider's module is imported only when it is built, and a run's provider is built only
when a summary is asked of it (``Deferred``): a run that never summarizes (``auto`` under its
threshold) loads no provider's module, and httpx only once a request is sent.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import check_ready
from .catalog import ProviderSettings, spec_of

if TYPE_CHECKING:
    from .base import Summarizer, SummaryRequest

__all__ = ["Deferred", "ProviderSettings", "build_provider", "provider"]


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


@dataclass(eq=False)  # one provider: equal only to itself
class Deferred:
    """The provider ``settings`` name, built the first time it is asked anything (``ready``,
    ``summarize``) and then shared, also by threads."""

    settings: ProviderSettings
    _built: Summarizer | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.settings.name

    def built(self) -> Summarizer:
        with self._lock:
            if self._built is None:
                self._built = build_provider(self.settings)
            return self._built

    @property
    def deterministic(self) -> bool:
        """Whether the provider writes the same summary for the same history (it says so)."""
        return bool(getattr(self.built(), "deterministic", False))

    def ready(self) -> None:
        check_ready(self.built())

    def summarize(self, request: SummaryRequest) -> str:
        return self.built().summarize(request)
