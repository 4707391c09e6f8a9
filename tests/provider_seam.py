"""The tests' provider seam: registered providers, as ``llm`` registers its mock model.

A test puts a provider in place through the core's own registry
(``compactor_core.providers.catalog.SPECS``), never by patching a name inside the CLI, so the
command line, batch workers (forked from the test's process) and the library all build it the
way they build any provider.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from compactor_core.providers.anthropic import AnthropicSummarizer
from compactor_core.providers.catalog import SPECS
from compactor_core.providers.openai import OpenAISummarizer

# What the network providers' JsonClient is built with (a transport, a sleep), while a test says.
CLIENT_OPTIONS: dict[str, Any] = {}


class ScriptedOpenAI(OpenAISummarizer):
    def __init__(self, settings: Any, **options: Any) -> None:
        super().__init__(settings, **{**CLIENT_OPTIONS, **options})


class ScriptedAnthropic(AnthropicSummarizer):
    def __init__(self, settings: Any, **options: Any) -> None:
        super().__init__(settings, **{**CLIENT_OPTIONS, **options})


class Installed:
    """Stands for every provider: whatever the options name, the test's one instance."""

    provider: Any = None

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.provider


def use_client_options(monkeypatch: pytest.MonkeyPatch, **options: Any) -> None:
    """The network providers talk through these JsonClient options (``transport``, ``sleep``)."""
    monkeypatch.setattr(f"{__name__}.CLIENT_OPTIONS", options)
    for name, stand_in in (("openai", ScriptedOpenAI), ("anthropic", ScriptedAnthropic)):
        monkeypatch.setitem(
            SPECS, name, replace(SPECS[name], module=__name__, class_name=stand_in.__name__)
        )


def use_provider(monkeypatch: pytest.MonkeyPatch, provider: Any) -> Any:
    """Every provider, whatever the options say, is ``provider``."""
    monkeypatch.setattr(Installed, "provider", provider)
    for name, spec in list(SPECS.items()):
        monkeypatch.setitem(SPECS, name, replace(spec, module=__name__, class_name="Installed"))
    return provider
