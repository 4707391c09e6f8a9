"""What ``ctxpack serve`` has done since it started: ``GET /ctxpack/stats``.

The estimated billed figures are what the upstream would charge for input with prompt caching:
the prefix a request shares with the one before it in its conversation (``ledger.py``) is read
from the cache, the rest is written to it; the estimated billed ratio is the compacted requests'
against the same requests sent untouched, both with their own cache.

The measured figures are what the upstream billed: the usage of each reply (``usage.py``),
priced by the provider's own cache rules (``replay.cache_rules``), next to the estimate of the
same requests untouched, put in the upstream's tokens (the estimate scaled by the upstream's
count of what was forwarded). Per conversation too: the newest ``CONVERSATIONS``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any

from ..replay.cache_rules import RULES, Usage
from ..replay.pricing import PROFILES
from .compaction import COMPACTED, RequestReport

CONVERSATIONS = 50  # conversations whose own figures are kept


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
    measured: Measured = field(default_factory=lambda: Measured())
    conversations: OrderedDict[str, Measured] = field(default_factory=OrderedDict)

    def measure(self, report: RequestReport, usage: Usage) -> str:
        """Add what the upstream billed for one request beside the estimate of the same request
        untouched, in the upstream's tokens (the estimate scaled by its count of what was
        forwarded); the log line's words for it."""
        paid = upstream_billed(usage, report.pricing)
        untouched = paid  # a request that went as it came
        if report.outcome == COMPACTED and report.tokens_out:
            scale = usage.tokens / report.tokens_out
            untouched = billed(report.cached_in, report.tokens_in, report.pricing) * scale
        self.measured.add(paid, untouched)
        mine = self.conversations.pop(report.reuse.conversation, None) or Measured()
        mine.add(paid, untouched)
        self.conversations[report.reuse.conversation] = mine  # the newest last
        while len(self.conversations) > CONVERSATIONS:
            self.conversations.popitem(last=False)
        words = f"billed {paid:.0f} (untouched ~{untouched:.0f})"
        if mine.ratio is not None and mine.ratio > 1:
            words += f"; this conversation so far: {mine.ratio:.2f}x untouched"
        return words

    def report(self) -> dict[str, Any]:
        figures: dict[str, Any] = asdict(self)
        figures["billed_in"] = round(self.billed_in)
        figures["billed_out"] = round(self.billed_out)
        figures["tokens_saved"] = self.tokens_in - self.tokens_out
        ratio = self.billed_out / self.billed_in if self.billed_in else None
        figures["estimated_billed_ratio"] = None if ratio is None else round(ratio, 3)
        figures["measured"] = self.measured.report()
        figures["conversations"] = {
            name: mine.report() for name, mine in reversed(self.conversations.items())
        }
        return figures


@dataclass
class Measured:
    """Requests whose reply said what the upstream billed: that bill, and the estimate of the
    same requests sent untouched, both in input-price tokens of the upstream's counting."""

    requests: int = 0
    billed: float = 0.0
    untouched: float = 0.0

    def add(self, billed: float, untouched: float) -> None:
        self.requests += 1
        self.billed += billed
        self.untouched += untouched

    @property
    def ratio(self) -> float | None:
        return self.billed / self.untouched if self.untouched else None

    def report(self) -> dict[str, Any]:
        ratio = self.ratio
        return {
            "requests": self.requests,
            "billed": round(self.billed),
            "untouched": round(self.untouched),
            "billed_ratio": None if ratio is None else round(ratio, 3),
        }


def upstream_billed(usage: Usage, pricing: str) -> float:
    """What the upstream billed for a request's input, in input-price tokens, by its own
    provider's cache prices (the profile ``pricing`` names the provider)."""
    return usage.billed(RULES[PROFILES[pricing].rules].prices)
