"""OpenCode's sessions, rows of one SQLite database, through every command (SPEC §8, issue 25).

The fixture is a database the real OpenCode wrote (tests/fixtures/more_agents/regenerate.py),
kept as SQL text and built again for each test. Its session is detected, checked, shrunk in
place by ``micro`` (only the tool parts' outputs and their copies in the event log change, every
other row stays as it was), compacted by ``full`` (OpenCode's own compaction messages appended)
and restored (the session's rows as they were, other sessions' later changes kept); a locked
database, one OpenCode holds, a session changed while it was being compacted and a damaged
database are refused and left as they were. OpenCode resuming these sessions is
test_agents_resume_opencode.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from helpers import TESTS, estimated_tokens, invoke, wait_until_open
from provider_seam import use_provider

from compactor_core.compaction.micro import is_marker

FIXTURES = TESTS / "fixtures" / "more_agents"
IN_PLACE = ("--in-place", "--min-idle", "0")
TABLES = ("session", "message", "part", "event", "event_sequence")


def placed(root: Path) -> Path:
    """The fixture's database where OpenCode keeps it: ``<data home>/opencode/opencode.db``."""
    path = root / "opencode" / "opencode.db"
    path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(path)) as database:
        database.executescript((FIXTURES / "opencode.sql").read_text(encoding="utf-8"))
    return path


def session_of(path: Path) -> str:
    return rows(path, "session")[0]["id"]


def rows(path: Path, table: str) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(path)) as database:
        database.row_factory = sqlite3.Row
        return [dict(row) for row in database.execute(f"SELECT * FROM {table} ORDER BY rowid")]


def every_row(path: Path) -> dict[str, list[dict[str, Any]]]:
    return {table: rows(path, table) for table in TABLES}


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return placed(tmp_path / "data")


def test_a_real_session_is_detected_and_healthy(database: Path) -> None:
    session = session_of(database)
    checked = invoke("check", "--json", database)
    assert checked.exit_code == 0, checked.stdout
    report = json.loads(checked.stdout)
    assert report["file"] == f"{database}#{session}" and report["format"] == "opencode"
    assert report["problems"] == [] and report["records"] == len(rows(database, "message"))
    one = estimated_tokens(f"{database}#{session}")
    assert estimated_tokens(database) == one == report["tokens"] > 0


def test_micro_changes_only_tool_outputs_and_their_copies_and_restore_puts_them_back(
    database: Path,
) -> None:
    before, tokens_before = every_row(database), estimated_tokens(database)
    done = invoke("micro", *IN_PLACE, database)
    assert done.exit_code == 0, done.stderr
    after = every_row(database)
    assert estimated_tokens(database) < tokens_before
    for table in ("session", "message", "event_sequence"):
        assert after[table] == before[table]
    changed = 0
    for old, new in zip(before["part"], after["part"], strict=True):
        if old == new:
            continue
        changed += 1
        was, now = json.loads(old["data"]), json.loads(new["data"])
        assert {**old, "data": None} == {**new, "data": None} and was["type"] == "tool"
        assert is_marker(now["state"]["output"])
        assert is_marker(now["state"]["metadata"].get("output", "[truncated: none]"))
        assert {**now["state"], "output": 0, "metadata": 0} == {
            **was["state"],
            "output": 0,
            "metadata": 0,
        }
    assert changed == 6  # three calls a turn, the newest three turns whole
    # the event log's copies of those parts: every long output string is the marker now
    truncated = {
        old["id"] for old, new in zip(before["part"], after["part"], strict=True) if old != new
    }
    copies = [json.loads(row["data"])["part"] for row in after["event"] if "part" in row["data"]]
    states = [copy["state"] for copy in copies if copy.get("id") in truncated]
    assert len(states) > len(truncated)  # a copy as it ran, and as it ended
    for state in states:
        for value in (state.get("output"), *(state.get("metadata") or {}).values()):
            assert not isinstance(value, str) or len(value) <= 200 or is_marker(value)
    again = invoke("micro", *IN_PLACE, database)
    assert again.exit_code == 0 and every_row(database) == after
    restored = invoke("restore", database)
    assert restored.exit_code == 0, restored.stderr
    assert every_row(database) == before


