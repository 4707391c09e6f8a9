"""What ``ctxpack serve`` has done since it started: ``GET /ctxpack/stats``.

The billed figures estimate what the upstream charges for input with prompt caching: the
prefix a request shares with the one before it in its conversation (``ledger.py``) is read from
the cache, the rest is written to it. The estimated billed ratio is what the compacted requests
cost against what the same requests would have cost sent untouched, both with their own cache.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..replay.pricing import PROFILES


def billed(cached: int, total: int, pricing: str) -> float:
    """Input tokens as billed, in input-price tokens: ``cached`` of ``total`` read from cache,
    at the prices of the replay's profile ``pricing`` (``compactor_core.replay.pricing``)."""
    prices = PROFILES[pricing]
    return prices.read * cached + prices.write * (total - cached)


@dataclass
class Stats:
    """Counters, changed only on the server's event loop (so without a lock)."""

    requests: int = 0  # every request for the upstream (these figures' own aside)
    model_requests: int = 0  # of those, requests for a model's reply (the three APIs)
    compacted: int = 0  # forwarded smaller
    unchanged: int = 0  # nothing to compact yet
    as_is: int = 0  # forwarded as they came: not JSON, too large, no history, ...
    upstream_errors: int = 0  # answered 502 or 504: the upstream could not be reached in time
    tokens_in: int = 0  # estimated tokens of the histories as the callers sent them
    tokens_out: int = 0  # ... and as they were forwarded
    cache_stable: int = 0  # forwarded requests that began with the whole of the one before
    cache_breaks: int = 0  # ... and those that did not
    billed_in: float = 0.0  # input billed, in input-price tokens, had they gone untouched
    billed_out: float = 0.0  # ... as forwarded

    def report(self) -> dict[str, Any]:
        figures: dict[str, Any] = asdict(self)
        figures["billed_in"] = round(self.billed_in)
        figures["billed_out"] = round(self.billed_out)
        figures["tokens_saved"] = self.tokens_in - self.tokens_out
        ratio = self.billed_out / self.billed_in if self.billed_in else None
        figures["estimated_billed_ratio"] = None if ratio is None else round(ratio, 3)
        return figures
