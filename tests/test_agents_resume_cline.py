"""The real Cline resumes the sessions ctxpack changed, and sends less (SPEC §8.6, issue 25).

Its session is one Cline writes here (rounds of parallel tool calls with long outputs, in one run:
Cline resumes only over ACP), its folder placed in a fresh home for each resume. ctxpack changes the
``<id>.messages.json`` in place (``micro``, ``full``, ``auto``, and ``micro`` then ``restore``) and
the real Cline resumes it over ACP against the local server: it exits 0, every call is paired and
the user's request comes last; after micro it sends the markers and the newest three turns whole,
after full (and auto) the summary ctxpack wrote and at most half of the history the untouched
session sent. ``restore`` gives the document back byte for byte, and the restored session's resume
is the untouched one the others are compared with, so that every resume proves something.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agents.cline import ClineHome, resume_cline
from agents.conversation import Conversation, chat_conversation
from agents.e2e import IN_PLACE, TRANSFORMS
from agents.more_sessions import make_session
from agents.script import Script
from agents.server import ModelServer
from agents.sessions import RESUME_PROMPT, Session, Workload
from agents.stores import cline_outputs, cline_summary
from helpers import run

# Outputs under 8,000 characters: Cline cuts the middle out of longer ones when it sends them
WORKLOAD = Workload(turns=2, turns_after=3, output_lines=200)
FULL_AT_MOST = 0.5  # of the history the agent sent for the untouched session


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


def ctxpack(*arguments: object) -> None:
    done = run(*arguments, timeout=300)
    assert done.returncode == 0, done.stderr.decode()


@pytest.fixture(scope="module")
def untouched(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    """What Cline sends for its session shrunk by micro and put back by restore."""
    home = placed(session, tmp_path_factory.mktemp("restored"))
    path = home.session_file(session.session_id)
    original = path.read_bytes()
    ctxpack("micro", *IN_PLACE, path)
    assert path.read_bytes() != original
    ctxpack("restore", path)
    assert path.read_bytes() == original
    return resumed(home, session)


def test_a_restored_session_resumes_sending_every_result_the_file_holds(
    session: Session, untouched: Conversation
) -> None:
    held = cline_outputs(session.path)
    assert len(held) == 3 * (WORKLOAD.turns + WORKLOAD.turns_after)
    assert untouched.pairing_problems() == []
    assert {call: json.loads(sent) for call, sent in untouched.results.items()} == held
    assert untouched.user_texts()[-1] == RESUME_PROMPT


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_resumes_after_the_transform_sending_less(
    session: Session, untouched: Conversation, transform: str, tmp_path: Path
) -> None:
    arguments, check = TRANSFORMS[transform]
    home = placed(session, tmp_path / "home")
    ctxpack(*arguments, *IN_PLACE, home.session_file(session.session_id))
    after = resumed(home, session)
    shrink = check(untouched, after, tmp_path)
    print(f"cline {session.session_id} {transform}: {shrink}")  # the figures, with pytest -s
    if transform != "micro":
        assert shrink.bytes_after <= FULL_AT_MOST * shrink.bytes_before, shrink
        summary = cline_summary(home.session_file(session.session_id))
        assert any(summary in text for text in after.texts()), "the summary was not sent"
