"""The replay as a picture: tokens per request over the session, for each policy (matplotlib).

matplotlib is the optional extra ``ctxpack[plot]``, imported only here and only when a picture
is asked for; the picture comes back as bytes, for the caller to write where it wants.
"""

from __future__ import annotations

import io

from ..errors import ConfigError
from .report import USE_LABELS, settings_line
from .run import CHOSEN, KEEPS, SEED, UNTOUCHED, USES, Replay

FORMATS = ("svg", "png")
INSTALL = "pip install 'ctxpack[plot]'"


def render(replay: Replay, label: str, image_format: str) -> bytes:
    """An SVG or PNG: one panel per way of use, a line per policy, the threshold dashed."""
    if image_format not in FORMATS:
        raise ConfigError(f"render(): a picture is .svg or .png, not .{image_format}")
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: files only
        from matplotlib import pyplot
    except ImportError:
        raise ConfigError(f"render() needs matplotlib: {INSTALL}") from None
    figure, panels = pyplot.subplots(
        len(USES), 1, figsize=(10, 7), sharex=True, sharey=True, layout="constrained"
    )
    untouched = [request.tokens for request in replay.find(KEEPS, UNTOUCHED).bill.requests]
    for panel, use in zip(panels, USES, strict=True):
        panel.plot(untouched, color="0.6", label="untouched")
        for policy, style in ((SEED, "tab:red"), (CHOSEN, "tab:blue")):
            run = replay.find(use, policy)
            name = "every-turn (seed)" if policy == SEED else settings_line(replay)
            billed = run.bill.billed / replay.find(KEEPS, UNTOUCHED).bill.billed
            panel.plot(
                [request.tokens for request in run.bill.requests],
                color=style,
                label=f"{name}: billed {billed:.2f}x untouched",
            )
        panel.axhline(replay.settings.threshold, color="0.3", linestyle="--", linewidth=0.8)
        panel.set_title(f"caller {USE_LABELS[use]}", fontsize=10)
        panel.set_ylabel("tokens sent")
        panel.legend(fontsize=8, loc="upper left")
    panels[-1].set_xlabel("request")
    figure.suptitle(f"{label}: {replay.prices.describe()}", fontsize=11)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=image_format)
    pyplot.close(figure)
    return buffer.getvalue()
