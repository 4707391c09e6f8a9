"""Claude Code sessions with gaps in their parent chain, resumed by the real agent (issue 21.3).

Where a record's ``parentUuid`` names no record, Claude Code 2.1.328 does not end the
conversation there: it goes on from the latest record of the same thread written at most 5 s
before; only past a longer gap does the chain end. The view must be what the agent sends, and
micro must keep what the agent sends whole: on a session whose last reply's parent was missing,
the view was that reply alone and ``micro`` truncated the newest results.

The session is one the real agent writes here (two turns of parallel tool calls); each case
changes a copy of it (a parent that names no record, a record taken out, a gap of a minute) and
the real agent resumes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from agents.conversation import outline
from agents.e2e import IN_PLACE
from agents.resume import resume
from agents.sessions import Session, Workload, make_claude_session
from helpers import run

from compactor_core.ends.documents import open_document
from compactor_core.ends.sources import LocalFile
from compactor_core.session_files.index import load_view

Records = list[dict[str, Any]]
NOWHERE = "00000000-0000-4000-8000-00000000dead"  # a uuid no record has


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    root = tmp_path_factory.mktemp("claude-gaps")
    return make_claude_session(root, Workload(turns=2, compact=False, output_lines=5))


def conversation(records: Records) -> list[int]:
    """Indexes of the user and assistant records, in order."""
    return [n for n, record in enumerate(records) if record.get("type") in ("user", "assistant")]


def prompts(records: Records) -> list[int]:
    return [n for n in conversation(records) if isinstance(records[n]["message"]["content"], str)]


def last_reply_dangles(records: Records) -> Records:
    """The issue's session: the last reply's parent is in no record (written moments later)."""
    records[conversation(records)[-1]]["parentUuid"] = NOWHERE
    return records


def second_prompt_dangles(records: Records) -> Records:
    records[prompts(records)[1]]["parentUuid"] = NOWHERE
    return records


def reply_taken_out(records: Records) -> Records:
    """The reply before the second prompt is gone: the prompt follows the results before it."""
    second = prompts(records)[1]
    parent = records[second]["parentUuid"]
    return [record for record in records if record.get("uuid") != parent]


def a_minute_later(records: Records) -> Records:
    """The last reply's parent is in no record, and it came a minute after the rest."""
    last = conversation(records)[-1]
    records[last]["parentUuid"] = NOWHERE
    for record in records[last:]:
        if isinstance(record.get("timestamp"), str):
            moment = datetime.fromisoformat(record["timestamp"]) + timedelta(minutes=1)
            record["timestamp"] = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return records


GAPS: dict[str, Callable[[Records], Records]] = {
    "last reply's parent missing": last_reply_dangles,
    "second prompt's parent missing": second_prompt_dangles,
    "a reply taken out": reply_taken_out,
    "a minute's gap ends the chain": a_minute_later,
}


def with_gap(session: Session, root: Path, gap: Callable[[Records], Records]) -> Session:
    copy = session.copy_to(root)
    records = [json.loads(line) for line in copy.path.read_text().splitlines()]
    lines = [json.dumps(record, ensure_ascii=False) for record in gap(records)]
    copy.path.write_text("\n".join(lines) + "\n")
    return copy


def view_of(path: Path) -> list[dict[str, Any]]:
    with open_document(LocalFile(str(path), str(path))) as document:
        return load_view(document.handle, document.index())


@pytest.mark.parametrize("gap", GAPS)
def test_the_view_is_what_the_agent_sends_across_a_gap(
    session: Session, gap: str, tmp_path: Path
) -> None:
    copy = with_gap(session, tmp_path, GAPS[gap])
    checked = run("check", copy.path)  # a gap in what the agent resumes is a problem (21.9)
    assert checked.returncode == 1 and b"dangling-parent" in checked.stdout
    view = outline(view_of(copy.path))
    sent = outline(resume(copy).messages)[:-1]  # the last: the prompt of the resume
    assert view == sent
    if gap == "a minute's gap ends the chain":
        assert len(view) == 1  # the reply alone: what the agent sends, too
    else:  # bridged: back to the first prompt
        assert view[0] == outline(view_of(session.path))[0] and len(view) >= 6


def test_micro_keeps_the_newest_results_whole_across_a_gap(
    session: Session, tmp_path: Path
) -> None:
    """The issue's case: ``micro`` turned the newest results, which the agent sends, into
    markers, as the view it saw was the last reply alone."""
    copy = with_gap(session, tmp_path, last_reply_dangles)
    before = resume(copy.copy_to(tmp_path / "before"))
    done = run("micro", *IN_PLACE, "--keep-recent", "1", "--stats", copy.path)
    assert done.returncode == 0, done.stderr.decode()
    after = resume(copy)
    newest, older = before.result_turns()[-1], before.result_turns()[0]
    assert all(after.results[call] == before.results[call] for call in newest)
    assert set(after.markers()) == set(older)
    assert b": 3 tool results truncated" in done.stderr
