"""The real Qwen Code (0.24.4), run offline against the local model server.

A ``QwenHome`` is a scratch folder that plays the user's home: ``.qwen/settings.json`` there
selects the OpenAI-compatible provider and turns off folder trust, telemetry, updates and the
background memory request that would follow every turn; ``OPENAI_BASE_URL`` points it at the
server. The prompt is positional (one-shot), ``--yolo`` runs every tool. Sessions land in
``<home>/.qwen/projects/<cwd with / as ->/chats/<session id>.jsonl``, and a session resumes only
from the folder it was made in (its records' ``cwd``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.process import AgentRun, agent_bin, run_agent
from agents.server import ModelServer

MODEL = "fake-model"
SETTINGS = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False},
    "memory": {"enableManagedAutoMemory": False},
}


@dataclass(frozen=True)
class QwenHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    def chats(self, cwd: Path) -> Path:
        return self.home / ".qwen" / "projects" / project_folder_name(cwd) / "chats"

    def session_file(self, cwd: Path, session_id: str) -> Path:
        return self.chats(cwd) / f"{session_id}.jsonl"


def project_folder_name(cwd: Path) -> str:
    """How Qwen Code names a project's folder: every character but letters and digits as ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def run_qwen(
    home: QwenHome,
    cwd: Path,
    prompt: str,
    server: ModelServer,
    *,
    resume: str | None = None,
    timeout: float = 120,
    wrapper: Sequence[str | Path] = (),
    more_settings: dict | None = None,
) -> AgentRun:
    """``qwen PROMPT`` in ``cwd``; ``more_settings``: keys added to its settings.json
    (``mcpServers``)."""
    settings = home.home / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({**SETTINGS, **(more_settings or {})}))
    before = set(home.chats(cwd).glob("*.jsonl"))
    command = [str(agent_bin("qwen")), "--auth-type", "openai", "-m", MODEL, "--yolo"]
    if resume:
        command += ["--resume", resume]
    command.append(prompt)
    env = {
        "HOME": str(home.home),
        "OPENAI_API_KEY": "sk-test-local-server",
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "OPENAI_MODEL": MODEL,
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }
    done = run_agent(command, cwd, env, timeout, wrapper=wrapper)
    made = sorted(set(home.chats(cwd).glob("*.jsonl")) - before)
    session_id = resume or (made[0].stem if len(made) == 1 else None)
    return AgentRun(command, done.returncode, done.stdout, done.stderr, session_id)
