"""SPEC §6 writing: atomic writes, and in-place rewrites that never lose what they remove."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from compactor_core import process as process_module
from compactor_core.disk import atomic, streams
from compactor_core.disk.atomic import TEMP_SUFFIX, atomic_write, atomic_write_chunks
from compactor_core.ends.destinations import InPlace
from compactor_core.ends.sources import LocalFile
from compactor_core.errors import OutputError
from compactor_core.process import Target, process
from compactor_core.settings import RunSettings, Settings
from compactor_core.snapshots.base import session_id_for_file
from compactor_core.snapshots.local_store import SnapshotStore

BIG = "big output " * 4  # 44 characters: its marker is shorter
ORIGINAL = [
    {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash"}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": BIG}]},
]


def leftovers(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if name.endswith(TEMP_SUFFIX)]


# --- atomic_write --------------------------------------------------------------------------------


def test_new_file_gets_0644(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    atomic_write(target, b"[]\n")
    assert target.read_bytes() == b"[]\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755])
def test_existing_file_keeps_its_mode(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    os.chmod(target, mode)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_missing_directory_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match=r"out\.json: cannot write"):
        atomic_write(tmp_path / "no" / "out.json", b"x")
    assert not (tmp_path / "no").exists()


def test_directory_target_is_refused_and_untouched(tmp_path: Path) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    with pytest.raises(OutputError, match="dir: cannot write"):
        atomic_write(target, b"x")
    assert target.is_dir()


def test_failed_rename_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def refuse(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(OutputError, match="No space left on device"):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def refuse(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(atomic.os, "fsync", refuse)
    with pytest.raises(OutputError):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_symbolic_link_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_bytes(b"old")
    link = tmp_path / "link.json"
    link.symlink_to(real.name)
    atomic_write(link, b"new")
    assert link.is_symlink()
    assert real.read_bytes() == b"new"


def test_named_pipe_is_written_to_not_replaced(tmp_path: Path) -> None:
    # regression: the rename replaced the pipe with a regular file (and so would /dev/null be,
    # as root: not tested on the real device, which a regression would destroy)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    atomic_write(fifo, b"through the pipe")
    reader.join(timeout=10)
    assert received == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_chunks_are_streamed_into_one_file(tmp_path: Path) -> None:
    target = tmp_path / "big.jsonl"
    lines = [b'{"n":%d}\n' % n for n in range(200_000)]  # more than one write buffer
    atomic_write_chunks(target, iter(lines))
    assert target.read_bytes() == b"".join(lines)
    assert leftovers(tmp_path) == []


def test_an_error_of_the_producer_passes_through_and_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"old")

    def chunks():
        yield b"x" * (streams.WRITE_BUFFER + 1)  # already written to the temporary file
        raise ValueError("the source went bad")

    with pytest.raises(ValueError, match="went bad"):
        atomic_write_chunks(target, chunks())
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_the_check_before_the_rename_can_stop_it(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def changed() -> None:
        raise OutputError("out.json: file changed while it was being compacted, left as is")

    with pytest.raises(OutputError, match="changed while"):
        atomic_write_chunks(target, [b"new"], check=changed)
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_a_full_device_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match=r"/dev/full: cannot write: No space left on device"):
        atomic_write_chunks(Path("/dev/full"), [b"x" * 10, b"y"])


def _write_under_a_file_size_limit(target: str, queue) -> None:
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
    try:
        atomic_write(Path(target), b"x" * 5000)
        queue.put("written")
    except OutputError as error:
        queue.put(str(error))


def test_a_short_write_is_continued_and_its_failure_reported(tmp_path: Path) -> None:
    """Past RLIMIT_FSIZE the first write is short (1000 of 5000 bytes), the next one fails."""
    import multiprocessing

    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_write_under_a_file_size_limit, args=(str(target), queue))
    process.start()
    process.join(timeout=30)
    assert queue.get(timeout=5) == f"{target}: cannot write: File too large"
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


# --- rewriting in place (destinations.InPlace, files.replacing) ----------------------------------


def rewrite(
    path: Path,
    label: str | None = None,
    meanwhile: Any = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
    **writing: Any,
) -> None:
    """Micro-compact ``path`` in place by the core's one path; ``meanwhile`` runs after the file
    was read and the result decided, before it is written. Raises the input's error."""
    if meanwhile is not None and monkeypatch is not None:
        real_decide = process_module.decide

        def decide_then(*args: Any) -> Any:
            outcome = real_decide(*args)
            meanwhile()
            return outcome

        monkeypatch.setattr(process_module, "decide", decide_then)
    run = RunSettings("micro", Settings(keep_recent=0), **writing)
    report = process(Target(LocalFile(path, label or str(path)), InPlace()), run)
    if report.error is not None:
        raise report.error


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat 1.json"
    path.write_bytes(json.dumps(ORIGINAL, indent=1).encode())
    return path


