"""Issues 21 and 22 through the real executable: one snapshot store per user that ``restore``
finds from any folder, a store nobody else can touch, restores that lose nothing, backups that
never follow a link, and a rewrite that knows its own change from its agent's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import CORPUS, run, wait_until_open

from cli.exit_codes import ExitStatus
from compactor_core.snapshots.base import Details, session_id_for_file
from compactor_core.snapshots.local_store import SnapshotStore

SESSION = CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl"
OLD = time.time() - 3600
LATE_LINE = b'{"type":"user","uuid":"late-1","message":{"role":"user","content":"one more"}}\n'


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No snapshot folder given: the user's state folder is the store (HOME is the test's)."""
    monkeypatch.delenv("CTXPACK_TRANSCRIPT_DIR")
    return tmp_path / "home" / ".local" / "state" / "ctxpack"


def session(folder: Path, name: str = "s.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    shutil.copyfile(SESSION, path)
    os.utime(path, (OLD, OLD))
    return path


def an_agent_appends(path: Path, line: bytes = LATE_LINE) -> None:
    with path.open("ab") as handle:
        handle.write(line)


# --- 21.1: one store per user, found from anywhere ----------------------------------------------


def test_snapshots_go_to_the_state_folder_and_restore_finds_them_from_any_folder(
    plain: Path, tmp_path: Path
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = session(project)
    done = run("micro", "--in-place", path.name, cwd=project)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(project)) == ["s.jsonl"]  # nothing beside it, no .transcripts
    assert len(os.listdir(plain)) == 2  # the original and its .meta
    assert oct(plain.stat().st_mode & 0o777) == "0o700"
    restored = run("restore", path, cwd=elsewhere)
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes() == SESSION.read_bytes()
    assert str(plain).encode() in restored.stderr  # it names the snapshot it used


def test_git_add_in_the_project_stages_nothing_of_ctxpack(plain: Path, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    project = tmp_path / "repo"
    path = session(project)
    git = ["git", "-C", str(project)]
    subprocess.run([*git, "init", "-q"], check=True)
    assert run("micro", "--in-place", path.name, cwd=project).returncode == 0
    subprocess.run([*git, "add", "-A"], check=True)
    staged = subprocess.run([*git, "diff", "--cached", "--name-only"], capture_output=True)
    assert staged.stdout.split() == [b"s.jsonl"]


def test_xdg_state_home_moves_the_store(plain: Path, tmp_path: Path) -> None:
    path = session(tmp_path / "p")
    state = tmp_path / "state"
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    assert run("micro", "--in-place", path, env=env).returncode == 0
    assert len(os.listdir(state / "ctxpack")) == 2 and not plain.exists()


def test_compat_bareagent_keeps_the_seeds_transcripts_folder(plain: Path, tmp_path: Path) -> None:
    work = tmp_path / "w"
    path = session(work)
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x" * 30}]
    chat = work / "chat.json"
    chat.write_text(json.dumps(messages * 3))
    done = run("full", "--compat", "bareagent", chat.name, cwd=work)
    assert done.returncode == 0, done.stderr
    assert (work / ".transcripts").is_dir() and not plain.exists()
    assert path.exists()


def test_the_appended_turn_survives_runs_from_two_folders(plain: Path, tmp_path: Path) -> None:
    """Issue 21.1's scenario: micro in A, the agent appends, micro in B, restore in A."""
    a, b = tmp_path / "a", tmp_path / "b"
    b.mkdir()
    path = session(a)
    assert run("micro", "--in-place", path, cwd=a).returncode == 0
    an_agent_appends(path)
    os.utime(path, (OLD, OLD))
    assert run("micro", "--in-place", path, cwd=b).returncode == 0
    restored = run("restore", path, cwd=a)
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes().endswith(LATE_LINE)  # the second run's original: with the turn


def test_a_restore_that_would_drop_appended_turns_refuses_unless_forced(
    plain: Path, tmp_path: Path
) -> None:
    path = session(tmp_path / "p")
    assert run("micro", "--in-place", path).returncode == 0
    compacted = path.read_bytes()
    an_agent_appends(path, LATE_LINE + LATE_LINE.replace(b"late-1", b"late-2"))
    os.utime(path, (OLD, OLD))
    refused = run("restore", path)
    assert refused.returncode == ExitStatus.REFUSED
    assert refused.stderr.count(b"\n") == 1
    assert b"would set aside 2 lines added after ctxpack's run of" in refused.stderr
    assert b"restore --force" in refused.stderr
    assert path.read_bytes() == compacted + LATE_LINE + LATE_LINE.replace(b"late-1", b"late-2")
    forced = run("restore", "--force", path)
    assert forced.returncode == 0, forced.stderr
    assert path.read_bytes() == SESSION.read_bytes()
    said = forced.stderr.decode()
    assert "set aside 2 lines added after ctxpack's run of" in said
    kept = said.rsplit("kept in ", 1)[1].strip()
    assert Path(kept).read_bytes().endswith(LATE_LINE.replace(b"late-1", b"late-2"))
    assert ".replaced." in kept


def test_restore_of_a_file_never_rewritten_says_so(plain: Path, tmp_path: Path) -> None:
    path = session(tmp_path / "p")
    done = run("restore", path)
    assert done.returncode == ExitStatus.NO_INPUT
    assert b"ctxpack never rewrote this file: no snapshot of it in" in done.stderr
    assert b"snapshot number" not in done.stderr


def test_old_transcripts_folders_are_still_found(plain: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    path = session(project)
    legacy = project / ".transcripts"  # as an older version left it: beside the file
    assert run("micro", "--in-place", "--snapshot-dir", legacy, path).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".transcripts").mkdir(parents=True)
    listing = run("restore", "--list", cwd=project)
    assert listing.returncode == 0 and b"\toriginal\t" in listing.stdout
    restored = run("restore", path, cwd=elsewhere)  # the folder beside the file is looked in
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes() == SESSION.read_bytes()
    assert not plain.exists() or "original" not in " ".join(os.listdir(plain))


def test_a_copy_instead_of_a_link_is_said_once(plain: Path, tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm (a tmpfs) here")
    folder = Path(os.path.realpath(shm)) / f"ctxpack-test-{os.getpid()}-{tmp_path.name}"
    try:
        paths = [session(folder, f"s{n}.jsonl") for n in range(3)]
        done = run("micro", "--in-place", *paths)
        assert done.returncode == 0, done.stderr
        notes = [line for line in done.stderr.splitlines() if b"copied into" in line]
        assert len(notes) == 1
        assert (
            b"not hard-linked (it is on another file system than the snapshot folder)" in notes[0]
        )
        assert run("restore", *paths).returncode == 0
        assert all(path.read_bytes() == SESSION.read_bytes() for path in paths)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- 21.8: ctxpack's own change is not its agent's ------------------------------------------------


def test_a_file_ctxpack_just_rewrote_is_not_in_use(tmp_path: Path) -> None:
    path = session(tmp_path / "p")
    assert run("micro", "--in-place", path).returncode == 0
    again = run("full", "--in-place", path)
    assert again.returncode == 0, again.stderr
    an_agent_appends(path)
    busy = run("micro", "--in-place", path)
    assert busy.returncode == ExitStatus.TEMPORARY and b"less than --min-idle" in busy.stderr


# --- 22.4 and 21.10: restore follows the rules of a rewrite ---------------------------------------


def test_restore_of_a_session_its_agent_just_changed_waits(tmp_path: Path) -> None:
    path = session(tmp_path / "p")
    assert run("micro", "--in-place", path).returncode == 0
    assert run("restore", path).returncode == 0  # ctxpack's own change: at once
    assert run("micro", "--in-place", "--min-idle", "0", path).returncode == 0
    an_agent_appends(path)
    busy = run("restore", path)
    assert busy.returncode == ExitStatus.TEMPORARY
    assert b"in use by its agent" in busy.stderr and busy.stderr.count(b"\n") == 1


def test_restore_of_a_session_held_open_for_writing_refuses_even_forced(tmp_path: Path) -> None:
    path = session(tmp_path / "p")
    assert run("micro", "--in-place", path).returncode == 0
    before = path.read_bytes()
    writer = subprocess.Popen(
        [sys.executable, "-c", f"f = open({str(path)!r}, 'ab'); import time; time.sleep(30)"]
    )
    try:
        wait_until_open(writer.pid, path)
        for flags in ([], ["--force"]):
            refused = run("restore", *flags, path)
            assert refused.returncode == ExitStatus.TEMPORARY, flags
            said = refused.stderr.decode()
            assert (
                f"open for writing by process {writer.pid}: not restored, not even with --force"
                in said
            )
            assert "quit the agent or wait until it closes the file" in said
        forced = run("micro", "--in-place", "--force", path)
        assert forced.returncode == ExitStatus.TEMPORARY
        assert b"not compacted, not even with --force" in forced.stderr
    finally:
        writer.kill()
        writer.wait()
    assert path.read_bytes() == before


# --- 22.1: a store nobody else can change ---------------------------------------------------------


@pytest.mark.parametrize(
    "how", ["world-writable", "group-writable", "a symbolic link", "under 0777"]
)
def test_an_unsafe_snapshot_folder_is_refused_before_anything_is_written(
    tmp_path: Path, how: str
) -> None:
    path = session(tmp_path / "p")
    store = tmp_path / "store"
    if how == "a symbolic link":
        (tmp_path / "real").mkdir(mode=0o700)
        store.symlink_to(tmp_path / "real")
    elif how == "under 0777":
        (tmp_path / "open").mkdir()
        os.chmod(tmp_path / "open", 0o777)
        store = tmp_path / "open" / "store"
    else:
        store.mkdir()
        os.chmod(store, 0o777 if how == "world-writable" else 0o770)
    done = run("micro", "--in-place", "--snapshot-dir", store, path)
    assert done.returncode == ExitStatus.REFUSED, done.stderr
    assert done.stderr.count(b"\n") == 1 and b"snapshot folder not used" in done.stderr
    assert path.read_bytes() == SESSION.read_bytes()
    real = tmp_path / "real" if how == "a symbolic link" else store
    assert not real.exists() or os.listdir(real) == []


def test_a_folder_under_a_sticky_world_writable_one_is_fine(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # as /tmp is
    path = session(tmp_path / "p")
    done = run("micro", "--in-place", "--snapshot-dir", shared / "mine", path)
    assert done.returncode == 0, done.stderr
    assert oct((shared / "mine").stat().st_mode & 0o777) == "0o700"


def test_restore_skips_an_unsafe_old_transcripts_folder_and_says_so(tmp_path: Path) -> None:
    project = tmp_path / "project"
    path = session(project)
    planted = project / ".transcripts"
    store = SnapshotStore(planted)
    store.save_original(session_id_for_file(path), b"[]\n", Details("array"), path)
    os.chmod(planted, 0o777)
    done = run("restore", path, cwd=project)
    assert done.returncode == ExitStatus.NO_INPUT
    assert b".transcripts: snapshot folder not used: others can write to it" in done.stderr
    assert b"never rewrote this file" in done.stderr
    assert path.read_bytes() == SESSION.read_bytes()


# --- 22.6: --backup never follows a link, and works on session files ------------------------------


def test_backup_replaces_a_planted_link_and_never_writes_through_it(tmp_path: Path) -> None:
    messages = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x" * 99}],
        },
    ]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(messages))
    original = chat.read_bytes()
    victim = tmp_path / "victim"
    victim.write_bytes(b"only root may write this\n")
    (tmp_path / "chat.json.bak").symlink_to(victim)
    done = run("micro", "--in-place", "--keep-recent", "0", "--backup", ".bak", chat)
    assert done.returncode == 0, done.stderr
    assert victim.read_bytes() == b"only root may write this\n"
    backup = tmp_path / "chat.json.bak"
    assert not backup.is_symlink() and backup.read_bytes() == original
    assert chat.read_bytes() != original


def test_backup_works_on_an_agents_session_file(tmp_path: Path) -> None:
    path = session(tmp_path / "p")
    os.chmod(path, 0o640)
    done = run("micro", "--in-place", "--backup", ".orig", path)
    assert done.returncode == 0, done.stderr
    backup = path.with_name("s.jsonl.orig")
    assert backup.read_bytes() == SESSION.read_bytes()
    assert oct(backup.stat().st_mode & 0o777) == "0o640"  # the snapshot's chmod never hit it
    assert path.read_bytes() != SESSION.read_bytes()
    assert oct(path.stat().st_mode & 0o777) == "0o640"
