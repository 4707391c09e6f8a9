"""The real Cline CLI (3.0.65), run offline against the local model server.

A ``ClineHome`` is a scratch folder that plays the user's home. ``cline auth openai-compatible``
writes the provider (the server, as an OpenAI-compatible endpoint) into
``~/.cline/data/settings/providers.json``; ``CLINE_SESSION_BACKEND_MODE=local`` keeps the
sessions in this process (no hub daemon that outlives the run). A session lands in
``~/.cline/data/sessions/<id>/<id>.messages.json`` (one JSON object, Anthropic-style messages).

Cline resumes a session without a terminal only through its Agent Client Protocol server
(``cline --acp``, JSON-RPC a line on stdin and stdout): ``initialize``, ``session/load`` (which
replays the history as ``session/update`` notifications), ``session/set_model``,
``session/prompt``; the client approves every ``session/request_permission``.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agents.process import AgentRun, agent_bin, clean_environment, run_agent
from agents.server import ModelServer

PROVIDER, MODEL = "openai-compatible", "fake-model"
_QUIET = {"CLINE_NO_AUTO_UPDATE": "1", "CLINE_SESSION_BACKEND_MODE": "local"}


@dataclass(frozen=True)
class ClineHome:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def sessions(self) -> Path:
        return self.home / ".cline" / "data" / "sessions"

    def session_file(self, session_id: str) -> Path:
        return self.sessions / session_id / f"{session_id}.messages.json"

    def env(self) -> dict[str, str]:
        return {**_QUIET, "HOME": str(self.home)}

    def configure(self, server: ModelServer, cwd: Path) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        command = [str(agent_bin("cline")), "auth", PROVIDER, "-k", "sk-test-local-server"]
        command += ["-m", MODEL, "-b", f"{server.url}/v1"]
        run_agent(command, cwd, self.env(), 60).check_returncode()


def run_cline(home: ClineHome, cwd: Path, prompt: str, server: ModelServer) -> AgentRun:
    """``cline --json PROMPT`` in ``cwd``: a new session (``--id`` resumes only in a terminal)."""
    home.configure(server, cwd)
    before = set(home.sessions.glob("*")) if home.sessions.is_dir() else set()
    command = [str(agent_bin("cline")), "--json", "-P", PROVIDER, "-m", MODEL, prompt]
    done = run_agent(command, cwd, home.env(), 180)
    made = sorted(set(home.sessions.glob("*")) - before)
    session_id = made[0].name if len(made) == 1 else None
    return AgentRun(command, done.returncode, done.stdout, done.stderr, session_id)


def resume_cline(
    home: ClineHome, cwd: Path, session_id: str, prompt: str, server: ModelServer
) -> AgentRun:
    """Load the session over ACP and send ``prompt``; exit 0 when the prompt ended its turn."""
    home.configure(server, cwd)
    command = [str(agent_bin("cline")), "--acp"]
    env = {**clean_environment(), **home.env(), "CLINE_PROVIDER": PROVIDER}
    env["CLINE_API_KEY"] = "sk-test-local-server"
    log = home.root / "cline-acp.stderr"
    with open(log, "wb") as stderr:
        agent = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        try:
            client = _Client(agent.stdin, agent.stdout)
            client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            load = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
            client.call("session/load", load)
            client.call("session/set_model", {"sessionId": session_id, "modelId": MODEL})
            text = [{"type": "text", "text": prompt}]
            result = client.call("session/prompt", {"sessionId": session_id, "prompt": text})
            ended = isinstance(result, dict) and result.get("stopReason") == "end_turn"
        finally:
            agent.stdin.close()
            try:
                agent.wait(timeout=20)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
    returncode = 0 if ended else 1
    return AgentRun(command, returncode, json.dumps(result), log.read_text(), session_id)


class _Client:
    """The client side of ACP: calls and waits for their answer, approving what is asked."""

    def __init__(self, send: IO[bytes] | None, receive: IO[bytes] | None) -> None:
        assert send is not None and receive is not None
        self.send, self.receive = send, receive
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self._write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        for line in self.receive:
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    raise AssertionError(f"cline --acp {method}: {message['error']}")
                return message.get("result")
            if message.get("method") == "session/request_permission":
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": _approve(message)})
        raise AssertionError(f"cline --acp ended before answering {method}")

    def _write(self, message: dict[str, Any]) -> None:
        self.send.write(json.dumps(message).encode() + b"\n")
        self.send.flush()


def _approve(request: dict[str, Any]) -> dict[str, Any]:
    options = request.get("params", {}).get("options") or [{}]
    allow = next((o for o in options if str(o.get("kind", "")).startswith("allow")), options[0])
    return {"outcome": {"outcome": "selected", "optionId": allow.get("optionId")}}
