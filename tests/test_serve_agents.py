"""The real Claude Code and Codex, pointed at `ctxpack serve`, resume a big real session.

Between the agent and the local model server (tests/agents/server.py) runs the real `ctxpack
serve` process, forwarding to it. Each agent resumes copies of one big session: once straight to
the model server (what it sends untouched: the baseline), then through the proxy. Through the
proxy the agent exits 0 with the model's reply, and the model server receives a smaller request
with markers, every tool call still paired, the user's prompt intact at its end.

The sessions: the largest real Claude Code session of the corpus (3.6 MB), and a rollout the
real Codex writes here while a scripted model works (turns of parallel tool calls with long
outputs).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agents.checks import Shrink, assert_full, assert_micro
from agents.claude import ClaudeHome, run_claude
from agents.codex import CodexHome, run_codex
from agents.conversation import Conversation, claude_conversation, codex_conversation
from agents.process import AgentRun
from agents.resume import resume
from agents.script import Script
from agents.server import ModelServer
from agents.sessions import (
    RESUME_PROMPT,
    Session,
    Workload,
    make_codex_session,
    original_session,
)
from serve_support import Serving

LOG_LINE = re.compile(r"POST /v1/(messages|responses) 200: tokens (\d+) -> (\d+)")


@dataclass(frozen=True)
class Through:
    """A resume through the proxy: the agent's run, what reached the model, the proxy's log."""

    run: AgentRun
    sent: Conversation
    log: str


def resume_through_proxy(session: Session, scratch: Path, *serve_args: str) -> Through:
    """The agent resumes a copy of ``session``, pointed at ``ctxpack serve`` in front of the
    model server (the runners read only the ``url`` of what they are given)."""
    copy = session.copy_to(scratch)
    with ModelServer(Script()) as server, Serving(server.url, *serve_args) as proxy:
        if session.agent == "claude-code":
            home = ClaudeHome(copy.root)
            run = run_claude(home, copy.project, RESUME_PROMPT, proxy, resume=copy.session_id)
            sent = claude_conversation(_without_home(server.model_requests[-1].body, copy))
        else:
            home = CodexHome(copy.root)
            run = run_codex(home, copy.project, RESUME_PROMPT, proxy, resume=copy.session_id)
            sent = codex_conversation(_without_home(server.model_requests[-1].body, copy))
    return Through(run.check(), sent, proxy.log)


def _without_home(body: object, copy: Session) -> object:
    # the scratch home's path, which the agent writes into what it sends, reads <home> (as in
    # agents.resume), so that the resumes of two copies compare equal
    return json.loads(json.dumps(body, ensure_ascii=False).replace(str(copy.root), "<home>"))


def the_models_reply(run: AgentRun) -> str:
    """What the agent printed as the model's answer (the script's default reply)."""
    if run.command[0].endswith("claude"):
        return json.loads(run.stdout)["result"]
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    items = [event["item"] for event in events if event.get("type") == "item.completed"]
    return [item["text"] for item in items if item.get("type") == "agent_message"][-1]


@pytest.fixture(scope="module", params=["claude-code", "codex"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    root = tmp_path_factory.mktemp(request.param)
    if request.param == "claude-code":
        return original_session(root, "cc_entire_1284c080")
    return make_codex_session(root, Workload(turns=5, compact=False))


@pytest.fixture(scope="module")
def baseline(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    """What the agent sends its model when it resumes the session straight, untouched."""
    return resume(session.copy_to(tmp_path_factory.mktemp("baseline")))


def check_through(through: Through, baseline: Conversation) -> tuple[int, int]:
    """The agent answered; the proxy logged the request smaller; its figures, in -> out."""
    assert the_models_reply(through.run) == "Done."
    found = [match for match in LOG_LINE.finditer(through.log)]
    assert found, through.log
    tokens_in, tokens_out = int(found[-1][2]), int(found[-1][3])
    assert tokens_out < tokens_in
    assert through.sent.user_texts()[-1] == RESUME_PROMPT == baseline.user_texts()[-1]
    return tokens_in, tokens_out


def report(session: Session, how: str, shrink: Shrink, tokens: tuple[int, int]) -> None:
    figures = f"{shrink}; the proxy's log: {tokens[0]} -> {tokens[1]}"
    print(f"{session.agent} through ctxpack serve ({how}): {figures}")  # with pytest -s


def test_resumes_through_the_proxy_with_old_results_as_markers(
    session: Session, baseline: Conversation, tmp_path: Path
) -> None:
    # under the default threshold, every old result a marker (a batch of a short session
    # would not pay for itself: --min-gain 0 asks for the markers)
    through = resume_through_proxy(session, tmp_path / "micro", "--min-gain", "0")
    tokens = check_through(through, baseline)
    shrink = assert_micro(baseline, through.sent, tmp_path)  # pairs, newest 3 whole, exact markers
    report(session, "micro", shrink, tokens)


def test_resumes_through_the_proxy_with_the_history_summarized(
    session: Session, baseline: Conversation, tmp_path: Path
) -> None:
    through = resume_through_proxy(session, tmp_path / "full", "--threshold", "2000")
    tokens = check_through(through, baseline)
    shrink = assert_full(baseline, through.sent, tmp_path)
    summaries = [
        text for text in through.sent.user_texts() if text.startswith("[Context Compressed]")
    ]
    assert len(summaries) == 1
    assert through.sent.pairing_problems() == []
    report(session, "summary", shrink, tokens)


def test_codex_pointed_at_serve_by_its_base_url_starts_as_fast_as_without_serve(
    tmp_path: Path,
) -> None:
    """Issue 32.7: Codex's own OpenAI provider (``OPENAI_BASE_URL`` at serve) tries a WebSocket
    first; serve answers the upgrade with a 426, on which Codex speaks HTTP at once: no retry, no
    error event, its start-up within a second of a Codex that goes straight to the model
    without WebSockets. (Codex still logs the one refused upgrade in its own log; ``ctxpack
    setup codex``, WebSockets off, has not even that: test_cli_setup.py.)"""
    (tmp_path / "project").mkdir()
    with ModelServer(Script()) as server, Serving(server.url) as proxy:
        straight = timed_codex(CodexHome(tmp_path / "straight"), tmp_path / "project", server)
        through = timed_codex(
            CodexHome(tmp_path / "through"), tmp_path / "project", proxy, builtin_provider=True
        )
        assert server.unknown == []  # no upgrade reached the model server
    for _, run in (straight, through):
        assert the_models_reply(run.check()) == "Done."
    events = [json.loads(line) for line in through[1].stdout.splitlines() if line[:1] == "{"]
    assert [event for event in events if event.get("type") == "error"] == []  # "Reconnecting…"
    assert len([line for line in through[1].stderr.splitlines() if " ERROR " in line]) <= 1
    assert proxy.log.count("GET /v1/responses 426") == 1
    print(f"codex start-up: straight {straight[0]:.2f} s, through serve {through[0]:.2f} s")
    assert through[0] < straight[0] + 1


def timed_codex(
    home: CodexHome, project: Path, server: Any, builtin_provider: bool = False
) -> tuple[float, AgentRun]:
    """A new Codex session (``server``: what has the ``url`` Codex is pointed at)."""
    started = time.monotonic()
    run = run_codex(home, project, "hello", server, builtin_provider=builtin_provider)
    return time.monotonic() - started, run
