"""The real Claude Code resumes the sessions ctxpack changed, and sends less (SPEC §8.6).

The sessions: one the real Claude Code writes here while a scripted model works (turns of
parallel tool calls with long outputs, its own /compact in the middle, more work after it), and
the two real Claude Code sessions of the corpus. Each is changed by ``micro``, ``full``, ``auto``
and ``micro`` + ``restore`` in place, then resumed by the real agent against the local server.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from agents.claude import ClaudeHome
from agents.conversation import Conversation
from agents.e2e import (
    TRANSFORMS,
    Unchanged,
    check_restore,
    check_transform,
    check_unchanged,
    resume_unchanged,
)
from agents.sessions import Session, Workload, make_claude_session
from helpers import CORPUS

# The real sessions of the corpus (tests/corpus/README.md), by their session id.
ORIGINALS = {
    "cc_kimi_516b7270": "516b7270-b0ab-4d34-9e4d-1f05c9ccd20a",
    "cc_entire_1284c080": "1284c080-f9cd-45f8-9942-ff58f5c517e5",
}


def original_session(root: Path, name: str) -> Session:
    """A corpus session put where Claude Code looks for it: in a scratch project's folder."""
    project = root / "project"
    project.mkdir(parents=True)
    session_id = ORIGINALS[name]
    path = ClaudeHome(root).session_file(project, session_id)
    path.parent.mkdir(parents=True)
    shutil.copyfile(CORPUS / "originals" / f"{name}__full.jsonl", path)
    return Session("claude-code", root, project, session_id, path)


@pytest.fixture(scope="module", params=["generated", *ORIGINALS])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    root = tmp_path_factory.mktemp(f"claude-{request.param}")
    if request.param == "generated":
        return make_claude_session(root, Workload())
    return original_session(root, request.param)


@pytest.fixture(scope="module")
def unchanged(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Unchanged:
    return resume_unchanged(session, tmp_path_factory.mktemp("baseline"))


@pytest.fixture(scope="module")
def baseline(unchanged: Unchanged) -> Conversation:
    """What the agent sends when it resumes the session unchanged."""
    return unchanged.sent


def test_resumes_an_unchanged_session_sending_what_the_file_holds(unchanged: Unchanged) -> None:
    check_unchanged(unchanged)


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_resumes_after_the_transform_sending_less(
    session: Session, baseline: Conversation, transform: str, tmp_path: Path
) -> None:
    check_transform(session, baseline, transform, tmp_path)


def test_resumes_after_micro_and_restore_as_before(
    session: Session, baseline: Conversation, tmp_path: Path
) -> None:
    check_restore(session, baseline, tmp_path)
