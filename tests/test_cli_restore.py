"""Issue 9 through the real executable: restore gives back every byte, writes are complete."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers import CTXPACK, run

from cli.exit_codes import ExitStatus
from compactor_core.snapshots.base import session_id_for_file


def tool_turns(count: int, size: int = 3000) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": "list the files, please"}]
    for n in range(count):
        messages += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "ls"}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "a" * size}],
            },
        ]
    return [*messages, {"role": "user", "content": "and now?"}]


def bom_envelope() -> bytes:
    envelope = {"model": "m", "system": "be brief", "tools": [], "messages": tool_turns(5)}
    return b"\xef\xbb\xbf" + json.dumps(envelope, indent=4, ensure_ascii=False).encode() + b"\n"


def jsonl() -> bytes:
    return b"".join(json.dumps(m, separators=(", ", ": ")).encode() + b"\n" for m in tool_turns(5))


def test_restore_file_gives_back_a_bom_pretty_envelope_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "oh.json"
    original = bom_envelope()
    path.write_bytes(original)
    done = run("auto", "--in-place", "--threshold", "1000", path)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() != original
    preview = run("restore", "--dry-run", path)
    assert preview.returncode == 0 and b"would restore" in preview.stderr
    assert path.read_bytes() != original
    restored = run("restore", path)
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes() == original
    again = run("restore", path)
    assert again.returncode == 0 and b"already as in" in again.stderr


def test_restore_file_gives_back_jsonl_and_keeps_the_compacted_version(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    original = jsonl()
    path.write_bytes(original)
    assert run("micro", "--in-place", path).returncode == 0
    compacted = path.read_bytes()
    assert run("restore", path).returncode == 0
    assert path.read_bytes() == original
    listing = run("restore", "--list", "--json")
    kinds = [snapshot["kind"] for snapshot in json.loads(listing.stdout)]
    assert kinds == ["replaced", "original"]  # the compacted version is not lost either
    assert run("restore", "--at", json.loads(listing.stdout)[0]["time"], path).returncode == 0
    assert path.read_bytes() == compacted


def test_session_id_prints_the_original_and_result_the_result(tmp_path: Path) -> None:
    path = tmp_path / "oh.json"
    path.write_bytes(bom_envelope())
    assert run("full", "--in-place", path).returncode == 0
    session = session_id_for_file(path)
    original = run("restore", "--session-id", session)
    assert json.loads(original.stdout) == tool_turns(5)
    result = run("restore", "--session-id", session, "--result")
    assert json.loads(result.stdout) == json.loads(path.read_bytes()[3:])["messages"]
    missing = run("restore", "--session-id", session, "--nth", "2")
    assert missing.returncode == ExitStatus.NO_INPUT
    assert b"no original snapshot number 2" in missing.stderr
    by_name = run("restore", "--session-id", "oh")  # the file's name alone: not its session
    assert by_name.returncode == ExitStatus.NO_INPUT
    assert f"did you mean {session}?".encode() in by_name.stderr


def test_same_name_in_two_folders_each_gets_its_own_original_back(tmp_path: Path) -> None:
    a, b = tmp_path / "projA" / "session.json", tmp_path / "projB" / "session.json"
    for number, path in enumerate((a, b)):
        path.parent.mkdir()
        path.write_bytes(json.dumps(tool_turns(4 + number), indent=2).encode())
    originals = [a.read_bytes(), b.read_bytes()]
    assert run("micro", "-i", "-r", tmp_path / "projA", tmp_path / "projB").returncode == 0
    assert run("restore", a, b).returncode == 0
    assert [a.read_bytes(), b.read_bytes()] == originals


def test_prune_keeps_the_newest(tmp_path: Path, transcripts: Path) -> None:
    path = tmp_path / "oh.json"
    for turns in (4, 5, 6):
        path.write_bytes(json.dumps(tool_turns(turns)).encode())
        assert run("micro", "-i", path).returncode == 0
    dry = run("restore", "--prune", "--keep", "1", "--dry-run")
    assert len(dry.stdout.splitlines()) == 2 and len(list(transcripts.iterdir())) == 6
    assert run("restore", "--prune", "--keep", "1").returncode == 0
    assert len(list(transcripts.iterdir())) == 2  # one snapshot and its .meta
    assert run("restore", path).returncode == 0
    assert json.loads(path.read_bytes()) == tool_turns(6)
    bad = run("restore", "--prune")
    assert bad.returncode == ExitStatus.USAGE


def test_nothing_to_summarize_writes_no_snapshot_and_no_warning(transcripts: Path) -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    done = run("full", stdin=json.dumps(messages).encode())
    assert (done.returncode, done.stderr) == (0, b"")
    assert not transcripts.exists()


def test_restore_flags_that_do_not_apply_are_usage_errors(tmp_path: Path) -> None:
    for args in (["--json", "x.json"], ["--list", "--result"], ["--keep", "2", "--list"]):
        result = run("restore", *args)
        assert result.returncode == ExitStatus.USAGE, args
        assert result.stderr.count(b"\n") == 1


# --- complete writes -----------------------------------------------------------------------------


def big_file(tmp_path: Path) -> Path:
    path = tmp_path / "big.json"
    path.write_bytes(json.dumps(tool_turns(400, 2000)).encode())  # about 1 MB
    return path


def test_a_pipe_closed_mid_write_exits_141_quietly(tmp_path: Path) -> None:
    command = f"'{CTXPACK}' micro '{big_file(tmp_path)}' | head -c 100 > /dev/null"
    done = subprocess.run(
        ["bash", "-c", command + "; echo ${PIPESTATUS[0]}"], capture_output=True, timeout=60
    )
    assert done.stdout.strip() == b"141"
    assert done.stderr == b""


def test_a_full_disk_is_74_with_one_line(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [str(CTXPACK), "micro", str(big_file(tmp_path))], stdout=full, stderr=subprocess.PIPE
        )
    assert done.returncode == ExitStatus.CANT_WRITE
    assert done.stderr == b"ctxpack: <stdout>: cannot write: No space left on device\n"
    to_file = run("micro", "-o", "/dev/full", big_file(tmp_path))
    assert to_file.returncode == ExitStatus.CANT_WRITE
    assert b"/dev/full: cannot write: No space left on device" in to_file.stderr


def test_a_file_rewritten_twice_says_there_is_an_older_original(tmp_path: Path) -> None:
    """Issue 32.4: micro, then full: restore puts back what full found (micro's result) and says
    how to reach the file as it was before both; --nth 2 does."""
    path = tmp_path / "twice.json"
    original = json.dumps(tool_turns(6)).encode()
    path.write_bytes(original)
    assert run("micro", "--in-place", "--keep-recent", "2", path).returncode == 0
    after_micro = path.read_bytes()
    assert run("full", "--in-place", path).returncode == 0
    restored = run("restore", path)
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes() == after_micro
    assert restored.stderr.decode().splitlines()[-1] == (
        f"ctxpack: {path}: 1 older original kept too (ctxpack rewrote it again since): "
        f"ctxpack restore --nth 2 {path} goes one run further back"
    )
    assert run("restore", "--nth", "2", path).returncode == 0
    assert path.read_bytes() == original
