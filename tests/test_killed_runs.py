"""Issue 22.8 with real processes: what a killed ``restore`` (or a killed rewrite) leaves beside a
file, and in the snapshot store, is removed by the next command that writes there. The kill comes
when the kernel says the temporary file was created (inotify), so it lands mid-write."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from helpers import CTXPACK, run
from inotify import IN_CREATE, Watch, available

from compactor_core.disk.atomic import TEMP_SUFFIX

pytestmark = pytest.mark.skipif(not available(), reason="needs Linux inotify")


def big_conversation(path: Path, turns: int = 1500) -> bytes:
    """About 8 MB of JSONL: a restore takes long enough to be killed while it writes."""
    lines = [json.dumps({"role": "user", "content": "build it"})]
    for n in range(turns):
        call = {"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"n": n}}
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"{n} " * 1000}
        lines.append(json.dumps({"role": "assistant", "content": [call]}))
        lines.append(json.dumps({"role": "user", "content": [result]}))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return data


def leftovers(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(TEMP_SUFFIX))


def killed_when_a_temporary_file_appears(folder: Path, *args: object) -> None:
    """Start ``ctxpack ARGS``; SIGKILL it as soon as it creates a temporary file in ``folder``."""
    with Watch(folder, IN_CREATE) as watch:
        process = subprocess.Popen([str(CTXPACK), *map(str, args)], stderr=subprocess.DEVNULL)
        try:
            for _, name in watch.events(timeout=30):
                if name.endswith(TEMP_SUFFIX):
                    process.send_signal(signal.SIGKILL)
                    break
        finally:
            process.kill()
            process.wait()  # reaped: its temporary file is a dead process's now


def test_killed_restores_leave_nothing_behind_the_next_one(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    original = big_conversation(path)
    assert run("micro", "--in-place", path, timeout=120).returncode == 0
    seen: list[str] = []
    for _ in range(3):
        killed_when_a_temporary_file_appears(tmp_path, "restore", path)
        [left] = leftovers(tmp_path)  # the kill landed mid-write; the one before is gone
        assert left not in seen
        seen.append(left)
    assert path.read_bytes() != original  # and nothing was replaced
    done = run("restore", path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == original
    assert leftovers(tmp_path) == []


def test_a_killed_rewrite_is_cleaned_up_by_a_restore(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    original = big_conversation(path)
    killed_when_a_temporary_file_appears(tmp_path, "micro", "--in-place", path)
    assert len(leftovers(tmp_path)) == 1 and path.read_bytes() == original
    assert run("micro", "--in-place", path, timeout=120).returncode == 0
    assert leftovers(tmp_path) == []
    killed_when_a_temporary_file_appears(tmp_path, "restore", path)
    assert len(leftovers(tmp_path)) == 1
    assert run("restore", "--dry-run", path).returncode == 0  # a dry run writes nothing...
    assert len(leftovers(tmp_path)) == 1  # ...and removes nothing
    assert run("restore", path, timeout=120).returncode == 0
    assert leftovers(tmp_path) == [] and path.read_bytes() == original


def test_a_copy_killed_in_the_store_is_cleaned_up_by_the_next_write_there(
    tmp_path: Path, transcripts: Path
) -> None:
    """On a tmpfs the original is copied into the store: a kill mid-copy leaves it there."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm (a tmpfs) here")
    folder = Path(os.path.realpath(shm)) / f"ctxpack-kill-{os.getpid()}-{tmp_path.name}"
    folder.mkdir()
    try:
        path = folder / "big.jsonl"
        original = big_conversation(path)
        transcripts.mkdir(mode=0o700)
        killed_when_a_temporary_file_appears(transcripts, "micro", "--in-place", path)
        assert len(leftovers(transcripts)) == 1 and path.read_bytes() == original
        done = run("micro", "--in-place", path, timeout=120)
        assert done.returncode == 0, done.stderr
        assert leftovers(transcripts) == [] and leftovers(folder) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
