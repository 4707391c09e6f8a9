"""``ctxpack run AGENT``: the real agents, with ``ctxpack serve`` in front of them for one run.

Each agent is set up as a user has it, its API address at the local model server
(tests/agents/server.py); ``ctxpack run`` starts serve on a free port, points the agent at it,
and serve forwards to that address. The model server sees every request the agent makes, and
serve's log (``run.log`` in the state folder) one line for each: the requests went through it.
The agent's exit status comes back as ctxpack's; after the run, and after a SIGINT in the middle
of one, no process is left whose working folder is the run's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from agents.claude import ClaudeHome, run_claude
from agents.codex import CodexHome, run_codex
from agents.copilot import CopilotHome, run_copilot
from agents.process import AgentRun, agent_bin, clean_environment
from agents.qwen import QwenHome, run_qwen
from agents.script import Reply, Script, ToolCall
from agents.server import ModelServer
from helpers import CTXPACK
from serve_support import Answer, Upstream

SERVED = re.compile(r"ctxpack: POST (/v1/\S+) 200: ")
PROMPT = "USE TOOLS: list the files"

Runner = Callable[..., AgentRun]


def _claude(root: Path, cwd: Path, server: ModelServer, wrapper: list[str]) -> AgentRun:
    return run_claude(ClaudeHome(root), cwd, PROMPT, server, wrapper=wrapper)


def _codex(root: Path, cwd: Path, server: ModelServer, wrapper: list[str]) -> AgentRun:
    return run_codex(CodexHome(root), cwd, PROMPT, server, wrapper=wrapper)


def _qwen(root: Path, cwd: Path, server: ModelServer, wrapper: list[str]) -> AgentRun:
    return run_qwen(QwenHome(root), cwd, PROMPT, server, wrapper=wrapper)


def _copilot(root: Path, cwd: Path, server: ModelServer, wrapper: list[str]) -> AgentRun:
    return run_copilot(CopilotHome(root), cwd, PROMPT, server, wrapper=wrapper)


AGENTS: dict[str, tuple[Runner, ToolCall]] = {
    "claude": (_claude, ToolCall("Bash", {"command": "ls", "description": "list"})),
    "codex": (_codex, ToolCall("exec_command", {"cmd": "ls"})),
    "qwen": (_qwen, ToolCall("run_shell_command", {"command": "ls"})),
    "copilot": (_copilot, ToolCall("bash", {"command": "ls", "description": "list"})),
}


def serve_log(root: Path) -> str:
    """Serve's log: the runners give the agent (and so ctxpack) ``root/home`` as HOME."""
    return (root / "home" / ".local" / "state" / "ctxpack" / "run.log").read_text()


