"""The real GitHub Copilot CLI (1.0.102), run offline against the local model server.

No GitHub account: ``COPILOT_OFFLINE`` with a provider of one's own (``COPILOT_PROVIDER_*``,
OpenAI Chat Completions at the server). A ``CopilotHome`` is a scratch folder that plays the
user's home; the package unpacks itself (235 MB) into ``XDG_CACHE_HOME`` on its first run, which
all homes share (``COPILOT_CACHE``). Sessions land in
``<home>/.copilot/session-state/<session id>/events.jsonl``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.process import AgentRun, agent_bin, run_agent
from agents.server import ModelServer

MODEL = "gpt-4.1"
COPILOT_CACHE = Path(tempfile.gettempdir()) / "ctxpack-copilot-cache"


@dataclass(frozen=True)
class CopilotHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def state(self) -> Path:
        return self.home / ".copilot" / "session-state"

    def session_file(self, session_id: str) -> Path:
        return self.state / session_id / "events.jsonl"


def run_copilot(
    home: CopilotHome,
    cwd: Path,
    prompt: str,
    server: ModelServer,
    *,
    resume: str | None = None,
    timeout: float = 120,
    wrapper: Sequence[str | Path] = (),
) -> AgentRun:
    home.home.mkdir(parents=True, exist_ok=True)
    before = set(home.state.glob("*/events.jsonl"))
    command = [str(agent_bin("copilot"))]
    if resume:
        command.append(f"--resume={resume}")
    command += ["-p", prompt, "--allow-all-tools", "--no-auto-update", "-s"]
    if not resume:
        command.append("--disable-client-telemetry")
    env = {
        "HOME": str(home.home),
        "XDG_CACHE_HOME": str(COPILOT_CACHE),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"{server.url}/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "sk-test-local-server",
        "COPILOT_MODEL": MODEL,
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_ALLOW_ALL": "true",
    }
    done = run_agent(command, cwd, env, timeout, wrapper=wrapper)
    made = sorted(set(home.state.glob("*/events.jsonl")) - before)
    session_id = resume or (made[0].parent.name if len(made) == 1 else None)
    return AgentRun(command, done.returncode, done.stdout, done.stderr, session_id)
