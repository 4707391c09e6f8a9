"""The real Codex CLI (0.169.0), run offline against the local model server.

A ``CodexHome`` is a scratch folder that plays the user's home and ``CODEX_HOME``; its
``config.toml`` points Codex at the server as a Responses API provider of its own, without
WebSockets and without retries (so nothing waits on them). Sessions land in
``<codex home>/sessions/YYYY/MM/DD/rollout-<timestamp>-<session id>.jsonl``.

    home = CodexHome(tmp_path / "codex")
    run = run_codex(home, project, "list the files", server).check()
    run_codex(home, project, "and now?", server, resume=run.session_id).check()
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.process import AgentRun, agent_bin, run_agent
from agents.server import ModelServer

MODEL = "gpt-test"  # unknown to Codex: its fallback metadata, and plain function tools


@dataclass(frozen=True)
class CodexHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def codex_home(self) -> Path:
        return self.root / "codex"

    def session_file(self, session_id: str) -> Path:
        found = sorted((self.codex_home / "sessions").rglob(f"rollout-*{session_id}.jsonl"))
        if len(found) != 1:
            raise AssertionError(f"{len(found)} rollout files for session {session_id}")
        return found[0]

    def configure(
        self,
        server: ModelServer,
        auto_compact_tokens: int | None,
        remote_compaction: bool = False,
        builtin_provider: bool = False,
        more_config: Sequence[str] = (),
    ) -> None:
        """``remote_compaction``: the provider is named OpenAI, and Codex compacts the way it
        does with OpenAI's own API: the model's encrypted ``compaction`` item.
        ``builtin_provider``: Codex's own OpenAI provider at the server, as the README points
        Codex at ``ctxpack serve`` (``openai_base_url``): it tries a WebSocket first."""
        lines = [f'model = "{MODEL}"', f'openai_base_url = "{server.url}/v1"']
        if builtin_provider:
            self.codex_home.mkdir(parents=True, exist_ok=True)
            (self.codex_home / "config.toml").write_text("\n".join(lines) + "\n")
            return
        lines.insert(1, 'model_provider = "ctxpack-test"')
        if auto_compact_tokens is not None:
            lines.append(f"model_auto_compact_token_limit = {auto_compact_tokens}")
        lines += [
            "[model_providers.ctxpack-test]",
            f'name = "{"OpenAI" if remote_compaction else "ctxpack test model"}"',
            f'base_url = "{server.url}/v1"',
            'wire_api = "responses"',
            'env_key = "OPENAI_API_KEY"',
            "supports_websockets = false",
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "stream_idle_timeout_ms = 60000",
            *more_config,
        ]
        self.codex_home.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text("\n".join(lines) + "\n")


def run_codex(
    home: CodexHome,
    cwd: Path,
    prompt: str,
    server: ModelServer,
    *,
    resume: str | None = None,
    auto_compact_tokens: int | None = None,
    remote_compaction: bool = False,
    builtin_provider: bool = False,
    timeout: float = 120,
    wrapper: Sequence[str | Path] = (),
    more_config: Sequence[str] = (),
) -> AgentRun:
    """``codex exec PROMPT`` in ``cwd``: a new session, or ``resume`` one; ``more_config``:
    lines added to its config.toml (tables such as ``[mcp_servers.NAME]``)."""
    home.home.mkdir(parents=True, exist_ok=True)
    home.configure(server, auto_compact_tokens, remote_compaction, builtin_provider, more_config)
    command: list[str] = [str(agent_bin("codex")), "exec", "--skip-git-repo-check", "--json"]
    command.append("--dangerously-bypass-approvals-and-sandbox")
    if resume:
        command += ["resume", resume]
    command.append(prompt)
    env = {
        "HOME": str(home.home),
        "CODEX_HOME": str(home.codex_home),
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "OPENAI_API_KEY": "sk-test-local-server",
    }
    done = run_agent(command, cwd, env, timeout, wrapper=wrapper)
    return AgentRun(command, done.returncode, done.stdout, done.stderr, _session_id(done.stdout))


def _session_id(stdout: str) -> str | None:
    """``--json`` prints one event a line; ``thread.started`` names the session."""
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "thread.started":
            return event.get("thread_id")
    return None
