"""Running a real agent CLI from .agents/: where it is, a clean environment, what it returned."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from helpers import REPO

AGENTS_BIN = REPO / ".agents" / "node_modules" / ".bin"
# Keys and settings of the machine's user must never reach an agent under test.
_PRIVATE_PREFIXES = (
    "ANTHROPIC_",
    "CLAUDE_",
    "OPENAI_",
    "CODEX_",
    "CTXPACK_",
    "GEMINI_",
    "GOOGLE_",
    "QWEN_",
    "PI_",
    "COPILOT_",
    "GITHUB_",
    "GH_",
    "OPENCODE_",
    "CLINE_",
    "XDG_",
)


class AgentMissing(RuntimeError):
    """The pinned agents are not installed: `make agents` installs them (`make test` does)."""


def agent_bin(name: str) -> Path:
    path = AGENTS_BIN / name
    if not os.access(path, os.X_OK):
        raise AgentMissing(f"{path} is missing: run `make agents`")
    return path


@dataclass(frozen=True)
class AgentRun:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    session_id: str | None  # as the agent reported it

    def check(self) -> AgentRun:
        """Itself when the agent exited 0; otherwise an error showing what it said."""
        if self.returncode != 0:
            tail = (self.stderr or self.stdout)[-3000:]
            raise AssertionError(f"{self.command[0]} exited {self.returncode}:\n{tail}")
        return self


def run_agent(
    command: Sequence[str | Path],
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    user: tuple[int, int] | None = None,
    wrapper: Sequence[str | Path] = (),
) -> subprocess.CompletedProcess[str]:
    """Run an agent; ``user``: as that (uid, gid) instead of this process's user (as root);
    ``wrapper``: the command that runs the agent's command (``ctxpack run``)."""
    as_user = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
    return subprocess.run(
        [str(part) for part in (*wrapper, *command)],
        cwd=cwd,
        env={**clean_environment(), **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        **as_user,
    )


def clean_environment() -> dict[str, str]:
    return {
        name: value for name, value in os.environ.items() if not name.startswith(_PRIVATE_PREFIXES)
    }
