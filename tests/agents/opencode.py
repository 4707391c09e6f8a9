"""The real OpenCode (1.18.33), run offline against the local model server.

An ``OpenCodeHome`` is a scratch folder that plays the user's home; its
``.config/opencode/opencode.json`` declares a provider of its own (the bundled
``@ai-sdk/openai-compatible``, at the server) and allows every tool. OpenCode keeps every session
of the user in one SQLite database, ``~/.local/share/opencode/opencode.db`` (tables ``session``,
``message``, ``part`` and an ``event`` log), in WAL mode while it runs. ``opencode export ID``
prints a session as JSON. A session resumes from the folder it was made in (its
``session.directory``).

A prompt given as one argument with spaces is stored wrapped in quotes, so it is passed as
separate words. Before it answers, OpenCode asks ``small_model`` for a title (no tools).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.process import AgentRun, agent_bin, clean_environment, run_agent
from agents.server import ModelServer

MODEL = "fake/fake-model"
_QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
}


@dataclass(frozen=True)
class OpenCodeHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def database(self) -> Path:
        return self.home / ".local" / "share" / "opencode" / "opencode.db"

    def configure(self, server: ModelServer) -> None:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": f"{server.url}/v1", "apiKey": "sk-test-local-server"},
            "models": {"fake-model": {"name": "Fake", "tool_call": True}},
        }
        config = {
            "provider": {"fake": provider},
            "model": MODEL,
            "small_model": MODEL,
            "autoupdate": False,
            "share": "disabled",
            # a refused tool ends OpenCode's turn: every tool is allowed
            "permission": {
                tool: "allow"
                for tool in ("read", "edit", "bash", "glob", "grep", "list", "webfetch")
            }
            | {"external_directory": "allow"},
        }
        folder = self.home / ".config" / "opencode"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "opencode.json").write_text(json.dumps(config))

    def env(self) -> dict[str, str]:
        return {**_QUIET, "HOME": str(self.home)}

    def rows(self, query: str, *parameters: Any) -> list[tuple[Any, ...]]:
        """Rows of the database, read-only (never while OpenCode runs: it holds the WAL)."""
        uri = f"file:{self.database}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as connection:
            return connection.execute(query, parameters).fetchall()

    def latest_session(self) -> str | None:
        found = self.rows("SELECT id FROM session ORDER BY time_created DESC LIMIT 1")
        return found[0][0] if found else None


def run_opencode(
    home: OpenCodeHome,
    cwd: Path,
    prompt: str,
    server: ModelServer,
    *,
    resume: str | None = None,
    timeout: float = 180,
) -> AgentRun:
    """``opencode run PROMPT`` in ``cwd``: a new session, or ``resume`` one."""
    home.configure(server)
    command = [str(agent_bin("opencode")), "run", "--pure", "-m", MODEL]
    if resume:
        command += ["-s", resume]
    command += prompt.split()
    done = run_agent(command, cwd, home.env(), timeout)
    session_id = resume or (home.latest_session() if home.database.exists() else None)
    return AgentRun(command, done.returncode, done.stdout, done.stderr, session_id)


def export(home: OpenCodeHome, cwd: Path, session_id: str, path: Path) -> bytes:
    """``opencode export ID`` into ``path``: the session as OpenCode itself writes it out. Its
    stdout goes to the file, not a pipe: on a pipe OpenCode exits before a long export is out."""
    command = [str(agent_bin("opencode")), "export", session_id]
    with open(path, "wb") as out:
        done = subprocess.run(
            command,
            cwd=cwd,
            env={**clean_environment(), **home.env()},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    if done.returncode != 0:
        raise AssertionError(f"opencode export exited {done.returncode}: {done.stderr[-2000:]!r}")
    return path.read_bytes()


def copy_store(source: OpenCodeHome, target: OpenCodeHome) -> None:
    """The whole database into another home, through SQLite's online backup (consistent, WAL
    included; never while OpenCode writes). ``opencode import`` of an export is not used: a
    session imported so resumed, answered, and then never exited (measured, 1.18.33)."""
    target.database.parent.mkdir(parents=True, exist_ok=True)
    with (
        closing(sqlite3.connect(source.database)) as original,
        closing(sqlite3.connect(target.database)) as copy,
    ):
        original.backup(copy)