def test_original_goes_to_a_snapshot_named_after_the_file(chat: Path, tmp_path: Path) -> None:
    original = chat.read_bytes()
    store = SnapshotStore(tmp_path / "snaps")
    rewrite(chat, snapshots=store)
    assert json.loads(chat.read_bytes())[1]["content"][0]["content"] == (
        "[truncated: bash result, 44 chars]"
    )
    [snapshot] = store.snapshots()
    assert snapshot.session_id == session_id_for_file(chat)
    assert snapshot.session_id.startswith("chat-1-")
    assert snapshot.read() == original  # byte for byte, indentation and all
    assert snapshot.source == str(chat)


def test_file_changed_after_it_was_read_is_left_alone_and_the_snapshot_goes(
    chat: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SnapshotStore(tmp_path / "snaps")
    original = chat.read_bytes()

    def an_agent_appends() -> None:
        with open(chat, "ab") as handle:
            handle.write(b" ")

    with pytest.raises(OutputError, match="changed while"):
        rewrite(chat, meanwhile=an_agent_appends, monkeypatch=monkeypatch, snapshots=store)
    assert chat.read_bytes() == original + b" "
    assert store.snapshots() == []


def test_backup_keeps_the_original_bytes_and_mode(chat: Path) -> None:
    os.chmod(chat, 0o640)
    original = chat.read_bytes()
    rewrite(chat, backup_suffix=".bak")
    backup = chat.with_name(chat.name + ".bak")
    assert backup.read_bytes() == original
    assert stat.S_IMODE(backup.stat().st_mode) == 0o640
    assert stat.S_IMODE(chat.stat().st_mode) == 0o640
    assert chat.read_bytes() != original


def test_read_only_file_is_refused_and_untouched(chat: Path, tmp_path: Path) -> None:
    os.chmod(chat, 0o444)
    original = chat.read_bytes()
    store = SnapshotStore(tmp_path / "snaps")
    with pytest.raises(OutputError, match="read-only"):
        rewrite(chat, "c", snapshots=store)
    assert chat.read_bytes() == original
    assert store.snapshots() == []


def test_file_changed_meanwhile_is_left_alone(chat: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def someone_writes() -> None:
        chat.write_bytes(b"[]  ")

    with pytest.raises(OutputError, match="changed while"):
        rewrite(chat, meanwhile=someone_writes, monkeypatch=monkeypatch)
    assert chat.read_bytes() == b"[]  "


def test_pretty_output(chat: Path) -> None:
    rewrite(chat, "c", pretty=True)
    assert chat.read_text().startswith('[\n  {\n    "role": "assistant"')


def test_symbolic_link_stays_a_link(chat: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(chat)
    rewrite(link)
    assert link.is_symlink()
    assert "[truncated:" in chat.read_text()


# --- what a rewrite keeps besides the bytes (issues 21.2, 22.6, 22.9) ----------------------------


def test_a_rewrite_keeps_the_mode_and_extended_attributes(chat: Path, tmp_path: Path) -> None:
    os.chmod(chat, 0o640)
    os.setxattr(chat, "user.origin", b"claude-code")
    rewrite(chat, snapshots=SnapshotStore(tmp_path / "snaps"))
    assert "[truncated:" in chat.read_text()
    assert stat.S_IMODE(chat.stat().st_mode) == 0o640
    assert os.getxattr(chat, "user.origin") == b"claude-code"


def test_another_name_of_the_file_keeps_the_old_version_and_its_mode(
    chat: Path, tmp_path: Path
) -> None:
    os.chmod(chat, 0o644)
    original = chat.read_bytes()
    other = tmp_path / "other name.json"
    os.link(chat, other)
    store = SnapshotStore(tmp_path / "snaps")
    rewrite(chat, snapshots=store)
    assert other.read_bytes() == original and stat.S_IMODE(other.stat().st_mode) == 0o644
    [snapshot] = store.snapshots()
    assert snapshot.path.stat().st_ino != other.stat().st_ino  # a copy: the name stays theirs


def test_a_backup_replaces_a_planted_link_and_never_writes_through_it(
    chat: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    backup = chat.with_name(chat.name + ".bak")
    backup.symlink_to(victim)
    original = chat.read_bytes()
    rewrite(chat, backup_suffix=".bak")
    assert victim.read_bytes() == b"keep me"
    assert not backup.is_symlink() and backup.read_bytes() == original


def test_a_backup_is_the_inode_read_and_the_snapshot_shares_it(chat: Path, tmp_path: Path) -> None:
    inode = chat.stat().st_ino
    rewrite(chat, backup_suffix=".bak", snapshots=SnapshotStore(tmp_path / "snaps"))
    backup = chat.with_name(chat.name + ".bak")
    assert backup.stat().st_ino == inode and backup.stat().st_nlink == 2  # and the snapshot's
    assert stat.S_IMODE(backup.stat().st_mode) == 0o644  # never made 0600 under the user
