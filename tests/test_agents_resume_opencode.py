"""The real OpenCode resumes the sessions ctxpack changed, and sends less (SPEC §8.6, issue 25).

Its session is one OpenCode writes here (rounds of parallel tool calls with long outputs, a first
run and a resumed one); its database is placed in a fresh home for each resume (SQLite's online
backup). ctxpack changes the database in place (``micro``, ``full``, ``auto``, and ``micro`` then
``restore``) and the real OpenCode resumes the session against the local server: it exits 0, every
call is paired and the user's request comes last; after micro it sends the markers and the newest
three turns whole, after full (and auto) the summary ctxpack wrote and at most half of the history
the untouched session sent. After ``restore`` ``opencode export`` gives the session back byte for
byte, and the restored session's resume is the untouched one the others are compared with.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents.conversation import Conversation, chat_conversation
from agents.e2e import IN_PLACE, TRANSFORMS
from agents.more_sessions import make_session
from agents.opencode import OpenCodeHome, copy_store, export, run_opencode
from agents.script import Script
from agents.server import ModelServer
from agents.sessions import RESUME_PROMPT, Session, Workload
from agents.stores import opencode_outputs, opencode_summary
from helpers import run

WORKLOAD = Workload(turns=2, turns_after=3, output_lines=300)
FULL_AT_MOST = 0.5  # of the history the agent sent for the untouched session


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    return make_session("opencode", tmp_path_factory.mktemp("opencode"), WORKLOAD)


def placed(session: Session, root: Path) -> OpenCodeHome:
    """The session's store in a fresh home."""
    home = OpenCodeHome(root)
    copy_store(OpenCodeHome(session.root), home)
    return home


def resumed(home: OpenCodeHome, session: Session) -> Conversation:
    with ModelServer(Script()) as server:
        project = session.project  # where the session was made: OpenCode resumes it there
        run_opencode(home, project, RESUME_PROMPT, server, resume=session.session_id).check()
        return chat_conversation(server.turn_requests[-1].body)


def ctxpack(*arguments: object) -> str:
    done = run(*arguments, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return done.stderr.decode()


@pytest.fixture(scope="module")
def untouched(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    """What OpenCode sends for its session shrunk by micro and put back by restore."""
    scratch = tmp_path_factory.mktemp("restored")
    exported = export(
        OpenCodeHome(session.root), session.project, session.session_id, scratch / "original.json"
    )
    home = placed(session, scratch / "home")
    said = ctxpack("micro", *IN_PLACE, "--stats", home.database)  # every session of it: one
    assert f"{home.database}#{session.session_id}: 6 tool results truncated" in said
    ctxpack("restore", home.database)
    again = export(home, session.project, session.session_id, scratch / "restored.json")
    assert again == exported
    return resumed(home, session)


def test_a_restored_session_resumes_sending_every_output_the_store_holds(
    session: Session, untouched: Conversation
) -> None:
    held = opencode_outputs(session.path, session.session_id)
    assert len(held) == 3 * (WORKLOAD.turns + WORKLOAD.turns_after)
    assert untouched.pairing_problems() == []
    assert untouched.results == held
    assert untouched.user_texts()[-1] == RESUME_PROMPT


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_resumes_after_the_transform_sending_less(
    session: Session, untouched: Conversation, transform: str, tmp_path: Path
) -> None:
    arguments, check = TRANSFORMS[transform]
    home = placed(session, tmp_path / "home")
    ctxpack(*arguments, *IN_PLACE, f"{home.database}#{session.session_id}")
    after = resumed(home, session)
    shrink = check(untouched, after, tmp_path)
    print(f"opencode {session.session_id} {transform}: {shrink}")  # the figures, with pytest -s
    if transform != "micro":
        assert shrink.bytes_after <= FULL_AT_MOST * shrink.bytes_before, shrink
        summary = opencode_summary(home.database, session.session_id)
        assert any(summary in text for text in after.texts()), "the summary was not sent"
