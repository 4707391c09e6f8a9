"""SPEC §5 and issue 9: transcript snapshots keep every byte, never overwrite, never collide."""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers import jsonl

from compactor_core.conversation.formats import parse
from compactor_core.disk.atomic import atomic_write
from compactor_core.errors import (
    InputError,
    InputUnreadable,
    OutputError,
    UnsafeLocation,
    UsageError,
)
from compactor_core.snapshots.base import (
    Details,
    Keeping,
    Kept,
    check_session_id,
    session_id_for_file,
)
from compactor_core.snapshots.local_store import SnapshotStore

MOMENT = datetime(2025, 3, 9, 14, 5, 7, 123456)
MESSAGES = [
    {"role": "system", "content": "你是助手"},
    {"role": "user", "content": "列出文件 😀", "n": 123456789012345678901234567890},
    {"role": "assistant", "content": [{"type": "text", "text": "ok\nline two"}]},
]
ENVELOPE = (
    b'\xef\xbb\xbf{\n  "model": "m",\n  "system": "be brief",\n  "tools": [],\n'
    b'  "messages": [\n    {"role": "user", "content": "hi"}\n  ]\n}\n'
)
STAMP = r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{6}"
DATA_NAME = re.compile(rf"(?P<session>.+)_{STAMP}\.(original|result|replaced)\.jsonl?")


def fixed_clock() -> datetime:
    return MOMENT


