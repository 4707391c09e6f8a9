"""The ``ctxpack`` executable: ``ctxpack statusline`` on a path of its own, every other command
through click (``cli/main.py``).

Claude Code runs its statusline command at every refresh; importing click and the command table
would be most of its time, so that one command is read from the arguments here, before anything.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["statusline"]:
        from .statusline import main as statusline

        statusline()
        return
    from . import io
    from .main import main as every_command

    io.run_to_the_end(every_command)
