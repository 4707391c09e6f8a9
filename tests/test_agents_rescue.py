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
from agents.rescue_cases import Resumed, damaged_copy, make_session, resume_within_limits
from agents.sessions import Session
from helpers import run

from cli.exit_codes import ExitStatus

# What the agent does with the damaged session by itself, measured with Claude Code 2.1.328,
# Codex 0.169.0, Copilot CLI 1.0.102, pi 0.73.1 and Qwen Code 0.24.4: "fails" (exits non-zero,
# or sends a request the API refuses), "loses" (resumes, but sends less of the conversation
# than the undamaged session), "copes" (sends it all).
FAILS, LOSES, COPES = "fails", "loses", "copes"
CASES = {
    ("claude-code", "big_image"): FAILS,
    ("claude-code", "wide_image"): FAILS,
    ("claude-code", "huge_record"): FAILS,
    ("claude-code", "long_history"): FAILS,
    ("claude-code", "removed_result"): COPES,  # it answers the lost result itself
    ("claude-code", "cut_chain"): COPES,  # it crosses the gap itself
    ("codex", "big_image"): FAILS,
    ("codex", "wide_image"): COPES,  # it resizes the image before it sends it
    ("codex", "huge_record"): COPES,  # it truncates a tool's output before it sends it
    ("codex", "long_history"): COPES,  # likewise (rescue, which counts them whole, summarizes)
    ("codex", "removed_result"): COPES,  # it answers the lost result ("aborted") itself
    ("copilot-cli", "huge_record"): LOSES,  # it drops the 20 MB event, and what follows it
    ("copilot-cli", "removed_result"): COPES,
    ("copilot-cli", "line_separator"): COPES,  # its reader no longer splits on U+2028
    ("pi", "huge_record"): FAILS,
    ("pi", "removed_result"): COPES,
    ("pi", "removed_call"): FAILS,  # it sends the results without their call
    ("qwen-code", "huge_record"): COPES,  # it truncates a tool's output before it sends it
    ("qwen-code", "removed_result"): COPES,
}


@pytest.fixture(scope="module")
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    return make_session(request.param, tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="module")
def undamaged(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Resumed:
    return resume_within_limits(session.copy_to(tmp_path_factory.mktemp("undamaged")))


def what_it_did(resumed: Resumed, undamaged: Resumed) -> str:
    if resumed.fails:
        return FAILS
    return LOSES if resumed.messages < undamaged.messages else COPES


@pytest.mark.parametrize(("session", "damage"), sorted(CASES), indirect=["session"])
def test_the_agent_resumes_the_rescued_session_whole(
    session: Session, undamaged: Resumed, damage: str, tmp_path: Path
) -> None:
    by_itself = CASES[session.agent, damage]
    broken, what = damaged_copy(session, damage, tmp_path / "damaged")
    before = resume_within_limits(broken.copy_to(tmp_path / "before"))
    done = run("rescue", "--min-idle", "0", broken.path, timeout=300)
    assert done.returncode == ExitStatus.OK, done.stderr.decode()
    after = resume_within_limits(broken)
    repairs = [line for line in done.stderr.decode().splitlines() if ": repaired: " in line]
    print(f"\n{session.agent} {damage} ({what}): {before} -> {after}; {len(repairs)} repairs")
    assert what_it_did(before, undamaged) == by_itself, before
    assert not after.fails, after
    summarized = damage == "long_history"  # the summary and the pending turn, by design
    lost = 0  # what the damage took: a call's message, and the results rescue drops with it
    if damage == "removed_call":
        lost = 1 + sum("without its call" in line for line in repairs)
    assert summarized or after.messages == undamaged.messages - lost, after
    assert repairs, done.stderr.decode()  # what rescue repaired is there even when it copes
