"""The real OpenCode resumes its sessions placed in a fresh home, and sends what the store holds.

ctxpack cannot shrink OpenCode's sessions yet (a SQLite store does not fit the line-by-line
session framework; docs/sessions.md, "OpenCode"). These tests hold what a format for it will
rely on: a session OpenCode writes here (rounds of parallel tool calls with long outputs, a first
run and a resumed one), its database copied into a fresh home (SQLite's online backup) and
resumed, sends every tool output the store holds, pair by pair; with its older outputs rewritten
in ``part.data`` (one transaction, OpenCode not running) it sends exactly those markers, the
newest turns whole, and less; and the store put back from its backup exports byte for byte as
the original did.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents.checks import assert_newest_whole
from agents.conversation import Conversation, chat_conversation
from agents.more_sessions import make_session
from agents.opencode import OpenCodeHome, copy_store, export, run_opencode
from agents.script import Script
from agents.server import ModelServer
from agents.sessions import RESUME_PROMPT, Session, Workload
from agents.stores import opencode_outputs, shrink_opencode

WORKLOAD = Workload(turns=2, turns_after=3, output_lines=300)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    return make_session("opencode", tmp_path_factory.mktemp("opencode"), WORKLOAD)


@pytest.fixture(scope="module")
def exported(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export") / "session.json"
    export(OpenCodeHome(session.root), session.project, session.session_id, path)
    return path


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


@pytest.fixture(scope="module")
def unchanged(
    session: Session, exported: Path, tmp_path_factory: pytest.TempPathFactory
) -> Conversation:
    return resumed(placed(session, tmp_path_factory.mktemp("unchanged")), session)


def test_a_placed_session_resumes_sending_every_output_the_store_holds(
    session: Session, unchanged: Conversation
) -> None:
    held = opencode_outputs(session.path, session.session_id)
    assert len(held) == 3 * (WORKLOAD.turns + WORKLOAD.turns_after)
    assert unchanged.pairing_problems() == []
    assert unchanged.results == held
    assert unchanged.user_texts()[-1] == RESUME_PROMPT


def test_a_store_put_back_from_its_backup_exports_as_the_original(
    session: Session, exported: Path, tmp_path: Path
) -> None:
    home = placed(session, tmp_path / "changed")
    backup = OpenCodeHome(tmp_path / "backup")
    copy_store(home, backup)
    assert shrink_opencode(home.database, session.session_id)
    changed = export(home, session.project, session.session_id, tmp_path / "changed.json")
    assert changed != exported.read_bytes()
    copy_store(backup, home)
    again = export(home, session.project, session.session_id, tmp_path / "again.json")
    assert again == exported.read_bytes()


def test_outputs_rewritten_in_the_store_are_what_it_sends(
    session: Session, exported: Path, unchanged: Conversation, tmp_path: Path
) -> None:
    home = placed(session, tmp_path)
    markers = shrink_opencode(home.database, session.session_id)
    assert markers
    after = resumed(home, session)
    assert after.pairing_problems() == []
    assert {call: after.results[call] for call in markers} == markers
    assert_newest_whole(unchanged, after, 3)
    assert after.size < unchanged.size
    assert after.user_texts()[-1] == RESUME_PROMPT