def names_in(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def test_result_file_name_and_layout(tmp_path: Path, golden) -> None:
    store = SnapshotStore(tmp_path / "snaps", clock=fixed_clock)
    path = store.save_result("sess-1", jsonl(MESSAGES), Details(tokens=42))
    assert path == tmp_path / "snaps" / "sess-1_2025-03-09T14-05-07-123456.result.jsonl"
    data = path.read_bytes()
    lines = data.decode("utf-8").splitlines()
    assert [json.loads(line) for line in lines] == MESSAGES  # one message a line, no header
    assert "列出文件 😀" in lines[1]  # non-ASCII unescaped
    assert data.endswith(b"\n")
    golden("snapshot.jsonl", path.name + "\n" + data.decode())
    meta = json.loads(path.with_name(path.name + ".meta").read_bytes())
    assert meta == {
        "session": "sess-1",
        "kind": "result",
        "time": MOMENT.astimezone().isoformat(),
        "source": None,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "mode": None,
        "uid": None,
        "gid": None,
        "messages": 3,
        "tokens": 42,
        "shape": "jsonl",
        "rewritten": None,
    }


def test_an_original_keeps_the_input_byte_for_byte(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=fixed_clock)
    path = store.save_original("s", ENVELOPE, Details("envelope", 1, 3), tmp_path / "in.json")
    assert path.name == "s_2025-03-09T14-05-07-123456.original.json"  # JSON, not JSONL
    assert path.read_bytes() == ENVELOPE
    [snapshot] = store.snapshots()
    assert (snapshot.kind, snapshot.shape, snapshot.messages, snapshot.tokens) == (
        "original",
        "envelope",
        1,
        3,
    )
    assert snapshot.source == str(tmp_path / "in.json")
    assert snapshot.read() == ENVELOPE


def test_default_clock_is_local_time_with_microseconds(tmp_path: Path) -> None:
    before = datetime.now().replace(microsecond=0)
    path = SnapshotStore(tmp_path).save_result("s", jsonl([]))
    after = datetime.now()
    stamp = datetime.strptime(path.name[2:28], "%Y-%m-%dT%H-%M-%S-%f")
    assert before <= stamp <= after


def test_modes_file_0600_new_directory_0700(tmp_path: Path) -> None:
    old_umask = os.umask(0)  # even with a permissive umask
    try:
        path = SnapshotStore(tmp_path / "new", clock=fixed_clock).save_result("s", jsonl(MESSAGES))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.with_name(path.name + ".meta").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700


def test_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    SnapshotStore(directory, clock=fixed_clock).save_result("s", jsonl([]))
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755


def test_never_overwrites_the_same_moment_gets_the_next_microsecond(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=fixed_clock)
    first = store.save_result("s", jsonl([{"role": "user", "content": "first"}]))
    second = store.save_result("s", jsonl([{"role": "user", "content": "second"}]))
    assert first.name == "s_2025-03-09T14-05-07-123456.result.jsonl"
    assert second.name == "s_2025-03-09T14-05-07-123457.result.jsonl"
    assert json.loads(first.read_text())["content"] == "first"
    assert json.loads(second.read_text())["content"] == "second"


def test_no_temporary_files_are_left(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s", clock=fixed_clock)
    for _ in range(3):
        store.save_result("s", jsonl(MESSAGES))
    names = names_in(tmp_path / "s")
    assert len(names) == 6  # three snapshots, three .meta files
    assert all(DATA_NAME.fullmatch(name.removesuffix(".meta")) for name in names)


def _save_in_thread(store: SnapshotStore, barrier: threading.Barrier, number: int, out: list):
    barrier.wait()
    out.append(store.save_result("same", jsonl([{"role": "user", "content": f"writer {number}"}])))


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
        saved = store.save_result("same", jsonl([{"role": "user", "content": f"writer {number}"}]))
        queue.put(str(saved))
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
        f"same_{(MOMENT + timedelta(microseconds=n)).strftime('%Y-%m-%dT%H-%M-%S-%f')}.result.jsonl"
        for n in range(8)
    ]
    assert stamps == expected
    writers = sorted(json.loads(path.read_text())["content"] for path in saved)
    assert writers == [f"writer {n}" for n in range(8)]
    metas = [name + ".meta" for name in expected]
    assert names_in(saved[0].parent) == sorted(expected + metas)  # and nothing else
    store = SnapshotStore(saved[0].parent)
    assert all(snapshot.sha256 for snapshot in store.snapshots())  # each its own .meta


# --- keeping a file that is replaced in place (SESSIONS.md §8.4) ---------------------------------


def session_file(tmp_path: Path, data: bytes = ENVELOPE, mode: int = 0o640) -> Path:
    file = tmp_path / "project" / "session.json"
    file.parent.mkdir(exist_ok=True)
    file.write_bytes(data)
    os.chmod(file, mode)
    return file


@contextlib.contextmanager
def kept(store: SnapshotStore, file: Path, how: Keeping) -> Iterator[Kept]:
    """``keep_original`` of ``file`` as it is now, through a descriptor open while it is kept."""
    fd = os.open(file, os.O_RDONLY)
    try:
        with store.keep_original(file, fd, os.fstat(fd).st_size, how) as record:
            yield record
    finally:
        os.close(fd)


def test_keep_original_links_the_old_inode_and_the_rename_detaches_it(tmp_path: Path) -> None:
    file = session_file(tmp_path)
    inode = file.stat().st_ino
    store = SnapshotStore(tmp_path / "snaps", clock=fixed_clock)
    session = session_id_for_file(file)
    with kept(store, file, Keeping(session, Details("envelope", 1, 9))) as record:
        assert record.status.st_ino == inode and record.status.st_nlink == 2  # a link
        assert record.linked and record.copied is None
        atomic_write(file, b"[]\n")
        record.replaced = True
    [snapshot] = store.snapshots()
    assert snapshot.path.stat().st_ino == inode  # the old inode is the snapshot now
    assert snapshot.path.stat().st_nlink == 1
    assert file.stat().st_ino != inode and file.read_bytes() == b"[]\n"
    assert snapshot.read() == ENVELOPE
    assert stat.S_IMODE(snapshot.path.stat().st_mode) == 0o600  # only the store's, now
    assert stat.S_IMODE(file.stat().st_mode) == 0o640  # the new file keeps the file's mode
    assert (snapshot.kind, snapshot.session_id, snapshot.mode) == ("original", session, 0o640)
    assert (snapshot.uid, snapshot.gid) == (os.getuid(), os.getgid())
    assert snapshot.source == str(file) and snapshot.size == len(ENVELOPE)
    assert snapshot.sha256 == hashlib.sha256(ENVELOPE).hexdigest() and snapshot.trusted
    assert snapshot.path.name == f"{session}_2025-03-09T14-05-07-123456.original.json"


def test_keep_original_the_link_changes_the_ctime_it_reports(tmp_path: Path) -> None:
    file = session_file(tmp_path)
    before = file.stat()
    store = SnapshotStore(tmp_path / "snaps")
    with kept(store, file, Keeping("s")) as record:
        after = file.stat()
    assert record.status.st_ctime_ns == after.st_ctime_ns
    assert (record.status.st_mtime_ns, record.status.st_size) == (
        before.st_mtime_ns,
        before.st_size,
    )


def test_keep_original_is_removed_when_the_replacement_fails(tmp_path: Path) -> None:
    file = session_file(tmp_path)
    store = SnapshotStore(tmp_path / "snaps")
    with pytest.raises(OutputError, match="changed"), kept(store, file, Keeping("s")):
        raise OutputError(f"{file}: file changed while it was being compacted, left as is")
    assert names_in(tmp_path / "snaps") == []
    assert file.read_bytes() == ENVELOPE and file.stat().st_nlink == 1


def test_keep_original_stays_when_the_block_fails_after_the_rename(tmp_path: Path) -> None:
    file = session_file(tmp_path)
    store = SnapshotStore(tmp_path / "snaps")
    with pytest.raises(OutputError), kept(store, file, Keeping("s")) as record:
        atomic_write(file, b"[]\n")
        record.replaced = True
        raise OutputError("something after the rename")
    [snapshot] = store.snapshots()
    assert snapshot.read() == ENVELOPE


def test_keep_original_copies_across_filesystems(tmp_path: Path) -> None:
    """/dev/shm is a tmpfs on Linux: a hard link from there into tmp_path fails (EXDEV)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() and not os.environ.get("CI"):
        pytest.skip("no /dev/shm here")
    directory = Path(tempfile.mkdtemp(dir=shm, prefix="ctxpack-test-"))
    try:
        file = session_file(directory, b'{"role":"user","content":"x"}\n')
        store = SnapshotStore(tmp_path / "snaps")
        with kept(store, file, Keeping("s")) as record:
            assert record.status.st_nlink == 1 and not record.linked  # not linked
            assert record.copied == "it is on another file system than the snapshot folder"
            atomic_write(file, b"")
            record.replaced = True
        [snapshot] = store.snapshots()
        assert snapshot.read() == b'{"role":"user","content":"x"}\n'
        assert stat.S_IMODE(snapshot.path.stat().st_mode) == 0o600
        assert snapshot.path.name.endswith(".original.jsonl")
    finally:
        for path in sorted(directory.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        directory.rmdir()


def test_keep_original_keeps_only_the_bytes_read(tmp_path: Path) -> None:
    """A line appended after the file was read is not part of its original."""
    file = session_file(tmp_path, b"one\n")
    store = SnapshotStore(tmp_path / "snaps")
    fd = os.open(file, os.O_RDONLY)
    try:
        with file.open("ab") as handle:
            handle.write(b"two\n")
        with store.keep_original(file, fd, 4, Keeping("s")) as record:
            record.replaced = True
    finally:
        os.close(fd)
    [snapshot] = store.snapshots()
    assert (snapshot.size, snapshot.sha256) == (4, hashlib.sha256(b"one\n").hexdigest())


def test_a_snapshot_changed_afterwards_is_refused(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    path = store.save_original("s", ENVELOPE, Details("envelope"))
    path.write_bytes(ENVELOPE + b" ")
    [snapshot] = store.snapshots()
    with pytest.raises(InputError, match="changed since it was taken"):
        snapshot.read()


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
    with pytest.raises(UsageError, match="invalid session id"):
        check_session_id(session_id)
    store = SnapshotStore(tmp_path / "snaps", clock=fixed_clock)
    with pytest.raises(UsageError):
        store.save_result(session_id, jsonl(MESSAGES))
    with pytest.raises(UsageError):
        store.select(session_id)
    assert not (tmp_path / "snaps").exists()  # refused before anything was created


@pytest.mark.parametrize(
    ("file", "name"),
    [
        ("chat.json", "chat"),
        ("dir/chat.jsonl", "chat"),
        ("my chat (1).json", "my-chat--1-"),
        ("对话.json", "--"),
        (".hidden.json", "-hidden"),
        ("a.b.json", "a.b"),
        ("x" * 200 + ".json", "x" * 119),
    ],
)
def test_session_id_for_in_place_files(tmp_path: Path, file: str, name: str) -> None:
    path = tmp_path / file
    digest = hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:8]
    result = session_id_for_file(path)
    assert result == f"{name}-{digest}"
    assert check_session_id(result) == result


def test_same_name_in_two_folders_two_stable_ids(tmp_path: Path) -> None:
    a, b = tmp_path / "projA" / "session.json", tmp_path / "projB" / "session.json"
    assert session_id_for_file(a) != session_id_for_file(b)
    assert session_id_for_file(a).startswith("session-")
    assert session_id_for_file(a) == session_id_for_file(a)


def test_session_id_follows_links_and_relative_paths(tmp_path: Path) -> None:
    real = session_file(tmp_path)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    os.chdir(real.parent)
    assert session_id_for_file(link) == session_id_for_file(real)
    assert session_id_for_file(Path("session.json")) == session_id_for_file(real)


# --- listing and selecting -----------------------------------------------------------------------


class Ticking:
    """A clock that moves one second a call."""

    def __init__(self) -> None:
        self.now = MOMENT

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def test_snapshots_newest_first_and_selected(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=Ticking())
    a1 = store.save_original("a", b"[]\n", Details("array"), tmp_path / "x.json")
    b1 = store.save_result("b", jsonl([{"role": "user", "content": "b1"}]))
    a2 = store.save_result("a", jsonl([{"role": "user", "content": "a2"}]))
    (tmp_path / "notes.txt").write_text("not a snapshot")
    (tmp_path / ".a.123.xyz.ctxpack-tmp").write_text("a temporary file")
    assert [snapshot.path for snapshot in store.snapshots()] == [a2, b1, a1]
    assert [snapshot.session_id for snapshot in store.snapshots()] == ["a", "b", "a"]
    assert [snapshot.path for snapshot in store.select("a")] == [a2, a1]
    assert [snapshot.path for snapshot in store.select("a", "original")] == [a1]
    assert store.select(source=tmp_path / "x.json") == []  # under another session's id
    x = store.save_original(
        session_id_for_file(tmp_path / "x.json"), b"[]\n", Details("array"), tmp_path / "x.json"
    )
    assert [snapshot.path for snapshot in store.select(source=tmp_path / "x.json")] == [x]
    assert store.select("c") == []


def test_session_ids_with_underscores_and_stamps_are_told_apart(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=Ticking())
    store.save_result("a_b", jsonl([]))
    store.save_result("a", jsonl([]))
    assert sorted(snapshot.session_id for snapshot in store.snapshots()) == ["a", "a_b"]


def test_snapshots_of_earlier_versions_are_listed_as_unknown(tmp_path: Path) -> None:
    old = tmp_path / "chat_2025-03-09T14-05-07-123456.jsonl"
    old.write_bytes(b'{"role":"user","content":"x"}\n')
    [snapshot] = SnapshotStore(tmp_path).snapshots()
    assert (snapshot.session_id, snapshot.kind, snapshot.sha256) == ("chat", "unknown", None)
    assert snapshot.read() == old.read_bytes()


def test_a_lost_meta_file_still_lists_the_snapshot(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=fixed_clock)
    path = store.save_result("s", jsonl(MESSAGES))
    path.with_name(path.name + ".meta").write_text("{torn")
    [snapshot] = store.snapshots()
    assert (snapshot.kind, snapshot.messages) == ("result", None)


def test_remove_takes_the_meta_file_too(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snaps", clock=fixed_clock)
    store.save_result("s", jsonl(MESSAGES))
    store.remove(store.snapshots()[0])
    assert names_in(tmp_path / "snaps") == []


def test_missing_directory_has_no_snapshots(tmp_path: Path) -> None:
    assert SnapshotStore(tmp_path / "none").snapshots() == []


def test_unreadable_directory_is_an_input_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputUnreadable, match="file"):
        SnapshotStore(blocker).snapshots()


def test_directory_that_is_a_file_is_an_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match=r"file: snapshot: cannot write: Not a directory"):
        SnapshotStore(blocker).save_result("s", jsonl(MESSAGES))
    assert blocker.read_text() == "x"


def test_lone_surrogate_survives_a_snapshot(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=fixed_clock)
    messages = [{"role": "user", "content": "a\ud800b"}]
    path = store.save_result("s", jsonl(messages))
    assert parse(path.read_bytes()).messages == messages


# --- issue 22.1: nothing planted in the store is ever followed or trusted ----------------------


def test_a_link_planted_at_a_snapshots_name_is_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"only root may write this\n")
    store = SnapshotStore(tmp_path / "snaps", clock=fixed_clock)
    (tmp_path / "snaps").mkdir(mode=0o700)
    taken = "s_2025-03-09T14-05-07-123456.result.jsonl"
    (tmp_path / "snaps" / taken).symlink_to(victim)
    (tmp_path / "snaps" / (taken.replace("123456", "123457") + ".meta")).symlink_to(victim)
    path = store.save_result("s", jsonl(MESSAGES))  # both names taken: it moves on to a free one
    assert path.name == taken.replace("123456", "123458")
    assert victim.read_bytes() == b"only root may write this\n"
    assert [snapshot.path.name for snapshot in store.snapshots() if snapshot.trusted] == [path.name]


def test_a_record_that_is_a_link_or_not_an_object_is_not_trusted(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snaps", clock=Ticking())
    first = store.save_result("s", jsonl(MESSAGES))
    second = store.save_result("s", jsonl(MESSAGES))
    meta = second.with_name(second.name + ".meta")
    meta.unlink()
    meta.symlink_to(first.with_name(first.name + ".meta"))  # a record borrowed by a link
    first.with_name(first.name + ".meta").write_text("[1, 2]")  # and one that is no object
    assert [snapshot.trusted for snapshot in store.snapshots()] == [False, False]


def test_a_snapshot_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snaps")
    path = store.save_result("s", jsonl(MESSAGES))
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)  # same bytes, same hash: but not the store's own file
    [snapshot] = store.snapshots()
    with pytest.raises(InputUnreadable, match="not a snapshot of yours"):
        snapshot.read()


def test_a_new_store_is_0700_and_its_files_0600_from_their_first_moment(tmp_path: Path) -> None:
    """Under a permissive umask too: created O_EXCL with the mode, never chmod-ed later."""
    old_umask = os.umask(0)
    try:
        store = SnapshotStore(tmp_path / "deep" / "er" / "snaps")
        path = store.save_original("s", b"secret\n", Details("jsonl"))
    finally:
        os.umask(old_umask)
    for folder in (tmp_path / "deep", tmp_path / "deep" / "er", tmp_path / "deep" / "er" / "snaps"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_a_store_others_can_write_to_is_refused_for_reading_and_writing(
    tmp_path: Path, mode: int
) -> None:
    folder = tmp_path / "snaps"
    store = SnapshotStore(folder)
    store.save_result("s", jsonl(MESSAGES))
    os.chmod(folder, mode)
    with pytest.raises(UnsafeLocation, match="others can write to it"):
        store.snapshots()
    with pytest.raises(UnsafeLocation):
        store.save_result("s", jsonl(MESSAGES))
    assert len(os.listdir(folder)) == 2
