"""Issue 31's scenarios: the real Claude Code 2.1.328 runs 10 Bash calls whose outputs are about
24.5k characters each (builds, logs and test runs are like that), once straight to a model
server that bills like Anthropic and once through ``ctxpack serve``; through serve it must be
billed no more, at the defaults and at ``--threshold 20000``. And it resumes the corpus's largest
session, billed at most 0.8x through serve. Each run bills its own server: the same cache rules,
the same replies."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents.billing import Billing
from agents.claude import ClaudeHome, run_claude
from agents.script import Reply, Script, ToolCall
from agents.server import ModelServer
from agents.sessions import RESUME_PROMPT, Session, original_session
from serve_support import Serving

from compactor_core.replay.cache_rules import ANTHROPIC

CALLS = 10
LINE = "build {number}: compiled module ok, tests passed, artifacts in build/out"  # 74 chars


def script() -> Script:
    """Ten turns of one Bash call each, each printing ~24.5k characters, then done."""
    replies = [
        Reply(text=f"Build {number}.", calls=(ToolCall("Bash", _command(number)),))
        for number in range(CALLS)
    ]
    return Script(replies=replies)


def _command(number: int) -> dict[str, str]:
    line = LINE.format(number=number)
    return {"command": f"yes '{line}' | head -n 330", "description": "build"}  # 330 x 75 chars


def billed(tmp_path: Path, name: str, *serve_args: str) -> float:
    """The input the model server billed for the whole session, in input-price tokens."""
    home, project = ClaudeHome(tmp_path / name), tmp_path / f"{name}-project"
    project.mkdir()
    with ModelServer(script(), billing=Billing()) as server:
        if serve_args == ("direct",):
            run_claude(home, project, "build it ten times", server, timeout=300).check()
        else:
            with Serving(server.url, *serve_args) as proxy:
                run_claude(home, project, "build it ten times", proxy, timeout=300).check()
        assert len(server.turn_requests) == CALLS + 1
        return sum(usage.billed(ANTHROPIC.prices) for _, usage in server.billing.bills)


@pytest.mark.parametrize(
    ("serve_args", "most"),
    [
        # the defaults: the batch of markers that would pay for itself on as many requests again
        # as came (request 9 of 11, 1.04x) is not made, as it does not on half as many; the cut
        # at request 9 is: 0.93x measured (1.73x with a batch every turn)
        ((), 1.0),
        (("--threshold", "20000"), 1.0),  # 0.92x measured (2.28x before)
    ],
)
def test_claude_code_through_serve_is_billed_no_more_than_direct(
    tmp_path: Path, serve_args: tuple[str, ...], most: float
) -> None:
    direct = billed(tmp_path, "direct", "direct")
    through = billed(tmp_path, "through", *serve_args)
    print(f"serve {' '.join(serve_args) or '(defaults)'}: {through / direct:.3f}x direct")
    assert through <= most * direct


def resumed_bill(tmp_path: Path, session: Session, *serve_args: str) -> float:
    """What the model server billed for the real Claude Code resuming a copy of ``session``,
    straight (no ``serve_args``: ``direct``) or through serve."""
    copy = session.copy_to(tmp_path)
    home = ClaudeHome(copy.root)
    with ModelServer(Script(), billing=Billing()) as server:
        if serve_args == ("direct",):
            run_claude(home, copy.project, RESUME_PROMPT, server, resume=copy.session_id).check()
        else:
            with Serving(server.url, *serve_args) as proxy:
                run = run_claude(home, copy.project, RESUME_PROMPT, proxy, resume=copy.session_id)
                run.check()
        return sum(usage.billed(ANTHROPIC.prices) for _, usage in server.billing.bills)


def test_resuming_the_largest_claude_code_session_through_serve_bills_at_most_0_8x(
    tmp_path: Path,
) -> None:
    """Issue 31's target: the corpus's largest Claude Code session (3.6 MB) resumed, its whole
    history written into a cold cache, at serve's defaults: the cut sends a summary instead."""
    session = original_session(tmp_path / "original", "cc_entire_1284c080")
    direct = resumed_bill(tmp_path / "direct", session, "direct")
    through = resumed_bill(tmp_path / "through", session)
    print(f"resuming through serve: {through / direct:.3f}x direct ({through:.0f} / {direct:.0f})")
    assert through <= 0.8 * direct
