"""The real agents resume the sessions ``ctxpack rescue`` repaired (issue 26).

Each agent writes its own session (tests/agents/rescue_cases.py), a copy of it is damaged the
ways the trackers report, and the agent resumes it against a model server that refuses what the
real APIs refuse: before the rescue, where the agent does not cope by itself, it fails or sends
a request the server refuses; after it, the agent exits 0 and nothing is refused. Where an agent
copes by itself (it answers a lost result, crosses a cut chain, truncates a huge output) the
test says so: the resume before succeeds, and so does the one after. ``pytest -s`` prints each
case: the agent's result before -> after.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents.rescue_cases import damaged_copy, make_session, resume_within_limits
from agents.sessions import Session
from helpers import run

from cli.exit_codes import ExitStatus

# (agent, damage): whether the agent fails on the damaged session by itself, measured with
# Claude Code 2.1.328 and Codex 0.169.0
CASES = {
    ("claude-code", "big_image"): True,
    ("claude-code", "wide_image"): True,
    ("claude-code", "huge_record"): True,
    ("claude-code", "long_history"): True,
    ("claude-code", "removed_result"): False,  # it answers the lost result itself
    ("claude-code", "cut_chain"): False,  # it crosses the gap itself
    ("codex", "big_image"): True,
    ("codex", "wide_image"): False,  # it resizes the image before it sends it
    ("codex", "huge_record"): False,  # it truncates a tool's output before it sends it
    ("codex", "long_history"): False,  # likewise (rescue, which counts them whole, summarizes)
    ("codex", "removed_result"): False,  # it answers the lost result ("aborted") itself
}


@pytest.fixture(scope="module", params=["claude-code", "codex"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    return make_session(request.param, tmp_path_factory.mktemp(request.param))


@pytest.mark.parametrize("damage", sorted({damage for _, damage in CASES}))
def test_the_agent_resumes_the_rescued_session(
    session: Session, damage: str, tmp_path: Path
) -> None:
    fails_by_itself = CASES.get((session.agent, damage))
    if fails_by_itself is None:
        pytest.skip(f"{session.agent} sessions have no {damage}")
    broken, what = damaged_copy(session, damage, tmp_path / "damaged")
    before = resume_within_limits(broken.copy_to(tmp_path / "before"))
    done = run("rescue", "--min-idle", "0", broken.path, timeout=300)
    assert done.returncode == ExitStatus.OK, done.stderr.decode()
    after = resume_within_limits(broken)
    repairs = [line for line in done.stderr.decode().splitlines() if ": repaired: " in line]
    print(f"\n{session.agent} {damage} ({what}): {before} -> {after}; {len(repairs)} repairs")
    assert before.fails == fails_by_itself, before
    assert not after.fails, after
    assert repairs, done.stderr.decode()  # what rescue repaired is there even when it copes
