"""The real Gemini CLI (0.61.0), run offline against the local model server.

A ``GeminiHome`` is a scratch folder that plays the user's home: ``.gemini/settings.json`` there
chooses an API key, turns off folder trust, telemetry and updates; ``GOOGLE_GEMINI_BASE_URL``
points the CLI at the server. The model is pinned (``-m``), so no routing request comes first;
``--yolo`` lets headless mode run every tool. Gemini CLI masks older outputs
when it sends them (a preview and the path of a file with a random name) once they pass 30,000
tokens, and this version takes no setting for it: its sessions here stay under that. Sessions
land in
``<home>/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agents.claude import reported_session_id
from agents.process import AgentRun, agent_bin, run_agent
from agents.server import ModelServer

MODEL = "gemini-2.5-flash"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "telemetry": {"enabled": False},
}


@dataclass(frozen=True)
class GeminiHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    def session_file(self, session_id: str) -> Path:
        """The file that holds the session's messages: a resume in another minute starts a file
        of its own beside it, which holds little more than its header."""
        chats = self.home / ".gemini" / "tmp"
        found = sorted(chats.glob(f"*/chats/session-*-{session_id[:8]}.jsonl"))
        if not found:
            raise AssertionError(f"no Gemini session file for {session_id}")
        return max(found, key=lambda path: path.stat().st_size)


def run_gemini(
    home: GeminiHome,
    cwd: Path,
    prompt: str,
    server: ModelServer,
    *,
    resume: str | None = None,
    timeout: float = 120,
) -> AgentRun:
    settings = home.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(SETTINGS))
    command = [str(agent_bin("gemini")), "-m", MODEL, "--yolo", "-o", "json"]
    if resume:
        command += ["--resume", resume]
    command += ["-p", prompt]
    env = {
        "HOME": str(home.home),
        "GEMINI_API_KEY": "fake-key-local-server",
        "GOOGLE_GEMINI_BASE_URL": server.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    done = run_agent(command, cwd, env, timeout)
    # ``-o json`` prints one result object naming the session, as Claude Code's does
    return AgentRun(
        command, done.returncode, done.stdout, done.stderr, reported_session_id(done.stdout)
    )
