"""``ctxpack serve --install``: the service file written, and how to start it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from compactor_core.disk.atomic import atomic_write
from compactor_core.serve import service

from . import io


def install_service(serve_args: list[str]) -> None:
    """Write the user's service running ``ctxpack serve SERVE_ARGS`` and say how to start it."""
    command = [*ctxpack_command(), "serve", *serve_args]
    home = Path.home()
    if sys.platform == "darwin":
        path = home / "Library" / "LaunchAgents" / f"{service.LAUNCHD_LABEL}.plist"
        log = home / "Library" / "Logs" / "ctxpack-serve.log"
        content = service.launchd_agent(command, log)
        start = [f"launchctl load -w {path}", f"log: {log}"]
    else:
        config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
        path = Path(config) / "systemd" / "user" / service.UNIT_NAME
        content = service.systemd_unit(command)
        start = [
            f"systemctl --user daemon-reload && systemctl --user enable --now {service.UNIT_NAME}",
            f"log: journalctl --user -u {service.UNIT_NAME}",
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, content)
    io.write_stdout(f"{path}\n".encode())
    io.warn(f"wrote {path}; start it now and at every log-in:")
    for line in start:
        io.warn(f"  {line}")


def ctxpack_command() -> list[str]:
    """How the service runs this ctxpack: its script when it was run by it, else its Python."""
    script = Path(sys.argv[0])
    if script.name == "ctxpack" and script.is_file():
        return [str(script.absolute())]
    return this_ctxpack()


def this_ctxpack() -> list[str]:
    """This ctxpack, with this Python and its import path (-P: not the working folder's)."""
    return [sys.executable, "-P", "-c", "from cli.main import main; main()"]