def processes_in(folder: Path) -> list[str]:
    """The processes whose working folder is ``folder`` or below: what a run left behind."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():  # the tests' own
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == str(folder) or cwd.startswith(f"{folder}/"):
            found.append(f"{entry.name}: {(entry / 'cmdline').read_bytes()!r}")
    return found


@pytest.mark.parametrize("agent", AGENTS)
def test_the_agents_requests_go_through_serve(agent: str, tmp_path: Path) -> None:
    runner, call = AGENTS[agent]
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "notes.txt").write_text("hello\n")
    with ModelServer(Script([Reply(calls=(call,))])) as server:
        run = runner(tmp_path, cwd, server, [CTXPACK, "run", "--threshold", "100000"]).check()
        asked = [request.path for request in server.model_requests]
    served = SERVED.findall(serve_log(tmp_path))
    assert len(asked) >= 2, run.stderr  # the tool call, then the turn with its result
    assert served == asked  # every request the model got came through serve, in order
    assert "notes.txt" in str(server.model_requests[-1].body)  # the tool ran, its result sent
    assert processes_in(tmp_path) == []


def test_claude_code_goes_where_its_settings_say_through_serve(tmp_path: Path) -> None:
    """An address in ``settings.json``'s ``env`` wins over the variable: serve forwards there,
    and Claude Code still sends its requests to serve."""
    home = ClaudeHome(tmp_path)
    cwd = tmp_path / "project"
    cwd.mkdir()
    with ModelServer(Script()) as server:
        home.config.mkdir(parents=True)
        (home.config / "settings.json").write_text(
            json.dumps({"env": {"ANTHROPIC_BASE_URL": server.url}})
        )
        with ModelServer(Script()) as elsewhere:  # what the variable says: never asked
            run_claude(home, cwd, "say hello", elsewhere, wrapper=[CTXPACK, "run"]).check()
            assert elsewhere.requests == []
        asked = [request.path for request in server.model_requests]
    assert SERVED.findall(serve_log(tmp_path)) == asked != []


def test_codex_with_openais_own_provider_goes_through_a_stand_in_without_websockets(
    tmp_path: Path,
) -> None:
    """Codex on its built-in OpenAI provider (here at ``openai_base_url``): ``run`` gives it a
    provider of the same sign-in at serve, WebSockets off; straight, it tries them first."""
    home = CodexHome(tmp_path)
    home.codex_home.mkdir(parents=True)
    home.home.mkdir(exist_ok=True)
    cwd = tmp_path / "project"
    cwd.mkdir()
    command = [str(agent_bin("codex")), "exec", "--skip-git-repo-check", "say hello"]
    environment = {
        **clean_environment(),
        "HOME": str(home.home),
        "CODEX_HOME": str(home.codex_home),
    }
    with ModelServer(Script()) as server:
        config = f'model = "gpt-test"\nopenai_base_url = "{server.url}/v1"\n'
        (home.codex_home / "config.toml").write_text(config)
        for wrapper in ([str(CTXPACK), "run"], []):
            server.forget()
            done = subprocess.run(
                [*wrapper, *command], cwd=cwd, env=environment, capture_output=True, timeout=120
            )
            assert done.returncode == 0, done.stderr
            upgrades = [line for line in server.unknown if line == "GET /v1/responses"]
            assert bool(upgrades) == (not wrapper)  # WebSocket upgrades only without ctxpack
        asked = [request.path for request in server.model_requests]
    assert SERVED.findall(serve_log(tmp_path)) != []
    assert asked == ["/v1/responses"]
    assert processes_in(tmp_path) == []


@pytest.mark.parametrize(("agent", "status"), [("claude", 1), ("codex", 2)])
def test_the_agents_exit_status_is_ctxpacks(agent: str, status: int, tmp_path: Path) -> None:
    """An option the agent does not know: it exits with its usage status, and so does ctxpack."""
    command = [str(CTXPACK), "run", str(agent_bin(agent)), "--no-such-flag"]
    home = {"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "sk-test", "OPENAI_API_KEY": "sk-test"}
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env={**clean_environment(), **home},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == status, done.stderr
    assert processes_in(tmp_path) == []


def test_a_sigint_stops_the_agent_and_serve(tmp_path: Path) -> None:
    """SIGINT to ctxpack while the agent waits for the model: the agent gets it, stops, serve
    is stopped, ctxpack ends as the agent did, and nothing is left running."""
    home = ClaudeHome(tmp_path / "claude")
    home.home.mkdir(parents=True)
    home.config.mkdir()
    cwd = tmp_path / "project"
    cwd.mkdir()
    with Upstream(Answer(silent=30)) as upstream:
        environment = {
            **clean_environment(),
            "HOME": str(home.home),
            "CLAUDE_CONFIG_DIR": str(home.config),
            "ANTHROPIC_BASE_URL": upstream.url,
            "ANTHROPIC_API_KEY": "sk-test",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        command = [str(CTXPACK), "run", str(agent_bin("claude")), "-p", "say hello"]
        wrapped = subprocess.Popen(
            command, cwd=cwd, env=environment, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _wait_for(lambda: any(r.target.startswith("/v1/messages") for r in upstream.received))
        wrapped.send_signal(signal.SIGINT)
        _, errors = wrapped.communicate(timeout=60)
        assert upstream.in_flight == 1, errors  # it ended before the model ever answered
    assert wrapped.returncode == 0, errors  # as Claude Code -p exits when interrupted
    # the agent knew only serve's address: the request the upstream got came through it
    assert f"-> {upstream.url} " in serve_log(home.root)
    assert processes_in(tmp_path) == []


def test_an_agent_ended_by_a_signal_ends_ctxpack_by_it(tmp_path: Path) -> None:
    """An agent that dies of the SIGINT passed on: ctxpack dies of it too (as a shell sees)."""
    agent = tmp_path / "claude"  # known by its name: any program can play it
    agent.write_text("#!/bin/sh\necho started\nexec sleep 60\n")
    agent.chmod(0o755)
    environment = {**clean_environment(), "HOME": str(tmp_path)}
    wrapped = subprocess.Popen(
        [str(CTXPACK), "run", str(agent)], cwd=tmp_path, env=environment, stdout=subprocess.PIPE
    )
    assert wrapped.stdout is not None
    assert wrapped.stdout.readline() == b"started\n"
    wrapped.send_signal(signal.SIGINT)
    wrapped.communicate(timeout=30)
    assert wrapped.returncode == -signal.SIGINT
    assert processes_in(tmp_path) == []


def _wait_for(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)
