"""One session's bill: each recorded request with its tokens, its model and why it wrote the
cache, and what the cache-aware policy would have billed on the same requests.

The counterfactual is the replay's (``replay.run``): the session's requests simulated through
``auto``'s cache-aware policy and untouched, calibrated on the recorded tokens and billed by the
provider's cache rules; their ratio, applied to the recorded input's cost, is what the input
would have cost with ctxpack (output is the model's, unchanged).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..ends.session_documents import SessionDocument
from ..replay import recordings
from ..replay.pricing import DEFAULT_PROFILE, PROFILES
from ..replay.run import CHOSEN, KEEPS, UNTOUCHED, replay
from ..session_files.usage import recorded_calls
from ..settings import Settings
from .causes import attribute

# The kinds of tokens a request is billed for, as the price table names them.
KINDS = ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output")


@dataclass(frozen=True, slots=True)
class Request:
    """One recorded model request, as the report adds it up."""

    time: float | None
    model: str | None
    input: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int
    new: int  # fresh tokens that were the conversation's new turns
    missed: int  # fresh tokens sent again
    cause: str | None  # why they were (None: nothing missed)
    line: int  # the record the request came before
    gap: float | None

    def tokens(self) -> dict[str, int]:
        return {kind: getattr(self, kind) for kind in KINDS}


@dataclass(frozen=True)
class SessionBill:
    agent: str
    session_id: str
    project: str
    path: str
    requests: tuple[Request, ...]
    with_ctxpack: float | None  # the input's cost with ctxpack, as a share of its cost without

    def as_json(self) -> dict:
        return {
            "agent": self.agent,
            "session": self.session_id,
            "project": self.project,
            "path": self.path,
            "with_ctxpack": self.with_ctxpack,
            "requests": [list(_fields(request)) for request in self.requests],
        }

    @classmethod
    def from_json(cls, value: dict) -> SessionBill:
        requests = tuple(Request(*fields) for fields in value["requests"])
        return cls(
            value["agent"],
            value["session"],
            value["project"],
            value["path"],
            requests,
            value["with_ctxpack"],
        )


def _fields(request: Request) -> Iterable:
    return (getattr(request, name) for name in Request.__slots__)


def bill_of(document: SessionDocument, rewrites: Iterable[float]) -> tuple[Request, ...] | None:
    """The recorded requests of a session with their causes, or None when it records none."""
    calls = recorded_calls(document.handle, document.format)
    if not calls:
        return None
    # where the provider bills cache writes (Anthropic's), a miss is written again; elsewhere
    # (OpenAI's automatic cache) it is plain input again
    writes_counted = document.format.cache_rules == "anthropic" or any(
        call.cache_write_5m or call.cache_write_1h for call in calls
    )
    return tuple(
        Request(
            call.time,
            call.model,
            call.input,
            call.cache_read,
            call.cache_write_5m,
            call.cache_write_1h,
            call.output,
            why.new,
            why.missed,
            why.cause,
            call.line,
            why.gap,
        )
        for call, why in zip(calls, attribute(calls, rewrites, writes_counted), strict=True)
    )


def with_ctxpack(document: SessionDocument, settings: Settings) -> float | None:
    """The cache-aware policy's simulated input bill over the untouched one, on the session's
    own requests (None where the file records no requests to calibrate on)."""
    recording = recordings.of(document)
    if not recording.recorded:
        return None
    prices = PROFILES[recording.profile or DEFAULT_PROFILE]
    result = replay(recording, settings, prices, policies=(CHOSEN,), uses=(KEEPS,))
    untouched = result.find(KEEPS, UNTOUCHED).bill.billed
    chosen = result.find(KEEPS, CHOSEN).bill.billed
    return round(chosen / untouched, 4) if untouched else None
