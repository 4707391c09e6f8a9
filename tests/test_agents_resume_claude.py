"""The real Claude Code resumes the sessions ctxpack changed, and sends less (SPEC §8.6).

The sessions: one the real Claude Code writes here while a scripted model works (turns of
parallel tool calls with long outputs, its own /compact in the middle, more work after it), and
the two real Claude Code sessions of the corpus. Each is changed by ``micro``, ``full``, ``auto``
and ``micro`` + ``restore`` in place, then resumed by the real agent against the local server.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents.conversation import Conversation
from agents.e2e import (
    TRANSFORMS,
    Unchanged,
    check_restore,
    check_transform,
    check_unchanged,
    resume_unchanged,
)
from agents.sessions import ORIGINALS, Session, Workload, make_claude_session, original_session


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
