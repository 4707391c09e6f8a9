"""Issue 22.2-22.4: an agent writing its session while ctxpack rewrites or restores it loses
nothing. Real processes: the ``ctxpack`` executable, and a writer (``live_agent.py``) that the
kernel's own notifications (inotify) wake at the worst moments; many trials each, every line
the writer wrote is in the file afterwards, once, in its order."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, TESTS, run
from inotify import available

from compactor_core.compaction.outcome import Report
from compactor_core.disk import commit, leases
from compactor_core.ends.destinations import InPlace
from compactor_core.ends.sources import LocalFile
from compactor_core.process import Target, process
from compactor_core.settings import RunSettings, Settings
from compactor_core.snapshots.local_store import SnapshotStore

pytestmark = pytest.mark.skipif(not available(), reason="needs Linux inotify")

# Each trial starts from the first 40 records of a real Claude Code session (160 KB): a run's
# time is mostly ctxpack's start.
LINES = 5
TRIALS = 20  # of each race
TEMP = ".ctxpack-tmp"
OLD = time.time() - 3600


@dataclass
class Trial:
    returncode: int
    stderr: bytes
    data: bytes
    slowest_open_us: int


ORIGINAL = b"".join(
    (CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl").read_bytes().splitlines(True)[:40]
)


def session(tmp_path: Path, number: int) -> Path:
    """Trial ``number``'s session file, and its snapshot store (made 0700 before the writer
    watches it, as ctxpack makes a store)."""
    (tmp_path / f"store-{number}").mkdir(mode=0o700)
    folder = tmp_path / f"trial-{number}"
    folder.mkdir()
    path = folder / "s.jsonl"
    path.write_bytes(ORIGINAL)
    os.utime(path, (OLD, OLD))
    return path


def appended_lines(data: bytes) -> list[int]:
    """The numbers of the writer's lines in ``data``, in the order they are in."""
    return [
        int(line.split(b"live-agent-", 1)[1][:4])
        for line in data.splitlines()
        if b"live-agent-" in line
    ]


