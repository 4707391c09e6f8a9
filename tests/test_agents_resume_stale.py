"""The real Claude Code resumes a session file micro compacted stale results first (issue 35).

The session is one the real Claude Code writes here while a scripted model runs the same two
commands and reads the same part of a file every turn: each turn's results make the earlier
turn's stale. ``micro --in-place`` gives those their ``[superseded: …]`` markers, among the old
turns and among the newest ones (where a later result repeats them); the agent resumes the file
and sends exactly that: the conversations' markers, the newest results whole.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents.checks import KEEP_RECENT, assert_micro
from agents.conversation import Conversation, text_of
from agents.e2e import IN_PLACE
from agents.resume import resume
from agents.sessions import Session, Workload, make_claude_session
from helpers import run

from compactor_core.compaction.staleness import analyse


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    workload = Workload(turns=5, compact=False, output_lines=200, repeated=True)
    return make_claude_session(tmp_path_factory.mktemp("claude-stale"), workload)


@pytest.fixture(scope="module")
def baseline(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    return resume(session.copy_to(tmp_path_factory.mktemp("unchanged")))


def test_resumes_a_session_compacted_stale_first(
    session: Session, baseline: Conversation, tmp_path: Path
) -> None:
    copy = session.copy_to(tmp_path / "stale")
    done = run("micro", *IN_PLACE, copy.path, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    after = resume(copy)
    shrink = assert_micro(baseline, after, tmp_path)
    stale = analyse(baseline.messages)
    superseded = {
        call_id: text_of(content)
        for call_id, content in after.results.items()
        if text_of(content).startswith("[superseded:")
    }
    newest = [call for turn in baseline.result_turns()[-KEEP_RECENT:] for call in turn]
    assert superseded and set(superseded) <= set(stale.superseded)
    assert any(call in superseded for call in newest)  # a repeat among the newest turns
    latest = baseline.result_turns()[-1]
    assert all(after.results[call] == baseline.results[call] for call in latest)
    build = "[superseded: Bash seq -f 'each turn: build step"
    assert any(text.startswith(build) for text in superseded.values())
    assert all(text.endswith(" again 1 turn later]") for text in superseded.values())
    print(f"claude-code stale-first micro: {shrink}")  # the figures, with pytest -s


def test_age_only_resumes_with_truncation_markers_alone(
    session: Session, baseline: Conversation, tmp_path: Path
) -> None:
    copy = session.copy_to(tmp_path / "aged")
    done = run("micro", "--age-only", *IN_PLACE, copy.path, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    after = resume(copy)
    assert_micro(baseline, after, tmp_path)
    texts = [text_of(content) for content in after.results.values()]
    assert not any(text.startswith("[superseded:") for text in texts)
    assert any(text.startswith("[truncated:") for text in texts)
