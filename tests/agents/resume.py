"""Resume a session with its real agent and return the conversation it sent its model."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agents.claude import ClaudeHome, run_claude
from agents.codex import CodexHome, run_codex
from agents.conversation import (
    Conversation,
    chat_conversation,
    claude_conversation,
    codex_conversation,
    gemini_conversation,
)
from agents.copilot import CopilotHome, run_copilot
from agents.gemini import GeminiHome, run_gemini
from agents.pi import PiHome, run_pi
from agents.process import AgentRun
from agents.qwen import QwenHome, run_qwen
from agents.script import Script
from agents.server import ModelServer
from agents.sessions import RESUME_PROMPT, Session

# What changes from run to run in what an agent sends: the clock Copilot puts in a user turn.
_CLOCK = re.compile(r"<current_datetime>[^<]*</current_datetime>")


def _claude(session: Session, prompt: str, server: ModelServer) -> AgentRun:
    home = ClaudeHome(session.root)
    return run_claude(home, session.project, prompt, server, resume=session.session_id)


def _codex(session: Session, prompt: str, server: ModelServer) -> AgentRun:
    home, remote = CodexHome(session.root), session.remote_compaction
    return run_codex(
        home, session.project, prompt, server, resume=session.session_id, remote_compaction=remote
    )


def _gemini(session: Session, prompt: str, server: ModelServer) -> AgentRun:
    home = GeminiHome(session.root)
    return run_gemini(home, session.project, prompt, server, resume=session.session_id)


def _qwen(session: Session, prompt: str, server: ModelServer) -> AgentRun:
    home = QwenHome(session.root)
    return run_qwen(home, session.project, prompt, server, resume=session.session_id)


def _pi(session: Session, prompt: str, server: ModelServer) -> AgentRun:
    return run_pi(PiHome(session.root), session.project, prompt, server, session=session.path)


def _copilot(session: Session, prompt: str, server: ModelServer) -> AgentRun:
    home = CopilotHome(session.root)
    return run_copilot(home, session.project, prompt, server, resume=session.session_id)


# agent -> (how to resume it, how to read what it sent)
AGENTS: dict[str, tuple[Callable[..., AgentRun], Callable[[Any], Conversation]]] = {
    "claude-code": (_claude, claude_conversation),
    "codex": (_codex, codex_conversation),
    "gemini-cli": (_gemini, gemini_conversation),
    "qwen-code": (_qwen, chat_conversation),
    "pi": (_pi, chat_conversation),
    "copilot-cli": (_copilot, chat_conversation),
}
# The agents whose turns are told from their side requests by the tools they offer.
_BY_TOOLS = frozenset({"gemini-cli", "qwen-code", "pi", "copilot-cli"})


def resume(session: Session, prompt: str = RESUME_PROMPT) -> Conversation:
    """Resume ``session`` in its own home with ``prompt``; the agent must exit 0.

    The conversation is that of the agent's last turn, the one answering the prompt (a
    compaction the agent makes on its own first is a request of its own; a title or memory
    request offers no tools). The scratch home's path, which the agent writes into what it
    sends (the working folder), reads ``<home>``, and the clock some agents put in a user turn
    one placeholder, so that resumes of different copies of one session compare equal.
    """
    run, conversation = AGENTS[session.agent]
    with ModelServer(Script()) as server:
        run(session, prompt, server).check()
        requests = server.turn_requests if session.agent in _BY_TOOLS else server.model_requests
        return conversation(_without_home(requests[-1].body, session))


def _without_home(body: Any, session: Session) -> Any:
    text = json.dumps(body, ensure_ascii=False).replace(str(session.root), "<home>")
    return json.loads(_CLOCK.sub("<current_datetime/>", text))