def test_full_appends_opencodes_compaction_and_restore_takes_it_away(database: Path) -> None:
    session = session_of(database)
    before, tokens_before = every_row(database), estimated_tokens(database)
    done = invoke("full", *IN_PLACE, database)
    assert done.exit_code == 0, done.stderr
    after = every_row(database)
    assert after["part"][: len(before["part"])] == before["part"]
    assert after["message"][: len(before["message"])] == before["message"]
    user, summary = (json.loads(row["data"]) for row in after["message"][len(before["message"]) :])
    assert user["role"] == "user" and summary["parentID"] == after["message"][-2]["id"]
    assert (summary["mode"], summary["summary"], summary["finish"]) == ("compaction", True, "stop")
    parts = [json.loads(row["data"]) for row in after["part"][len(before["part"]) :]]
    assert [part["type"] for part in parts] == ["compaction", "text"]
    report = json.loads(invoke("check", "--json", database).stdout)
    assert report["problems"] == [] and report["view_messages"] == 2
    assert estimated_tokens(database) < tokens_before / 2
    new_events = after["event"][len(before["event"]) :]
    last = before["event_sequence"][0]["seq"]
    assert [event["seq"] for event in new_events] == [last + 1, last + 2, last + 3, last + 4]
    assert after["event_sequence"][0]["seq"] == last + 4
    assert invoke("restore", f"{database}#{session}").exit_code == 0
    assert every_row(database) == before


@pytest.mark.parametrize("command", ["micro", "full", "auto"])
def test_a_dry_run_changes_nothing(command: str, database: Path) -> None:
    before = every_row(database)
    done = invoke(command, *IN_PLACE, "--dry-run", database)
    assert done.exit_code == 0, done.stderr
    assert every_row(database) == before


def test_restore_puts_back_one_session_and_keeps_the_others_later_changes(database: Path) -> None:
    session = session_of(database)
    other = add_session(database, "ses_other")
    before = rows_of(database, session)
    done = invoke("micro", *IN_PLACE, database)
    assert done.exit_code == 0, done.stderr
    assert rows_of(database, session) != before
    with closing(sqlite3.connect(database)) as connection, connection:
        later = '{"type":"text","text":"later"}'
        connection.execute("UPDATE part SET data = ? WHERE session_id = ?", (later, other))
    restored = invoke("restore", f"{database}#{session}")
    assert restored.exit_code == 0, restored.stderr
    assert rows_of(database, session) == before
    assert [row["data"] for row in rows_of(database, other)["part"]] == [later]


def rows_of(path: Path, session: str) -> dict[str, list[dict[str, Any]]]:
    """The session's rows of each table (by the column that names it)."""
    columns = {"session": "id", "event": "aggregate_id", "event_sequence": "aggregate_id"}
    return {
        table: [row for row in found if row[columns.get(table, "session_id")] == session]
        for table, found in every_row(path).items()
    }


def add_session(path: Path, session: str) -> str:
    """A second session of one message and one part (as another OpenCode session would be)."""
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.row_factory = sqlite3.Row
        row = dict(connection.execute("SELECT * FROM session").fetchone())
        row.update(id=session, slug="other")
        insert(connection, "session", row)
        message = {"id": "msg_other", "session_id": session, "time_created": 1, "time_updated": 1}
        insert(connection, "message", {**message, "data": '{"role":"user","time":{"created":1}}'})
        part = {"id": "prt_other", "message_id": "msg_other", "session_id": session}
        insert(
            connection,
            "part",
            {**part, "time_created": 1, "time_updated": 1, "data": '{"type":"text","text":"hi"}'},
        )
    return session


def insert(connection: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    names = ", ".join(row)
    connection.execute(
        f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
    )


def test_backup_is_a_copy_of_the_whole_database_by_sqlites_online_backup(database: Path) -> None:
    before = every_row(database)
    assert invoke("micro", *IN_PLACE, "--backup", ".bak", database).exit_code == 0
    assert every_row(Path(f"{database}.bak")) == before != every_row(database)


def test_sessions_lists_each_session_of_the_database(database: Path, tmp_path: Path) -> None:
    session = session_of(database)
    env = {"HOME": str(tmp_path / "nobody"), "PATH": os.environ.get("PATH", "")}
    env["XDG_DATA_HOME"] = str(database.parent.parent)
    listed = invoke("sessions", "--json", "--agent", "opencode", env=env)
    assert listed.exit_code == 0, listed.stderr
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["agent"], row["id"], row["path"]) == ("opencode", session, f"{database}#{session}")
    assert row["tokens"] == estimated_tokens(database) and row["in_use"] is False


# --- refused, and left as it was -----------------------------------------------------------------


