"""The real Cline resumes its sessions placed in a fresh home, and sends what the file holds.

ctxpack cannot shrink Cline's sessions yet (``<id>.messages.json`` is one JSON document, not
JSONL; docs/sessions.md, "Cline"). These tests hold what a format for it will rely on: a session
Cline writes here (rounds of parallel tool calls with long outputs), its folder copied into a
fresh home and resumed over ACP (Cline's only way to resume without a terminal), sends every
tool result the file holds, pair by pair; with its older results rewritten (the document written
again whole) it sends exactly those markers, the newest turns whole, and less.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agents.checks import assert_newest_whole
from agents.cline import ClineHome, resume_cline
from agents.conversation import Conversation, chat_conversation
from agents.more_sessions import make_session
from agents.script import Script
from agents.server import ModelServer
from agents.sessions import RESUME_PROMPT, Session, Workload
from agents.stores import cline_outputs, shrink_cline

# Outputs under 8,000 characters: Cline cuts the middle out of longer ones when it sends them
WORKLOAD = Workload(turns=2, turns_after=3, output_lines=200)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    return make_session("cline", tmp_path_factory.mktemp("cline"), WORKLOAD)


def placed(session: Session, root: Path) -> ClineHome:
    """Only the session's folder, in a fresh home (and the project folder)."""
    home = ClineHome(root)
    shutil.copytree(session.path.parent, home.sessions / session.session_id)
    shutil.copytree(session.project, root / "project")
    # the session's <id>.json names its messages file and folders by absolute paths, and the
    # ACP load reads the messages from there
    meta = home.sessions / session.session_id / f"{session.session_id}.json"
    meta.write_text(meta.read_text().replace(str(session.root), str(root)))
    return home


def resumed(home: ClineHome, session: Session) -> Conversation:
    with ModelServer(Script()) as server:
        project = home.root / "project"
        resume_cline(home, project, session.session_id, RESUME_PROMPT, server).check()
        return chat_conversation(server.turn_requests[-1].body)


@pytest.fixture(scope="module")
def unchanged(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    return resumed(placed(session, tmp_path_factory.mktemp("unchanged")), session)


def test_a_placed_session_resumes_sending_every_result_the_file_holds(
    session: Session, unchanged: Conversation
) -> None:
    held = cline_outputs(session.path)
    assert len(held) == 3 * (WORKLOAD.turns + WORKLOAD.turns_after)
    assert unchanged.pairing_problems() == []
    assert {call: json.loads(sent) for call, sent in unchanged.results.items()} == held
    assert unchanged.user_texts()[-1] == RESUME_PROMPT


def test_results_rewritten_in_the_file_are_what_it_sends(
    session: Session, unchanged: Conversation, tmp_path: Path
) -> None:
    home = placed(session, tmp_path)
    markers = shrink_cline(home.session_file(session.session_id))
    assert markers
    after = resumed(home, session)
    assert after.pairing_problems() == []
    assert {call: after.results[call] for call in markers} == markers
    assert_newest_whole(unchanged, after, 3)
    assert after.size < unchanged.size
    assert after.user_texts()[-1] == RESUME_PROMPT
