"""The real Codex CLI resumes the rollouts ctxpack changed, and sends less (SPEC §8.6).

The rollout is one the real Codex writes here while a scripted model works (turns of parallel
tool calls with long outputs, its own auto-compaction in the middle, more work after it). It is
changed by ``micro``, ``full``, ``auto`` and ``micro`` + ``restore`` in place, then resumed by
the real agent against the local server.
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
from agents.sessions import Session, Workload, make_codex_session


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    return make_codex_session(tmp_path_factory.mktemp("codex-generated"), Workload())


@pytest.fixture(scope="module")
def unchanged(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Unchanged:
    return resume_unchanged(session, tmp_path_factory.mktemp("baseline"))


@pytest.fixture(scope="module")
def baseline(unchanged: Unchanged) -> Conversation:
    """What the agent sends when it resumes the session unchanged."""
    return unchanged.sent


def test_resumes_an_unchanged_rollout_sending_what_the_file_holds(unchanged: Unchanged) -> None:
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
