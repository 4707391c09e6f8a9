"""The report as a picture: the cost of each day, stacked by why it was paid, and beside it the
cost with ctxpack as a line. A day's cost is its cache writes (each cause its own colour, the
conversation's new turns among them) and the rest: cache reads, plain input and output."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import tzinfo
from typing import Any

from ..replay.plot import picture, plotting
from .bill import Request, SessionBill
from .causes import CAUSES
from .groups import add_up
from .prices import PriceTable

REST = "reads, plain input, output"


def render(
    bills: Sequence[SessionBill],
    prices: PriceTable,
    zone: tzinfo,
    keep: Callable[[Request, SessionBill], bool],
    image_format: str,
) -> bytes:
    pyplot = plotting(image_format)
    _, days = add_up(bills, "day", prices, zone, keep)
    figure, panel = pyplot.subplots(figsize=(10, 5.5), layout="constrained")
    labels = [day.key for day in days]
    positions = range(len(days))
    bottom = [0.0] * len(days)
    layers = [(cause, [day.causes_cost[cause] for day in days]) for cause in CAUSES]
    layers.append((REST, [day.cost - sum(day.causes_cost.values()) for day in days]))
    for name, heights in layers:
        if any(heights):
            panel.bar(positions, heights, bottom=bottom, label=name)
            bottom = [low + height for low, height in zip(bottom, heights, strict=True)]
    saving: Any = [day.with_ctxpack for day in days]
    panel.plot(positions, saving, color="black", marker="o", label="with ctxpack")
    panel.set_xticks(list(positions), labels, rotation=45, ha="right")
    panel.set_ylabel("US dollars")
    panel.legend(fontsize=8)
    panel.set_title(f"cost per day, by why the cache was written (prices as of {prices.as_of})")
    data = picture(figure, image_format)
    pyplot.close(figure)
    return data
