"""The replay as a picture of the bill (issue 31): what each policy was billed, request by request.

The upper panel is the cumulative billed input (in input tokens) of each policy, beside the
history untouched and, for a session file that records its usage, the bill as recorded; the two
ways of use share it, one line where they were billed alike. The lower panel is each request of
the chosen policy (the agent loop that keeps its output) as the provider billed it: what was read
from the cache, written into it and sent as plain input, the threshold dashed across it. A dotted
line marks each request that carried a new summary.

matplotlib is the optional extra ``ctxpack[plot]``, imported only here and only when a picture
is asked for; the picture comes back as bytes, for the caller to write where it wants.
"""

from __future__ import annotations

import io
from itertools import accumulate
from typing import Any

from ..errors import ConfigError
from .report import USE_LABELS, settings_line
from .run import BAREAGENT, CHOSEN, KEEPS, RESENDS, UNTOUCHED, Replay, Run

FORMATS = ("svg", "png")
INSTALL = "pip install 'ctxpack[plot]'"
COLOURS = {BAREAGENT: "tab:red", CHOSEN: "tab:blue"}
PARTS = (("read from the cache", "tab:green"), ("written", "tab:orange"), ("plain", "0.7"))


def plotting(image_format: str) -> Any:
    """matplotlib's pyplot, drawing to files only; a ConfigError where it cannot."""
    if image_format not in FORMATS:
        raise ConfigError(f"plotting(): a picture is .svg or .png, not .{image_format}")
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: files only
        from matplotlib import pyplot
    except ImportError:
        raise ConfigError(f"plotting() needs matplotlib: {INSTALL}") from None
    return pyplot


def picture(figure: Any, image_format: str) -> bytes:
    """The figure as the bytes of an image file, the figure closed."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=image_format)
    figure.clf()
    return buffer.getvalue()


def render(replay: Replay, label: str, image_format: str) -> bytes:
    """An SVG or PNG: the cumulative bill above, the chosen policy's requests below."""
    pyplot = plotting(image_format)
    figure, (bill, requests) = pyplot.subplots(
        2, 1, figsize=(10, 7.5), sharex=True, layout="constrained", height_ratios=(3, 2)
    )
    _cumulative(bill, replay)
    _requests(requests, replay)
    for request in replay.find(KEEPS, CHOSEN).new_summaries:
        for panel in (bill, requests):
            panel.axvline(request, color="tab:blue", linestyle=":", linewidth=0.8)
    requests.set_xlabel("request (dotted: a new summary)")
    figure.suptitle(f"{label}: {replay.prices.describe()}", fontsize=11)
    data = picture(figure, image_format)
    pyplot.close(figure)
    return data


def _cumulative(panel: Any, replay: Replay) -> None:
    base = replay.find(KEEPS, UNTOUCHED).bill
    panel.plot(_running(base.requests, base.prices), color="0.5", label="untouched: 1.00x")
    if replay.recorded is not None:
        recorded = list(accumulate(replay.recorded.per_request))
        ratio = replay.recorded.billed / base.billed if base.billed else 0.0
        panel.plot(recorded, color="black", linestyle="--", label=f"as recorded: {ratio:.2f}x")
    for policy in (BAREAGENT, CHOSEN):
        name = "every-turn (BareAgent's)" if policy == BAREAGENT else settings_line(replay)
        keeps, resends = replay.find(KEEPS, policy), replay.find(RESENDS, policy)
        alike = keeps.bill.requests == resends.bill.requests
        ways = (keeps,) if alike else (keeps, resends)
        for run in ways:
            use = "either way of use" if alike else USE_LABELS[run.use]
            ratio = run.bill.billed / base.billed if base.billed else 0.0
            panel.plot(
                _running(run.bill.requests, run.bill.prices),
                color=COLOURS[policy],
                linestyle="-" if run.use == KEEPS else "-.",
                label=f"{name}, {use}: {ratio:.2f}x",
            )
    panel.set_ylabel("billed input, cumulative (input tokens)")
    panel.legend(fontsize=8, loc="upper left")


def _running(requests: Any, prices: Any) -> list[float]:
    return list(accumulate(request.usage.billed(prices) for request in requests))


def _requests(panel: Any, replay: Replay) -> None:
    run: Run = replay.find(KEEPS, CHOSEN)
    usages = [request.usage for request in run.bill.requests]
    numbers = range(len(usages))
    bottom = [0] * len(usages)
    parts = ([u.read for u in usages], [u.written for u in usages], [u.plain for u in usages])
    for values, (name, colour) in zip(parts, PARTS, strict=True):
        panel.bar(numbers, values, bottom=bottom, width=1.0, color=colour, label=name)
        bottom = [low + value for low, value in zip(bottom, values, strict=True)]
    panel.axhline(replay.settings.threshold, color="0.3", linestyle="--", linewidth=0.8)
    panel.set_ylabel(f"tokens per request\n{settings_line(replay).split(',')[0]}, keeps")
    panel.legend(fontsize=8, loc="upper left", title="threshold dashed", title_fontsize=8)
