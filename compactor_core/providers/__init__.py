"""Summary providers: who writes the summary for full compaction (SPEC §7).

Every provider implements :class:`~compactor_core.providers.base.Summarizer`. Network providers
import httpx only when they are built, so a run that never calls a model never pays for it.
"""

from __future__ import annotations

from .base import Summarizer, SummaryRequest

__all__ = ["Summarizer", "SummaryRequest"]
