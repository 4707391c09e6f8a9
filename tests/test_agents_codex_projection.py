"""Codex's own thread history stays right after ctxpack rewrites a rollout (real Codex 0.169.0).

Codex projects every rollout into ``CODEX_HOME/thread_history_1.sqlite`` and reads each resumed
session on from the byte offset it had reached. A rewritten rollout is shorter, so without care
the next turn is read from the wrong place and goes missing from the thread's history. After
ctxpack replaces the file, ``Codex.after_replace`` deletes the thread's projection rows and Codex
projects the rollout afresh.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from agents.codex import CodexHome, run_codex
from agents.script import Reply, Script, ToolCall
from agents.server import ModelServer
from agents.sessions import Session, Workload, make_codex_session
from codex_rollouts import records, run

from compactor_core.agents.codex import Codex
from compactor_core.session_files.agent_indexes import forget_projection
from compactor_core.settings import RunSettings


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Session:
    workload = Workload(turns=4, turns_after=0, output_lines=50, compact=False)
    return make_codex_session(tmp_path_factory.mktemp("codex-projection"), workload)


def database(session: Session) -> Path:
    return session.root / "codex" / "thread_history_1.sqlite"


def projected(session: Session) -> tuple[dict[str, int], list[tuple[int, int, int, int]]]:
    """Items by type, and each turn's (ordinal, byte offset, end ordinal, end byte offset)."""
    with sqlite3.connect(database(session)) as connection:
        items = dict(connection.execute("SELECT item_type, count(*) FROM thread_items GROUP BY 1"))
        turns = connection.execute(
            "SELECT rollout_ordinal, rollout_byte_offset, rollout_end_ordinal,"
            " rollout_end_byte_offset FROM thread_turns ORDER BY rollout_ordinal"
        ).fetchall()
    return items, turns


def shrink_and_resume(made: Session, tmp_path: Path) -> Session:
    session = made.copy_to(tmp_path / "home")
    (session.root / "codex").mkdir(exist_ok=True)
    for path in (made.root / "codex").glob("*.sqlite*"):  # the index, pointed at the copy
        (session.root / "codex" / path.name).write_bytes(path.read_bytes())
    with sqlite3.connect(session.root / "codex" / "state_5.sqlite") as connection:
        connection.execute("UPDATE threads SET rollout_path = ?", (str(session.path),))
    shrunk = run(session.path.read_bytes(), RunSettings("micro")).data
    assert len(shrunk) < session.path.stat().st_size
    session.path.write_bytes(shrunk)
    assert Codex().after_replace(session.path) is None
    turn = Reply(text="Checking.", calls=(ToolCall("exec_command", {"cmd": "seq 3"}),))
    with ModelServer(Script([turn, Reply(text="All good.")])) as server:
        home = CodexHome(session.root)
        run_codex(
            home, session.project, "One more check.", server, resume=session.session_id
        ).check()
    return session


def test_after_the_reset_codex_projects_the_whole_thread_again(
    made: Session, tmp_path: Path
) -> None:
    before, _ = projected(made)
    session = shrink_and_resume(made, tmp_path)
    items, turns = projected(session)
    assert items["userMessage"] == before["userMessage"] + 1
    assert items["commandExecution"] == before["commandExecution"] + 1
    assert items["agentMessage"] == before["agentMessage"] + 2
    # every turn's offsets are those of its lines in the file as it is now
    data = session.path.read_bytes()
    starts = {}
    offset = 0
    for line in data.splitlines(keepends=True):
        starts[offset] = records(line)[0]["ordinal"]
        offset += len(line)
    starts[offset] = None  # the end of the file
    assert turns and all(starts[start] == ordinal for ordinal, start, _, _ in turns)
    assert turns[-1][3] == len(data)


def test_outside_a_codex_home_nothing_is_touched(tmp_path: Path) -> None:
    loose = tmp_path / "rollout.jsonl"
    loose.write_bytes(b'{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}\n')
    assert forget_projection(loose, "x") is None
    day = tmp_path / "codex" / "sessions" / "2026" / "12" / "02"
    day.mkdir(parents=True)
    (day / "rollout-x.jsonl").write_bytes(loose.read_bytes())
    assert (
        forget_projection(day / "rollout-x.jsonl", "x") is None
    )  # no database there: nothing to do


def test_a_locked_database_gives_a_warning_not_a_failure(tmp_path: Path) -> None:
    day = tmp_path / "codex" / "sessions" / "2026" / "12" / "02"
    day.mkdir(parents=True)
    rollout = day / "rollout-2026-12-02T00-00-00-x.jsonl"
    rollout.write_bytes(b'{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}\n')
    (tmp_path / "codex" / "thread_history_1.sqlite").write_bytes(b"not a database at all" * 100)
    warning = forget_projection(rollout, "x")
    assert warning is not None and "thread_history_1.sqlite" in warning and "\n" not in warning
