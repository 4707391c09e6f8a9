"""The real Claude Code (2.1.328), run offline against the local model server.

A ``ClaudeHome`` is a scratch folder that plays the user's home and ``CLAUDE_CONFIG_DIR``: the
sessions land in ``<config>/projects/<project>/<session id>.jsonl``, where ``<project>`` is the
working folder with every character other than a letter or digit replaced by ``-``.

    home = ClaudeHome(tmp_path / "claude")
    run = run_claude(home, project, "list the files", server, session_id=NEW_ID).check()
    run_claude(home, project, "and now?", server, resume=run.session_id).check()
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.process import AgentRun, agent_bin, run_agent
from agents.server import ModelServer

# Nothing but the model server is ever asked: no telemetry, updates, error reports or feedback.
_QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "API_TIMEOUT_MS": "60000",
    "IS_SANDBOX": "1",  # tools run without asking, also as root
}


@dataclass(frozen=True)
class ClaudeHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def config(self) -> Path:
        return self.root / "config"

    def project_dir(self, cwd: Path) -> Path:
        return self.config / "projects" / project_folder_name(cwd)

    def session_file(self, cwd: Path, session_id: str) -> Path:
        return self.project_dir(cwd) / f"{session_id}.jsonl"


def project_folder_name(cwd: Path) -> str:
    """How Claude Code names a project's folder: ``/tmp/a_b.c`` -> ``-tmp-a-b-c``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def run_claude(
    home: ClaudeHome,
    cwd: Path,
    prompt: str,
    server: ModelServer,
    *,
    resume: str | None = None,
    session_id: str | None = None,
    model: str | None = None,
    timeout: float = 120,
    user: tuple[int, int] | None = None,
    wrapper: Sequence[str | Path] = (),
    extra: Sequence[str] = (),
    more_env: dict[str, str] | None = None,
) -> AgentRun:
    """``claude -p PROMPT`` in ``cwd``: a new session (``session_id``), or ``resume`` one;
    ``model``: ``--model`` (default: Claude Code's own); ``user``: as that (uid, gid), whose
    the home must be; ``extra``: more options (``--mcp-config FILE``); ``more_env``: more
    variables."""
    home.home.mkdir(parents=True, exist_ok=True)
    home.config.mkdir(parents=True, exist_ok=True)
    command: list[str] = [str(agent_bin("claude")), "-p", "--output-format", "json"]
    command += ["--permission-mode", "bypassPermissions"]
    if resume:
        command += ["--resume", resume]
    elif session_id:
        command += ["--session-id", session_id]
    if model:
        command += ["--model", model]
    command += [*extra, prompt]
    env = {
        **_QUIET,
        "HOME": str(home.home),
        "CLAUDE_CONFIG_DIR": str(home.config),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-local-server",
        **(more_env or {}),
    }
    done = run_agent(command, cwd, env, timeout, user, wrapper=wrapper)
    return AgentRun(
        command, done.returncode, done.stdout, done.stderr, reported_session_id(done.stdout)
    )


def reported_session_id(stdout: str) -> str | None:
    """``--output-format json`` prints one result object naming the session."""
    try:
        result = json.loads(stdout)
    except ValueError:
        return None
    return result.get("session_id") if isinstance(result, dict) else None