def with_writer(
    path: Path,
    command: list[str],
    watch: Path,
    on: str,
    name: str,
    delay_us: int,
    seed: int,
    hold: bool = False,
) -> Trial:
    """Run ctxpack ``command`` while the writer waits for ``on`` at ``name`` in ``watch``."""
    flags = ["--hold"] if hold else []
    writer = subprocess.Popen(
        [
            sys.executable,
            str(TESTS / "live_agent.py"),
            str(path),
            "--watch",
            str(watch),
            "--on",
            on,
            "--name",
            name,
            "--lines",
            str(LINES),
            "--delay-us",
            str(delay_us),
            "--seed",
            str(seed),
            *flags,
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == b"ready\n"
        done = run(*command, path)
        said = writer.stdout.read()
        writer.wait(timeout=60)
    finally:
        writer.kill()
    assert said.startswith(b"done"), said
    return Trial(done.returncode, done.stderr, path.read_bytes(), int(said.split()[1]))


def assert_nothing_lost(trial: Trial, original: bytes) -> str:
    """Every line once, in order, at the end; the rest is the original or its rewrite. Which
    of the two ways it went, in words."""
    assert appended_lines(trial.data) == list(range(1, LINES + 1)), trial.stderr
    tail = trial.data[-sum(len(line) for line in trial.data.splitlines(True)[-LINES:]) :]
    assert appended_lines(tail) == list(range(1, LINES + 1))
    if trial.returncode == 75:  # left as it was: the original, and the agent's lines
        assert trial.data.startswith(original)
        assert b"left as is" in trial.stderr or b"open for writing by" in trial.stderr
        return "left alone"
    assert trial.returncode == 0, trial.stderr
    assert len(trial.data) < len(original)
    return "moved" if b"moved onto the new version" in trial.stderr else "after the rename"


def snapshot_is_whole(store: Path, path: Path, original: bytes) -> None:
    [snapshot] = SnapshotStore(store).select(source=path, kind="original")
    assert snapshot.read() == original  # its size and hash: only the bytes that were read


def test_lines_appended_while_the_file_is_replaced_are_never_lost(tmp_path: Path) -> None:
    """The writer wakes when the snapshot's record is written (its temporary file removed), the
    last step before the checks and the rename, and waits 0-6 ms more: its lines land before
    the last check (the file is left alone), between it and the rename (moved onto the new
    file), or after."""
    original = ORIGINAL
    ways: Counter[str] = Counter()
    for number in range(TRIALS):
        path = session(tmp_path, number)
        store = tmp_path / f"store-{number}"
        command = ["micro", "--in-place", "--snapshot-dir", store]
        trial = with_writer(path, command, store, "delete", TEMP, 6000, number)
        way = assert_nothing_lost(trial, original)
        ways[way] += 1
        if way != "left alone":
            snapshot_is_whole(store, path, original)
    print(dict(ways))
    assert ways["moved"] + ways["after the rename"] > 0  # the window was reached


def test_lines_appended_while_a_summary_is_appended_are_never_lost(tmp_path: Path) -> None:
    """The same for ``full``, whose new file is the old one and its summary's records: the
    agent's lines come after those."""
    original = ORIGINAL
    for number in range(TRIALS):
        path = session(tmp_path, number)
        store = tmp_path / f"store-{number}"
        command = ["full", "--in-place", "--snapshot-dir", store]
        trial = with_writer(path, command, store, "delete", TEMP, 6000, number)
        assert appended_lines(trial.data) == list(range(1, LINES + 1)), trial.stderr
        assert trial.data.startswith(original)  # full only appends, and so does the agent
        assert trial.returncode in (0, 75), trial.stderr
        if trial.returncode == 0:
            snapshot_is_whole(store, path, original)


def test_lines_appended_while_a_restore_puts_the_original_back_are_never_lost(
    tmp_path: Path,
) -> None:
    """The writer wakes when restore keeps the current version (its 'replaced' snapshot's
    record): its lines end up after the original put back, or after the compacted version the
    restore left alone."""
    original = ORIGINAL
    ways: Counter[str] = Counter()
    for number in range(TRIALS):
        path = session(tmp_path, number)
        store = tmp_path / f"store-{number}"
        assert run("micro", "--in-place", "--snapshot-dir", store, path).returncode == 0
        compacted = path.read_bytes()
        command = ["restore", "--snapshot-dir", store]
        trial = with_writer(path, command, store, "delete", TEMP, 6000, number)
        assert appended_lines(trial.data) == list(range(1, LINES + 1)), trial.stderr
        if trial.returncode == 0:
            assert trial.data.startswith(original)
            ways["restored"] += 1
        else:
            assert trial.returncode == 75, trial.stderr
            assert trial.data.startswith(compacted)
            ways["left alone"] += 1
    print(dict(ways))
    assert ways["restored"] > 0


STEADY_WRITER = """
import json, os, sys, threading, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("open", flush=True)
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
count = 0
while not stop.is_set():
    count += 1
    line = {"type": "user", "uuid": f"live-agent-{count:04d}", "message": {"role": "user",
            "content": f"appended line {count}"}}
    os.write(fd, json.dumps(line).encode() + b"\\n")
    time.sleep(0.0005)
print(count, flush=True)
"""


@pytest.mark.parametrize(("force", "trials"), [(["--force"], TRIALS), ([], 5)])
def test_a_process_writing_through_an_open_file_is_never_raced_even_forced(
    tmp_path: Path, force: list[str], trials: int
) -> None:
    """Issue 22.3: an agent that keeps its session open and writes all along (as Codex does):
    even --force cannot replace the file safely, so ctxpack refuses, saying why, and every
    line lands in the file."""
    for number in range(trials):
        path = session(tmp_path, number)
        writer = subprocess.Popen(
            [sys.executable, "-c", STEADY_WRITER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert writer.stdout is not None and writer.stdout.readline() == b"open\n"
        done = run("micro", "--in-place", *force, "--snapshot-dir", tmp_path / "store", path)
        written = int(writer.communicate(timeout=30)[0])
        assert done.returncode == 75, done.stderr
        assert b"open for writing by process" in done.stderr
        assert b"not even with --force" in done.stderr
        data = path.read_bytes()
        assert data.startswith(ORIGINAL)
        assert appended_lines(data) == list(range(1, written + 1))


# --- the window itself, held open: the writer is let in after the rename -------------------------

APPENDER = """
import json, os, sys
for number in range(1, int(sys.argv[2]) + 1):
    line = {"type": "user", "uuid": f"live-agent-{number:04d}", "message": {"role": "user",
            "content": f"appended line {number}"}}
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    os.write(fd, json.dumps(line).encode() + b"\\n")
    os.close(fd)
"""


def compact_in_place(path: Path, store: Path) -> Report:
    run_settings = RunSettings(
        "micro", Settings(keep_recent=0), snapshots=SnapshotStore(store), min_idle=0
    )
    return process(Target(LocalFile(path, str(path)), InPlace()), run_settings)


def test_a_writer_that_opens_the_file_between_the_last_check_and_the_rename_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer starts opening the old file just after the last check: the kernel holds it
    back (the read lease), the rename happens, then it is let in; its first line, written into
    the old inode, is moved onto the new file, and its next lines (the new file, held back by
    the write lease meanwhile) come after it."""
    path = session(tmp_path, 0)
    original = path.read_bytes()
    writers: list[subprocess.Popen[bytes]] = []
    real_check = commit._last_check

    def last_check_then_a_writer(where: Path, guard: commit.Guard, lease: Any) -> None:
        real_check(where, guard, lease)
        assert lease is not None, "leases are available here"
        writers.append(subprocess.Popen([sys.executable, "-c", APPENDER, str(where), str(LINES)]))
        deadline = time.monotonic() + 20
        while not lease.broken():  # until the kernel holds the writer's open back
            assert time.monotonic() < deadline and writers[0].poll() is None
            time.sleep(0.001)

    monkeypatch.setattr(commit, "_last_check", last_check_then_a_writer)
    report = compact_in_place(path, tmp_path / "store")
    assert writers[0].wait(timeout=30) == 0
    assert report.error is None
    assert "1 line (" in (report.warning or "") and "moved onto the new version" in report.warning
    data = path.read_bytes()
    assert appended_lines(data) == list(range(1, LINES + 1))  # all, in their order, at the end
    assert data.splitlines()[-LINES:] == [
        line for line in data.splitlines() if b"live-agent" in line
    ]
    assert len(data) < len(original)
    snapshot_is_whole(tmp_path / "store", path, original)  # cut back to what was read


OVERWRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b'{"rewritten": "whole"}\\n' * 20000)
os.close(fd)
"""


def test_an_old_file_rewritten_rather_than_appended_to_is_not_moved_and_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that truncates and rewrites the old file at the moment of the rename (no agent
    does: they append) gets none of its bytes moved onto the new file: they would not follow
    what was read. The new file is the rewrite's result, and ctxpack says what happened."""
    path = session(tmp_path, 0)
    writers: list[subprocess.Popen[bytes]] = []
    real_check = commit._last_check

    def last_check_then_an_overwriter(where: Path, guard: commit.Guard, lease: Any) -> None:
        real_check(where, guard, lease)
        writers.append(subprocess.Popen([sys.executable, "-c", OVERWRITER, str(where)]))
        deadline = time.monotonic() + 20
        while not lease.broken():
            assert time.monotonic() < deadline and writers[0].poll() is None
            time.sleep(0.001)

    monkeypatch.setattr(commit, "_last_check", last_check_then_an_overwriter)
    report = compact_in_place(path, tmp_path / "store")
    assert writers[0].wait(timeout=30) == 0
    assert report.error is None
    assert "rewritten, not appended to" in (report.warning or "")
    data = path.read_bytes()
    assert b"rewritten" not in data and 0 < len(data) < len(ORIGINAL)


def test_without_leases_proc_is_asked_and_the_late_line_is_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there are no leases (another system, a file system without them), the writer that
    has the old file open at the rename is seen in /proc and followed until it closes it."""
    path = session(tmp_path, 0)
    original = path.read_bytes()
    monkeypatch.setattr(leases.Lease, "take", classmethod(lambda cls, fd, kind: None))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    real_rename = commit._rename
    real_check = commit._last_check

    def last_check_then_opened(where: Path, guard: commit.Guard, lease: Any) -> None:
        real_check(where, guard, lease)
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.write(b"open\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == b"opened\n"  # it holds the old file now

    def rename_then_it_writes(new: Any, where: Path, label: str) -> None:
        real_rename(new, where, label)
        assert holder.stdin is not None
        holder.stdin.write(b"write\n")
        holder.stdin.close()

    monkeypatch.setattr(commit, "_last_check", last_check_then_opened)
    monkeypatch.setattr(commit, "_rename", rename_then_it_writes)
    report = compact_in_place(path, tmp_path / "store")
    assert holder.wait(timeout=30) == 0
    assert report.error is None and "moved onto the new version" in (report.warning or "")
    data = path.read_bytes()
    assert appended_lines(data) == [1]
    assert data.endswith(b'"appended line 1"}}\n')
    snapshot_is_whole(tmp_path / "store", path, original)


HOLDER = """
import json, os, sys
assert sys.stdin.readline() == "open\\n"
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
print("opened", flush=True)
assert sys.stdin.readline() == "write\\n"
line = {"type": "user", "uuid": "live-agent-0001", "message": {"role": "user",
        "content": "appended line 1"}}
os.write(fd, json.dumps(line).encode() + b"\\n")
os.close(fd)
"""


# --- the real Claude Code, working while ctxpack shrinks its session ----------------------------


def test_the_real_claude_code_works_on_while_ctxpack_shrinks_its_session(tmp_path: Path) -> None:
    """Claude Code resumes a session and runs a tool that takes a while; meanwhile ctxpack
    shrinks the session in place. Claude Code opens the file for each line it writes, so the
    rewrite goes ahead, and what it writes after (the tool's result, its answer) lands in the
    new file: nothing lost, and the next resume sends all of it."""
    from agents.claude import ClaudeHome, run_claude
    from agents.script import Reply, Script, ToolCall
    from agents.server import ModelServer

    project = tmp_path / "claude" / "project"
    project.mkdir(parents=True)
    home = ClaudeHome(tmp_path / "claude")
    session_id = "516b7270-b0ab-4d34-9e4d-1f05c9ccd20a"
    path = home.session_file(project, session_id)
    path.parent.mkdir(parents=True)
    shutil.copyfile(CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl", path)
    marker = tmp_path / "the tool runs"
    tool = {"command": f"touch '{marker}'; sleep 2; echo slept-well", "description": "wait"}
    script = Script([Reply(text="Waiting.", calls=(ToolCall("Bash", tool),)), Reply("All done.")])
    store = tmp_path / "store"
    with ModelServer(script) as server:
        agent: list[Any] = []
        working = threading.Thread(
            target=lambda: agent.append(
                run_claude(home, project, "Resume: wait a bit", server, resume=session_id)
            )
        )
        working.start()
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline and working.is_alive(), "the tool never ran"
            time.sleep(0.01)
        done = run("micro", "--in-place", "--min-idle", "0", "--snapshot-dir", store, path)
        working.join(timeout=120)
    assert done.returncode == 0, done.stderr
    agent[0].check()
    [original] = SnapshotStore(store).select(source=path, kind="original")
    before = original.read()
    assert b"Resume: wait a bit" in before  # the agent was mid-turn when ctxpack read it
    data = path.read_bytes()
    assert len(data) < len(before)
    assert data.count(b"\n") > before.count(b"\n")  # its lines after the rewrite are there
    assert b"slept-well" in data and b"All done." in data
    with ModelServer(Script()) as server:
        run_claude(home, project, "Resume: and now?", server, resume=session_id).check()
        sent = json.dumps(server.model_requests[-1].body)
    assert "slept-well" in sent and "All done." in sent
