"""The real-agent resume tests every agent of issue 25 runs, written once.

A test module sets ``AGENT`` (its format's name), maybe ``WORKLOAD``, and imports these tests
and fixtures; each module is one file of the suite (xdist hands a file to one worker), so its
agent writes its session once, and the unchanged resume serves every comparison.

    AGENT = "pi"
    from agents.resume_tests import *  # noqa: F403

A module whose sessions are made otherwise (Claude Code's and Codex's own workloads, the corpus's
sessions) defines its own ``session`` fixture after the import instead of ``AGENT``.
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
from agents.more_sessions import make_session
from agents.sessions import Session, Workload

# Two rounds of tool calls in the first run, four in the resumed one (after the checkpoint a
# resume writes), more than micro keeps whole; outputs of 700 lines.
WORKLOAD = Workload(turns=2, turns_after=4)
FULL_AT_MOST = 0.5  # of the history the agent sent for the unchanged session

__all__ = [  # noqa: RUF022 (in the order the tests run)
    "baseline",
    "session",
    "unchanged",
    "test_resumes_an_unchanged_session_sending_what_the_file_holds",
    "test_resumes_after_the_transform_sending_less",
    "test_resumes_after_micro_and_restore_as_before",
]


@pytest.fixture(scope="module")
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    agent = request.module.AGENT
    workload = getattr(request.module, "WORKLOAD", WORKLOAD)
    return make_session(agent, tmp_path_factory.mktemp(agent), workload)


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
    shrink = check_transform(session, baseline, transform, tmp_path)
    if transform != "micro":
        assert shrink.bytes_after <= FULL_AT_MOST * shrink.bytes_before, shrink


def test_resumes_after_micro_and_restore_as_before(
    session: Session, baseline: Conversation, tmp_path: Path
) -> None:
    check_restore(session, baseline, tmp_path)
