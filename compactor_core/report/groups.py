"""Bills added up: by day, week, month, session, project, agent or model, and in total.

Each request is priced at its own model's prices (``prices``); a request whose model has no
price adds its tokens but no money, and its model is named under ``unknown_models``. The
cost of each cause is the cost of the fresh tokens it is given; the cost with ctxpack is each
request's output at its price plus its input's cost times its session's with-ctxpack share.
Days, weeks and months are the caller's time zone's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from .bill import Request, SessionBill
from .causes import CAUSES, NEW_TURNS
from .prices import ModelPrice, PriceTable

BY = ("day", "week", "month", "session", "project", "agent", "model")
NO_TIME = "(no time)"


@dataclass
class Total:
    """What a group of requests came to."""

    key: str = "total"
    requests: int = 0
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    output: int = 0
    cost: float = 0.0
    with_ctxpack: float = 0.0
    causes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))
    causes_cost: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0.0))
    unknown_models: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)

    def add(self, request: Request, bill: SessionBill, priced: Priced | None) -> None:
        """Add one request; ``priced``: its money (None: its model has no price)."""
        self.requests += 1
        self.input += request.input
        self.cache_read += request.cache_read
        self.cache_write += request.cache_write_5m + request.cache_write_1h
        self.cache_write_1h += request.cache_write_1h
        self.output += request.output
        self.sessions.add(bill.session_id)
        if request.cause is not None:
            self.causes[request.cause] += request.missed
        self.causes[NEW_TURNS] += request.new
        if priced is None:
            self.unknown_models.add(request.model or "(no model)")
            return
        self.cost += priced.cost
        self.with_ctxpack += priced.with_ctxpack
        if request.cause is not None:
            self.causes_cost[request.cause] += priced.missed
        self.causes_cost[NEW_TURNS] += priced.new

    def as_json(self) -> dict:
        return {
            "key": self.key,
            "requests": self.requests,
            "sessions": len(self.sessions),
            "input": self.input,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "cache_write_1h": self.cache_write_1h,
            "output": self.output,
            "cost": round(self.cost, 4),
            "causes": {cause: tokens for cause, tokens in self.causes.items() if tokens},
            "causes_cost": {
                cause: round(cost, 4) for cause, cost in self.causes_cost.items() if cost
            },
            "with_ctxpack": round(self.with_ctxpack, 4),
            "unknown_models": sorted(self.unknown_models),
        }


@dataclass(frozen=True, slots=True)
class Priced:
    """One request's money: its cost, its cost with ctxpack, and the cost of its fresh tokens
    as new turns and as a miss."""

    cost: float
    with_ctxpack: float
    new: float
    missed: float


def priced(request: Request, bill: SessionBill, prices: PriceTable) -> Priced | None:
    price = prices.of(request.model)
    if price is None:
        return None
    cost = price.cost(request.tokens())
    output = price.output * request.output * 1e-6
    share = 1.0 if bill.with_ctxpack is None else bill.with_ctxpack
    fresh = request.new + request.missed
    fresh_cost = _fresh_cost(request, price) if fresh else 0.0
    new = fresh_cost * request.new / fresh if fresh else 0.0
    return Priced(cost, output + (cost - output) * share, new, fresh_cost - new)


def _fresh_cost(request: Request, price: ModelPrice) -> float:
    if request.cache_write_5m or request.cache_write_1h:
        written = price.cache_write_5m * request.cache_write_5m
        return (written + price.cache_write_1h * request.cache_write_1h) * 1e-6
    return price.input * request.input * 1e-6


def add_up(
    bills: Iterable[SessionBill],
    by: str,
    prices: PriceTable,
    zone: tzinfo,
    keep: Callable[[Request, SessionBill], bool] = lambda _request, _bill: True,
) -> tuple[Total, list[Total]]:
    """The total and each group's, the groups in their key's order."""
    total, groups = Total(), {}
    key_of = _KEYS[by]
    for bill in bills:
        for request in bill.requests:
            if not keep(request, bill):
                continue
            key = key_of(request, bill, zone)
            group = groups.setdefault(key, Total(key))
            money = priced(request, bill, prices)
            group.add(request, bill, money)
            total.add(request, bill, money)
    return total, [groups[key] for key in sorted(groups)]


def moment(request: Request, zone: tzinfo) -> datetime | None:
    return None if request.time is None else datetime.fromtimestamp(request.time, zone)


def _dated(form: Callable[[datetime], str]) -> Callable[[Request, SessionBill, tzinfo], str]:
    def key(request: Request, _bill: SessionBill, zone: tzinfo) -> str:
        when = moment(request, zone)
        return NO_TIME if when is None else form(when)

    return key


def _iso_week(when: datetime) -> str:
    year, week, _ = when.isocalendar()
    return f"{year}-W{week:02d}"


_KEYS: dict[str, Callable[[Request, SessionBill, tzinfo], str]] = {
    "day": _dated(lambda when: when.strftime("%Y-%m-%d")),
    "week": _dated(_iso_week),
    "month": _dated(lambda when: when.strftime("%Y-%m")),
    "session": lambda _request, bill, _zone: f"{bill.agent} {bill.session_id}",
    "project": lambda _request, bill, _zone: bill.project,
    "agent": lambda _request, bill, _zone: bill.agent,
    "model": lambda request, _bill, _zone: request.model or "(no model)",
}