def test_a_locked_database_is_in_use(database: Path) -> None:
    before = every_row(database)
    with closing(sqlite3.connect(database, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        done = invoke("micro", *IN_PLACE, database)
        holder.execute("ROLLBACK")
    assert done.exit_code == 75
    assert "in use by its agent (the database is locked" in done.stderr
    assert every_row(database) == before


def holding(database: Path, program: Path) -> subprocess.Popen[bytes]:
    """A process started as ``program`` that holds the database open (read and write), as
    OpenCode does while it runs; its command line names the database."""
    hold = (
        f"import sqlite3, time; c = sqlite3.connect({str(database)!r}); "
        "c.execute('SELECT 1 FROM session').fetchall(); time.sleep(60)"
    )
    process = subprocess.Popen([program, "-c", hold, database], executable=sys.executable)
    wait_until_open(process.pid, database)  # its connection opens the file at once
    return process


def test_a_database_opencode_holds_is_in_use(database: Path, tmp_path: Path) -> None:
    opencode = holding(database, tmp_path / "opencode")  # started as OpenCode is: opencode …
    try:
        before = every_row(database)
        for forced in ((), ("--force",)):  # it writes its copy of the session back: never
            done = invoke("micro", *IN_PLACE, *forced, database)
            assert done.exit_code == 75
            assert f"process {opencode.pid} of the agent has the database open" in done.stderr
            assert "not even with --force" in done.stderr and done.stderr.count("\n") == 1
        assert every_row(database) == before
    finally:
        opencode.kill()
        opencode.wait()
    assert invoke("micro", *IN_PLACE, database).exit_code == 0


def test_a_process_that_only_names_the_database_is_not_the_agent(database: Path) -> None:
    """ctxpack's own workers hold the database a moment, each doing one of its sessions, and
    their command line names ``…/opencode/opencode.db``: they are not OpenCode."""
    worker = holding(database, Path(sys.executable))
    try:
        done = invoke("micro", *IN_PLACE, database)
        assert done.exit_code == 0, done.stderr
    finally:
        worker.kill()
        worker.wait()


def test_a_session_its_agent_changed_meanwhile_is_left_as_it_is(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent writes while the summary is being made: nothing of ctxpack's is written."""

    class Meanwhile:
        name = "meanwhile"

        def summarize(self, request: Any) -> str:
            with closing(sqlite3.connect(database)) as connection, connection:
                connection.execute("UPDATE message SET time_updated = time_updated + 1")
            return "A summary."

    use_provider(monkeypatch, Meanwhile())
    before = every_row(database)
    done = invoke("full", *IN_PLACE, database)
    assert done.exit_code == 75
    assert "changed while being compacted (its agent wrote to it), left as is" in done.stderr
    after = every_row(database)
    assert len(after["message"]) == len(before["message"]) and after["part"] == before["part"]


def test_a_damaged_database_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x01" * 500)
    done = invoke("micro", *IN_PLACE, path)
    assert done.exit_code == 65 and done.stderr.count("\n") == 1
    assert "not a conversation ctxpack knows" in done.stderr


def test_a_part_of_an_unknown_type_is_kept_as_it_is(database: Path) -> None:
    message = rows(database, "message")[1]
    unknown = '{"type":"from-the-future","payload":[1,2]}'
    with closing(sqlite3.connect(database)) as connection, connection:
        part = {"id": "prt_zzzz", "message_id": message["id"], "session_id": message["session_id"]}
        insert(connection, "part", {**part, "time_created": 1, "time_updated": 1, "data": unknown})
    assert invoke("check", database).exit_code == 0
    assert invoke("micro", *IN_PLACE, database).exit_code == 0
    assert [row["data"] for row in rows(database, "part") if row["id"] == "prt_zzzz"] == [unknown]


def test_a_session_in_a_database_is_changed_in_place_only(database: Path) -> None:
    done = invoke("micro", f"{database}#{session_of(database)}")
    assert done.exit_code == 2
    assert done.stderr == (
        f"ctxpack: {database}#{session_of(database)}: a session in a database is changed in "
        "place only: use --in-place\n"
    )


def test_an_exclusively_locked_database_is_in_use_for_every_command(database: Path) -> None:
    before = every_row(database)
    with closing(sqlite3.connect(database, isolation_level=None)) as holder:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        done = [invoke(*command, database) for command in (("estimate",), ("micro", *IN_PLACE))]
        holder.execute("ROLLBACK")
    assert [result.exit_code for result in done] == [75, 75]
    assert all(result.stderr.endswith("locked by its agent, left as is\n") for result in done)
    assert every_row(database) == before


def test_a_blob_in_a_row_is_bad_input_that_names_its_place(database: Path) -> None:
    with closing(sqlite3.connect(database)) as writer:
        part = writer.execute("SELECT id FROM part LIMIT 1").fetchone()[0]
        writer.execute("UPDATE part SET data = X'00FF10' WHERE id = ?", (part,))
        writer.commit()
    done = invoke("check", database)
    assert done.exit_code == 65
    assert f"part {part}: its data is a BLOB, not JSON text" in done.stderr


def test_backup_never_writes_through_a_link_planted_where_its_copy_is_made(
    database: Path, tmp_path: Path
) -> None:
    precious = tmp_path / "precious"
    precious.write_bytes(b"not yours")
    for pid in range(os.getpid() - 50, os.getpid() + 500):  # the names the old code would use
        planted = database.parent / f".opencode.db.bak.{pid}.ctxpack-tmp"
        planted.symlink_to(precious)
    assert invoke("micro", *IN_PLACE, "--backup", ".bak", database).exit_code == 0
    assert precious.read_bytes() == b"not yours"
    assert stat.S_IMODE(Path(f"{database}.bak").stat().st_mode) == 0o600
