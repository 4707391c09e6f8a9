"""The real Claude Code resumes the sessions ctxpack changed, and sends less (SPEC §8.6).

The sessions: one the real Claude Code writes here while a scripted model works (turns of
parallel tool calls with long outputs, its own /compact in the middle, more work after it), and
the two real Claude Code sessions of the corpus. Each is changed by ``micro``, ``full``, ``auto``
and ``micro`` + ``restore`` in place, then resumed by the real agent against the local server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agents.checks import assert_same_conversation
from agents.conversation import Conversation
from agents.resume import resume
from agents.resume_tests import *  # noqa: F403
from agents.sessions import ORIGINALS, Session, Workload, make_claude_session, original_session
from helpers import run

from compactor_core.ends.documents import open_document
from compactor_core.ends.sources import LocalFile


@pytest.fixture(scope="module", params=["generated", *ORIGINALS])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    root = tmp_path_factory.mktemp(f"claude-{request.param}")
    if request.param == "generated":
        return make_claude_session(root, Workload())
    return original_session(root, request.param)


def test_a_gap_where_the_resume_does_not_look_is_a_note(
    session: Session, baseline: Conversation, tmp_path: Path
) -> None:
    """Issue 21.9: sessions the agent resumes as they are got exit 1 for dangling parents
    outside what it resumes (before a compaction, off the chain)."""
    copy = session.copy_to(tmp_path / "notes")
    with open_document(LocalFile(str(copy.path), "s")) as document:
        index = document.index()
        resumed = set(document.format.resumed(index.infos, index.view))
    off = next(n for n, info in enumerate(index.infos) if info.parent and n not in resumed)
    lines = copy.path.read_text().splitlines()
    record = json.loads(lines[off])
    record["parentUuid"] = "00000000-0000-4000-8000-00000000dead"
    lines[off] = json.dumps(record, ensure_ascii=False)
    copy.path.write_text("\n".join(lines) + "\n")
    done = run("check", "--json", copy.path)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["problems"] == []
    assert (off + 1, "dangling-parent") in [(n["line"], n["kind"]) for n in report["notes"]]
    assert_same_conversation(baseline, resume(copy))
