"""Genuine sessions of Gemini CLI, Qwen Code, pi, Copilot CLI, OpenCode and Cline, written by
the agents themselves.

As for Claude Code and Codex (``sessions.py``), the scripted model works like a busy session:
each round it calls a shell twice (long outputs) and reads a file, in parallel; the agent runs
the tools and asks again. A first run does ``Workload.turns`` rounds; where the agent compacts on
request in a headless run (Copilot's ``/compact``), it then compacts; a resumed run does
``Workload.turns_after`` more rounds, more tool-result turns than micro keeps whole, after the
checkpoint that a resume writes (Gemini CLI's ``$set`` of every message). Cline resumes only
over ACP, so its one run does every round.

    session = make_session("pi", tmp_path / "pi", Workload(turns=2, turns_after=4))
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agents.billing import Billing
from agents.cline import ClineHome, run_cline
from agents.copilot import CopilotHome, run_copilot
from agents.gemini import GeminiHome, run_gemini
from agents.opencode import OpenCodeHome, run_opencode
from agents.pi import PiHome, run_pi
from agents.process import AgentRun
from agents.qwen import QwenHome, run_qwen
from agents.script import Reply, Script, ToolCall
from agents.server import ModelServer
from agents.sessions import Session, Workload, prepare_project, shell_commands

# A phrase of each agent's own compaction request, so the server answers it with the summary.
COMPACTION_PHRASES = {
    "copilot-cli": "Please create a detailed summary of the conversation so far",
    "gemini-cli": "<state_snapshot>",
    "qwen-code": "<state_snapshot>",
    "pi": "The messages above are a conversation to summarize",
}
COMPACTION_PHRASES |= {"opencode": "summary of our conversation", "cline": "<summary>"}
# The agents whose headless run compacts on request, and how it is asked for.
COMPACT_PROMPTS = {"copilot-cli": "/compact"}


def calls(agent: str, turn: int, project: Path, workload: Workload) -> tuple[ToolCall, ...]:
    """One round's parallel calls in the agent's own tools."""
    commands = shell_commands(turn, workload)
    report = str(project / "report.txt")
    if agent == "gemini-cli":
        shell = [
            ToolCall("run_shell_command", {"command": c, "description": f"step {turn}"})
            for c in commands
        ]
        lines = {"start_line": 1, "end_line": 40 + turn}
        return (*shell, ToolCall("read_file", {"file_path": report, **lines}))
    if agent == "qwen-code":
        shell = [ToolCall("run_shell_command", {"command": c}) for c in commands]
        return (*shell, ToolCall("read_file", {"file_path": report, "limit": 40 + turn}))
    if agent == "pi":
        shell = [ToolCall("bash", {"command": c}) for c in commands]
        return (*shell, ToolCall("read", {"path": report, "limit": 40 + turn}))
    if agent == "cline":
        shell = [ToolCall("run_commands", {"commands": [c]}) for c in commands]
        lines = {"start_line": 1, "end_line": 40 + turn}
        return (*shell, ToolCall("read_files", {"files": [{"path": report, **lines}]}))
    shell = [ToolCall("bash", {"command": c, "description": f"step {turn}"}) for c in commands]
    if agent == "opencode":
        return (*shell, ToolCall("read", {"filePath": report, "limit": 40 + turn}))
    # Copilot's shell returns the first screen of a long output (the rest on request): the long
    # output of its rounds is the report's view
    return (*shell, ToolCall("view", {"path": report, "view_range": [1, 400 + turn]}))


def rounds(agent: str, first: int, count: int, project: Path, workload: Workload) -> list[Reply]:
    replies = [
        Reply(
            text=f"Round {turn}: building, testing, reading.",
            calls=calls(agent, turn, project, workload),
        )
        for turn in range(first, first + count)
    ]
    return [*replies, Reply(text=f"Rounds up to {first + count - 1} done: all steps passed.")]


Runner = Callable[..., AgentRun]


def make_session(
    agent: str, root: Path, workload: Workload, billing: Billing | None = None
) -> Session:
    """``billing``: the server bills each reply like the provider (``ModelServer.billing``)."""
    project = root / "project"
    prepare_project(project, workload)
    script = Script(compaction_phrase=COMPACTION_PHRASES[agent])
    with ModelServer(script, billing=billing) as server:
        first_rounds = workload.turns + (workload.turns_after if agent == "cline" else 0)
        script.extend(rounds(agent, 0, first_rounds, project, workload))
        first = _run(agent, root, project, "Request 0: build, test and read the report.", server)
        session_id = first.session_id
        assert session_id is not None, first
        if workload.compact and agent in COMPACT_PROMPTS:
            _run(agent, root, project, COMPACT_PROMPTS[agent], server, session_id)
        if workload.turns_after and agent != "cline":
            script.extend(rounds(agent, workload.turns, workload.turns_after, project, workload))
            prompt = "Request 1: build, test and read the report again."
            _run(agent, root, project, prompt, server, session_id)
    return Session(
        agent, root, project, _id(agent, session_id), session_path(agent, root, project, session_id)
    )


def _run(
    agent: str,
    root: Path,
    project: Path,
    prompt: str,
    server: ModelServer,
    resume: str | None = None,
) -> AgentRun:
    if agent == "gemini-cli":
        return run_gemini(GeminiHome(root), project, prompt, server, resume=resume).check()
    if agent == "qwen-code":
        return run_qwen(QwenHome(root), project, prompt, server, resume=resume).check()
    if agent == "pi":
        session = Path(resume) if resume else None
        return run_pi(PiHome(root), project, prompt, server, session=session).check()
    if agent == "opencode":
        return run_opencode(OpenCodeHome(root), project, prompt, server, resume=resume).check()
    if agent == "cline":
        return run_cline(ClineHome(root), project, prompt, server).check()
    return run_copilot(CopilotHome(root), project, prompt, server, resume=resume).check()


def _id(agent: str, session_id: str) -> str:
    """pi's runs name their session by its file; the others by the session's id."""
    if agent != "pi":
        return session_id
    import json

    with open(session_id, "rb") as handle:
        return json.loads(handle.readline())["id"]


def session_path(agent: str, root: Path, project: Path, session_id: str) -> Path:
    if agent == "gemini-cli":
        return GeminiHome(root).session_file(session_id)
    if agent == "qwen-code":
        return QwenHome(root).session_file(project, session_id)
    if agent == "pi":
        return Path(session_id)
    if agent == "opencode":
        return OpenCodeHome(root).database
    if agent == "cline":
        return ClineHome(root).session_file(session_id)
    return CopilotHome(root).session_file(session_id)
