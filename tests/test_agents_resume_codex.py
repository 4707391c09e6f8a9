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
from agents.e2e import IN_PLACE, TRANSFORMS
from agents.resume import resume
from agents.resume_tests import *  # noqa: F403
from agents.sessions import Session, Workload, make_codex_session
from helpers import run

from compactor_core.conversation.boilerplate import CODEX_SUMMARY_INTRO


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    return make_codex_session(tmp_path_factory.mktemp("codex-generated"), Workload())


@pytest.fixture(scope="module")
def remotely_compacted(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """A rollout compacted the way Codex compacts with OpenAI's API: its model's encrypted
    ``compaction`` item in the replacement history, then more work after it."""
    root = tmp_path_factory.mktemp("codex-remote")
    workload = Workload(turns=2, turns_after=2, output_lines=40, remote_compaction=True)
    return make_codex_session(root, workload)


@pytest.fixture(scope="module")
def remote_baseline(
    remotely_compacted: Session, tmp_path_factory: pytest.TempPathFactory
) -> Conversation:
    return resume(remotely_compacted.copy_to(tmp_path_factory.mktemp("remote-baseline")))


@pytest.mark.parametrize("transform", ["full", "auto"])
def test_a_summary_keeps_codex_own_earlier_compaction(
    remotely_compacted: Session, remote_baseline: Conversation, transform: str, tmp_path: Path
) -> None:
    """Issue 21.4: the new replacement_history held only ctxpack's summary: what Codex's model
    had summarized before, which only it can read, was lost to the agent."""
    before = remote_baseline
    assert len(before.compactions) == 1  # Codex sends its model's summary again on resume
    copy = remotely_compacted.copy_to(tmp_path / transform)
    arguments, check = TRANSFORMS[transform]
    done = run(*arguments, *IN_PLACE, copy.path, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    after = resume(copy)
    assert after.compactions == before.compactions  # kept, byte for byte
    ours = CODEX_SUMMARY_INTRO
    assert any(text.startswith(ours) for text in after.user_texts())  # and ours after it
    check(before, after, tmp_path)
