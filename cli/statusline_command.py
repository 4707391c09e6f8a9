"""``ctxpack statusline`` as click knows it: for ``--help``; a run takes the fast path
(``cli/entry.py`` → ``cli/statusline.py``), which never imports click."""

from __future__ import annotations

import click

from .options import epilog
from .statusline import main


@click.command(
    epilog=epilog(
        "cat input.json | ctxpack statusline    # the line Claude Code would show",
    ),
)
def statusline() -> None:
    """Claude Code's statusLine command: one line from the JSON it passes on standard input.

    The context against the window, whether the cache is warm (the last request within its time
    to live), the session's cost from its recorded usage, and what serve saved when it is in front.
    `ctxpack setup claude --statusline` makes it Claude Code's statusLine.
    """
    main()
