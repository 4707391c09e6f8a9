"""The real pi coding agent (0.73.1), run offline against the local model server.

A ``PiHome`` is a scratch folder that plays the user's home; its ``.pi/agent/models.json``
declares a provider of its own that speaks OpenAI Chat Completions to the server. Sessions land
in ``<home>/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``; ``--session PATH`` resumes one
from any path and appends to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agents.process import AgentRun, agent_bin, run_agent
from agents.server import ModelServer

PROVIDER, MODEL = "fake", "fake-model"


@dataclass(frozen=True)
class PiHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def agent_dir(self) -> Path:
        return self.home / ".pi" / "agent"

    def session_files(self) -> list[Path]:
        return sorted((self.agent_dir / "sessions").glob("*/*.jsonl"))

    def configure(self, server: ModelServer, context_window: int) -> None:
        model = {
            "id": MODEL,
            "reasoning": False,
            "input": ["text", "image"],  # so that an image a tool read is sent
            "contextWindow": context_window,
            "maxTokens": 4096,
        }
        provider = {
            "baseUrl": f"{server.url}/v1",
            "api": "openai-completions",
            "apiKey": "sk-test-local-server",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [model],
        }
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        (self.agent_dir / "models.json").write_text(json.dumps({"providers": {PROVIDER: provider}}))


def run_pi(
    home: PiHome,
    cwd: Path,
    prompt: str,
    server: ModelServer,
    *,
    session: Path | None = None,
    context_window: int = 128000,
    timeout: float = 120,
) -> AgentRun:
    """``pi -p PROMPT`` in ``cwd``: a new session, or the one in the file ``session``."""
    home.configure(server, context_window)
    before = set(home.session_files())
    command = [str(agent_bin("pi")), "--provider", PROVIDER, "--model", MODEL]
    if session is not None:
        command += ["--session", str(session)]
    command += ["-p", prompt]
    env = {
        "HOME": str(home.home),
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
        "PI_SKIP_VERSION_CHECK": "1",
    }
    done = run_agent(command, cwd, env, timeout)
    made = sorted(set(home.session_files()) - before)
    path = session or (made[0] if len(made) == 1 else None)
    return AgentRun(command, done.returncode, done.stdout, done.stderr, str(path) if path else None)
