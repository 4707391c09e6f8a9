"""The end-to-end steps both agents' test files share: change a session, resume it, check.

Each step works on its own copy of a session (``Session.copy_to``), since a resume appends to
the file and a test must not see another's changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from helpers import run

from agents.checks import Shrink, assert_full, assert_micro, assert_same_conversation
from agents.conversation import Conversation
from agents.records import FileResults, tool_results
from agents.resume import resume
from agents.sessions import Session

# Every session in these tests was written moments ago: ctxpack must not wait for it to idle.
IN_PLACE = ("--in-place", "--min-idle", "0")
# What each transformation is checked for after the resume.
TRANSFORMS = {
    "micro": (("micro",), assert_micro),
    "full": (("full",), assert_full),
    "auto": (("auto", "--threshold", "2000"), assert_full),
}


@dataclass(frozen=True)
class Unchanged:
    """A resume of an unchanged copy of a session: what the file held, what the agent sent.

    One per session serves both as the baseline the transformations are compared with and as
    the check that the agent sends what the file holds."""

    held: FileResults
    sent: Conversation
    checked: tuple[int, str]  # what `ctxpack check` said of the file: exit status, its lines


def resume_unchanged(session: Session, scratch: Path) -> Unchanged:
    """The agent resumes an unchanged copy of its own session."""
    copy = session.copy_to(scratch / "unchanged")
    held = tool_results(copy)
    return Unchanged(held, resume(copy), checked(copy.path))


def checked(path: Path) -> tuple[int, str]:
    done = run("check", path)
    return done.returncode, done.stdout.decode()


def check_unchanged(unchanged: Unchanged) -> None:
    """The agent sent what the file holds; ``check`` calls the agent's own file healthy."""
    held, sent = unchanged.held, unchanged.sent
    assert unchanged.checked[0] == 0 and ": healthy" in unchanged.checked[1], unchanged.checked
    assert sent.pairing_problems() == []
    assert held.since_compaction <= set(sent.results), "a result after the compaction was not sent"
    for call_id, content in sent.results.items():
        assert content == held.every[call_id], f"result {call_id} differs from the file"


def check_transform(session: Session, baseline: Conversation, name: str, scratch: Path) -> Shrink:
    """ctxpack changes a copy in place; the agent resumes it and sends a smaller, sound view."""
    arguments, check = TRANSFORMS[name]
    copy = session.copy_to(scratch / name)
    done = run(*arguments, *IN_PLACE, copy.path, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert checked(copy.path)[0] == 0, checked(copy.path)
    shrink = check(baseline, resume(copy), scratch)
    print(f"{session.agent} {copy.session_id} {name}: {shrink}")  # the figures, with pytest -s
    return shrink


def check_restore(session: Session, baseline: Conversation, scratch: Path) -> None:
    """After micro and restore the file is the original again, and resumes as it did."""
    copy = session.copy_to(scratch / "restore")
    original = copy.path.read_bytes()
    done = run("micro", *IN_PLACE, copy.path, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert copy.path.read_bytes() != original
    done = run("restore", copy.path)
    assert done.returncode == 0, done.stderr.decode()
    assert copy.path.read_bytes() == original
    assert_same_conversation(baseline, resume(copy))
