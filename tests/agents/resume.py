"""Resume a session with its real agent and return the conversation it sent its model."""

from __future__ import annotations

import json
from typing import Any

from agents.claude import ClaudeHome, run_claude
from agents.codex import CodexHome, run_codex
from agents.conversation import Conversation, claude_conversation, codex_conversation
from agents.script import Script
from agents.server import ModelServer
from agents.sessions import RESUME_PROMPT, Session


def resume(session: Session, prompt: str = RESUME_PROMPT) -> Conversation:
    """Resume ``session`` in its own home with ``prompt``; the agent must exit 0.

    The conversation is that of the agent's last request, the one answering the prompt (a
    compaction the agent makes on its own first is a request of its own). The scratch home's
    path, which the agent writes into what it sends (the working folder), reads ``<home>``, so
    that resumes of different copies of one session compare equal.
    """
    with ModelServer(Script()) as server:
        if session.agent == "claude-code":
            home = ClaudeHome(session.root)
            run_claude(home, session.project, prompt, server, resume=session.session_id).check()
            return claude_conversation(_without_home(server.model_requests[-1].body, session))
        run_codex(
            CodexHome(session.root),
            session.project,
            prompt,
            server,
            resume=session.session_id,
            remote_compaction=session.remote_compaction,
        ).check()
        return codex_conversation(_without_home(server.model_requests[-1].body, session))


def _without_home(body: Any, session: Session) -> Any:
    return json.loads(json.dumps(body, ensure_ascii=False).replace(str(session.root), "<home>"))
