"""Issue 26's damage cases with the real agents: a session the agent writes (shell outputs over
two requests, then, for Claude Code and Codex, a screenshot read by the agent's own tool),
damaged the ways the trackers report (damage.py), resumed against a model server that refuses
what the real APIs refuse (limits.py); then ``ctxpack rescue`` and the resume again.

    session = make_session("claude-code", tmp_path / "made")
    before = resume_within_limits(damaged_copy(session, "big_image", tmp_path / "before"))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agents.claude import ClaudeHome, run_claude
from agents.codex import CodexHome, run_codex
from agents.damage import DAMAGES, SMALL_PNG
from agents.limits import Limits
from agents.more_sessions import make_session as make_more_session
from agents.resume import AGENTS
from agents.script import Reply, Script, ToolCall
from agents.server import ModelServer
from agents.sessions import (
    RESUME_PROMPT,
    Session,
    Workload,
    make_claude_session,
    make_codex_session,
)

WORKLOAD = Workload(turns=2, turns_after=0, output_lines=60, compact=False)
SCREENSHOT = "screenshot.png"
# How each agent's own tool shows the model an image file.
_IMAGE_TOOLS = {"claude-code": ("Read", "file_path"), "codex": ("view_image", "path")}


@dataclass(frozen=True)
class Resumed:
    """What became of one resume: the agent's exit status, the requests the server refused."""

    returncode: int
    refusals: tuple[str, ...]
    messages: int  # in the agent's last request for a reply

    @property
    def fails(self) -> bool:
        return self.returncode != 0 or bool(self.refusals)

    def __str__(self) -> str:
        said = f"exit {self.returncode}"
        if self.refusals:
            return f"{said}, {len(self.refusals)} requests refused ({self.refusals[0]})"
        return f"{said}, {self.messages} messages sent, none refused"


def make_session(agent: str, root: Path) -> Session:
    """The agent's own session: the workload's turns, then (Claude Code, Codex) one that reads
    a screenshot."""
    if agent not in _IMAGE_TOOLS:
        return make_more_session(agent, root, WORKLOAD)
    make = make_claude_session if agent == "claude-code" else make_codex_session
    session = make(root, WORKLOAD)
    image = session.project / SCREENSHOT
    image.write_bytes(SMALL_PNG)
    tool, argument = _IMAGE_TOOLS[agent]
    with ModelServer(Script()) as server:
        look = Reply(text="Looking at it.", calls=(ToolCall(tool, {argument: str(image)}),))
        server.script.extend([look, Reply(text="A red box.")])
        prompt = "Request 2: look at the screenshot."
        if agent == "claude-code":
            home = ClaudeHome(session.root)
            run_claude(home, session.project, prompt, server, resume=session.session_id).check()
        else:
            home_codex = CodexHome(session.root)
            run_codex(
                home_codex, session.project, prompt, server, resume=session.session_id
            ).check()
    return session


def damaged_copy(session: Session, damage: str, root: Path) -> tuple[Session, str]:
    """A copy of the session in a fresh home, damaged; and what the damage did."""
    copy = session.copy_to(root)
    return copy, DAMAGES[damage](copy.path, copy.agent)


def resume_within_limits(session: Session) -> Resumed:
    """The agent resumes the session against a server that refuses what the APIs refuse."""
    run, _ = AGENTS[session.agent]
    with ModelServer(Script(), limits=Limits()) as server:
        done = run(session, RESUME_PROMPT, server)
        requests = server.model_requests
        body = requests[-1].body if requests else {}
        sent = body.get("messages") or body.get("input") or [] if isinstance(body, dict) else []
        return Resumed(done.returncode, tuple(server.refusals), len(sent))
