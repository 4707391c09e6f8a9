"""Summary providers: who writes the summary for full compaction (SPEC §7).

Every provider implements :class:`~compactor_core.providers.base.Summarizer`. Network providers
import httpx only when they are built, so a run that never calls a model never pays for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Summarizer, SummaryRequest

__all__ = ["Summarizer", "SummaryRequest"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the CLI reads the provider table (registry) at start-up to offer
    # --provider, and must not pay for the classes every provider implements.
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.base"), name)
