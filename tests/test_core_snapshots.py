"""SPEC §5: transcript snapshots."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import stat
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from compactor_core.errors import ConfigError, InputUnreadable, OutputError
from compactor_core.snapshots import (
    SnapshotStore,
    check_session_id,
    session_id_for_file,
)

MOMENT = datetime(2025, 3, 9, 14, 5, 7, 123456)
MESSAGES = [
    {"role": "system", "content": "你是助手"},
    {"role": "user", "content": "列出文件 😀", "n": 123456789012345678901234567890},
    {"role": "assistant", "content": [{"type": "text", "text": "ok\nline two"}]},
]
NAME = re.compile(r"(?P<session>.+)_\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{6}\.jsonl")


def fixed_clock() -> datetime:
    return MOMENT


def test_file_name_and_layout(tmp_path: Path, golden) -> None:
    store = SnapshotStore(tmp_path / "snaps", clock=fixed_clock)
    path = store.save("sess-1", MESSAGES)
    assert path == tmp_path / "snaps" / "sess-1_2025-03-09T14-05-07-123456.jsonl"
    data = path.read_bytes()
    lines = data.decode("utf-8").splitlines()
    assert [json.loads(line) for line in lines] == MESSAGES  # one message a line, no header
    assert "列出文件 😀" in lines[1]  # non-ASCII unescaped
    assert data.endswith(b"\n")
    golden("snapshot.jsonl", path.name + "\n" + data.decode())


def test_default_clock_is_local_time_with_microseconds(tmp_path: Path) -> None:
    before = datetime.now().replace(microsecond=0)
    path = SnapshotStore(tmp_path).save("s", [])
    after = datetime.now()
    stamp = datetime.strptime(path.name[2:-6], "%Y-%m-%dT%H-%M-%S-%f")
    assert before <= stamp <= after


def test_modes_file_0600_new_directory_0700(tmp_path: Path) -> None:
    old_umask = os.umask(0)  # even with a permissive umask
    try:
        path = SnapshotStore(tmp_path / "new", clock=fixed_clock).save("s", MESSAGES)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700


def test_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    SnapshotStore(directory, clock=fixed_clock).save("s", [])
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755


def test_never_overwrites_the_same_moment_gets_the_next_microsecond(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=fixed_clock)
    first = store.save("s", [{"role": "user", "content": "first"}])
    second = store.save("s", [{"role": "user", "content": "second"}])
    assert first.name == "s_2025-03-09T14-05-07-123456.jsonl"
    assert second.name == "s_2025-03-09T14-05-07-123457.jsonl"
    assert json.loads(first.read_text())["content"] == "first"
    assert json.loads(second.read_text())["content"] == "second"


def test_no_temporary_files_are_left(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s", clock=fixed_clock)
    for _ in range(3):
        store.save("s", MESSAGES)
    names = os.listdir(tmp_path / "s")
    assert len(names) == 3
    assert all(NAME.fullmatch(name) for name in names)


def _save_in_thread(store: SnapshotStore, barrier: threading.Barrier, number: int, out: list):
    barrier.wait()
    out.append(store.save("same", [{"role": "user", "content": f"writer {number}"}]))


def test_eight_threads_at_the_same_moment_all_succeed(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "t", clock=fixed_clock)
    barrier = threading.Barrier(8)
    saved: list[Path] = []
    threads = [
        threading.Thread(target=_save_in_thread, args=(store, barrier, n, saved)) for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_eight_distinct_snapshots(saved)


def _save_in_process(directory: str, barrier, number: int, queue) -> None:
    store = SnapshotStore(Path(directory), clock=fixed_clock)
    barrier.wait()
    try:
        queue.put(str(store.save("same", [{"role": "user", "content": f"writer {number}"}])))
    except Exception as error:  # reported to the test, which fails on it
        queue.put(f"error: {error!r}")


def test_eight_processes_at_the_same_moment_all_succeed(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(8)
    queue = context.Queue()
    directory = tmp_path / "p"  # not there yet: all eight race to create it too
    processes = [
        context.Process(target=_save_in_process, args=(str(directory), barrier, n, queue))
        for n in range(8)
    ]
    for process in processes:
        process.start()
    saved = [Path(queue.get(timeout=30)) for _ in processes]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    assert_eight_distinct_snapshots(saved)


def assert_eight_distinct_snapshots(saved: list[Path]) -> None:
    assert len(saved) == 8
    assert len(set(saved)) == 8
    stamps = sorted(path.name for path in saved)
    expected = [
        f"same_{(MOMENT + timedelta(microseconds=n)).strftime('%Y-%m-%dT%H-%M-%S-%f')}.jsonl"
        for n in range(8)
    ]
    assert stamps == expected
    writers = sorted(json.loads(path.read_text())["content"] for path in saved)
    assert writers == [f"writer {n}" for n in range(8)]
    assert sorted(os.listdir(saved[0].parent)) == expected  # and nothing else


# --- session ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "session_id",
    ["default", "a", "A.b_c:d@e+f-g", "x" * 128, "2025-01-01T00:00", "user@host", "a..b"],
)
def test_valid_session_ids(session_id: str) -> None:
    assert check_session_id(session_id) == session_id


@pytest.mark.parametrize(
    "session_id",
    [
        "",
        "x" * 129,
        "a/b",
        "../up",
        "..",
        ".",
        ".hidden",
        "/abs",
        "a\\b",
        "nul\x00byte",
        "new\nline",
        "trailing\n",
        "sp ace",
        "中文",
        "a*b",
        "~",
    ],
)
def test_invalid_session_ids_are_refused_not_rewritten(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(ConfigError, match="invalid session id"):
        check_session_id(session_id)
    store = SnapshotStore(tmp_path / "snaps", clock=fixed_clock)
    with pytest.raises(ConfigError):
        store.save(session_id, MESSAGES)
    assert not (tmp_path / "snaps").exists()  # refused before anything was created


@pytest.mark.parametrize(
    ("file", "session_id"),
    [
        ("chat.json", "chat"),
        ("dir/chat.jsonl", "chat"),
        ("my chat (1).json", "my-chat--1-"),
        ("对话.json", "--"),
        (".hidden.json", "-hidden"),
        ("a.b.json", "a.b"),
        ("x" * 200 + ".json", "x" * 128),
    ],
)
def test_session_id_for_in_place_files(file: str, session_id: str) -> None:
    result = session_id_for_file(Path(file))
    assert result == session_id
    assert check_session_id(result) == result


# --- listing and loading -------------------------------------------------------------------------


class Ticking:
    """A clock that moves one second a call."""

    def __init__(self) -> None:
        self.now = MOMENT

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def test_snapshots_newest_first_and_newest_of_a_session(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=Ticking())
    a1 = store.save("a", [{"role": "user", "content": "a1"}])
    b1 = store.save("b", [{"role": "user", "content": "b1"}])
    a2 = store.save("a", [{"role": "user", "content": "a2"}])
    (tmp_path / "notes.txt").write_text("not a snapshot")
    (tmp_path / ".a.123.xyz.ctxpack-tmp").write_text("a temporary file")
    assert [info.path for info in store.snapshots()] == [a2, b1, a1]
    assert [info.session_id for info in store.snapshots()] == ["a", "b", "a"]
    assert store.newest("a").path == a2
    assert store.load(store.newest("a")) == [{"role": "user", "content": "a2"}]
    assert store.load(store.newest("b")) == [{"role": "user", "content": "b1"}]


def test_session_ids_with_underscores_and_stamps_are_told_apart(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=Ticking())
    store.save("a_b", [])
    store.save("a", [])
    assert sorted(info.session_id for info in store.snapshots()) == ["a", "a_b"]


def test_load_gives_back_what_was_saved(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=fixed_clock)
    store.save("s", MESSAGES)
    assert store.load(store.newest("s")) == MESSAGES
    store.save("empty", [])
    assert store.load(store.newest("empty")) == []


def test_missing_directory_has_no_snapshots(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "none")
    assert store.snapshots() == []
    with pytest.raises(InputUnreadable, match="no snapshot of session 'x'"):
        store.newest("x")


def test_newest_refuses_a_bad_session_id(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        SnapshotStore(tmp_path).newest("../etc")


def test_directory_that_is_a_file_is_an_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match=r"file: cannot write snapshot"):
        SnapshotStore(blocker).save("s", MESSAGES)
    assert blocker.read_text() == "x"


def test_lone_surrogate_survives_a_snapshot(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=fixed_clock)
    messages = [{"role": "user", "content": "a\ud800b"}]
    store.save("s", messages)
    assert store.load(store.newest("s")) == messages
