"""``ctxpack serve --install``: serve as a service of the user's, started at log-in and kept up.

Linux: a systemd user unit; macOS: a launchd agent. Both run the command given, as it is.
"""

from __future__ import annotations

import plistlib
import re
from collections.abc import Sequence
from pathlib import Path

UNIT_NAME = "ctxpack-serve.service"
LAUNCHD_LABEL = "io.ctxpack.serve"
_PLAIN = re.compile(r"[A-Za-z0-9_./:=,+@-]+")


def systemd_unit(command: Sequence[str]) -> bytes:
    """The user unit that runs ``command`` and restarts it when it fails."""
    return (
        "[Unit]\n"
        "Description=ctxpack serve: agents' requests compacted on their way to the API\n"
        "After=network-online.target\n"
        "\n"
        "[Service]\n"
        f"ExecStart={' '.join(_systemd_quoted(part) for part in command)}\n"
        "Restart=on-failure\n"
        "# API keys for --provider: Environment=NAME=value, or EnvironmentFile=%h/.config/…\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    ).encode()


def launchd_agent(command: Sequence[str], log: Path) -> bytes:
    """The launchd agent that runs ``command`` at log-in and keeps it running."""
    agent = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": list(command),
        "RunAtLoad": True,
        "KeepAlive": True,
        "StandardErrorPath": str(log),
    }
    return plistlib.dumps(agent)


def _systemd_quoted(part: str) -> str:
    """One word of ExecStart: quoted when it needs to be; ``%`` is systemd's own escape."""
    if _PLAIN.fullmatch(part):
        return part
    escaped = part.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'
