"""Issues 21.2, 22.1 and 22.9 with a second local user, made here (root only): a rewrite and a
restore keep a file's owner, group, mode, extended attributes and ACLs; another user's folder,
files and snapshots are never trusted; the real Claude Code, run as that user, still writes its
session after root rewrote it."""

from __future__ import annotations

import grp  # noqa: F401 (the refusal's message needs it, in a child that cannot import it)
import multiprocessing
import os
import pwd
import shutil
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, run

from cli.exit_codes import ExitStatus
from compactor_core.ends.sources import LocalFile
from compactor_core.snapshots.base import Details, session_id_for_file
from compactor_core.snapshots.local_store import SnapshotStore

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="needs root: the tests make a second local user (useradd) and hand files to it",
)

SESSION = CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl"
OLD = time.time() - 3600
ACL_ACCESS = "system.posix_acl_access"
_ACL_VERSION, _USER_OBJ, _USER, _GROUP_OBJ, _MASK, _OTHER = 2, 0x01, 0x02, 0x04, 0x10, 0x20
_ANY = 0xFFFFFFFF


def acl(user: int) -> bytes:
    """A POSIX ACL (the kernel's xattr form): owner rw, ``user`` r, group r, others nothing."""
    entries = [(_USER_OBJ, 6, _ANY), (_USER, 4, user), (_GROUP_OBJ, 4, _ANY), (_MASK, 4, _ANY)]
    entries.append((_OTHER, 0, _ANY))
    return struct.pack("<I", _ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)


class User:
    def __init__(self, name: str) -> None:
        entry = pwd.getpwnam(name)
        self.name, self.uid, self.gid = name, entry.pw_uid, entry.pw_gid

    def owns(self, path: Path) -> None:
        os.chown(path, self.uid, self.gid)

    def call(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` in a child process running as this user; what it returned, or
        the exception it raised (modules it needs must be imported here first: the child
        cannot read root's Python)."""
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_as, args=(self.uid, self.gid, function, args, queue))
        child.start()
        result = queue.get(timeout=60)
        child.join(timeout=60)
        return result


def _as(uid: int, gid: int, function: Callable[..., Any], args: tuple, queue: Any) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    try:
        queue.put(function(*args))
    except Exception as error:  # handed to the test, which asserts on it
        queue.put(error)


@pytest.fixture(scope="session")
def other() -> Iterator[User]:
    """A second local user of its own, with its own group; removed afterwards."""
    name = f"ctxpack-t{os.getpid()}"
    made = subprocess.run(
        ["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/bin/false", name],
        capture_output=True,
    )
    if made.returncode != 0:
        pytest.skip(f"useradd failed: {made.stderr.decode().strip()}")
    try:
        yield User(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture
def nobody() -> User:
    return User("nobody")


@pytest.fixture
def space() -> Iterator[Path]:
    """A scratch folder other users can enter (pytest's own is root's alone, 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="ctxpack-users-", dir="/tmp"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def session(folder: Path, name: str = "s.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    shutil.copyfile(SESSION, path)
    os.utime(path, (OLD, OLD))
    return path


def metadata(path: Path) -> tuple[int, int, int, dict[str, bytes]]:
    status = path.stat()
    xattrs = {name: os.getxattr(path, name) for name in sorted(os.listxattr(path))}
    return status.st_uid, status.st_gid, status.st_mode & 0o7777, xattrs


# --- 21.2 and 22.9: everything but the bytes stays ------------------------------------------------


def test_owner_group_mode_xattrs_and_acl_survive_a_rewrite_and_a_restore(
    space: Path, nobody: User, other: User
) -> None:
    path = session(space / "p")
    nobody.owns(path)
    os.chmod(path, 0o640)
    os.setxattr(path, "user.origin", b"claude-code")
    os.setxattr(path, ACL_ACCESS, acl(other.uid))
    before = metadata(path)
    assert before[:3] == (nobody.uid, nobody.gid, 0o640)
    done = run("micro", "--in-place", path)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() != SESSION.read_bytes()
    assert metadata(path) == before
    restored = run("restore", path)
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes() == SESSION.read_bytes()
    assert metadata(path) == before
    # its owner can still write its own session, and the user the ACL names can read it
    assert nobody.call(_append, str(path)) == "appended"
    assert other.call(_read_head, str(path)) == SESSION.read_bytes()[:10]
    store = SnapshotStore(Path(os.environ["CTXPACK_TRANSCRIPT_DIR"]))
    [original, *_] = store.select(source=path, kind="original")
    assert (original.uid, original.gid, original.mode) == (nobody.uid, nobody.gid, 0o640)


def _append(path: str) -> str:
    with open(path, "ab") as handle:
        handle.write(b'{"type":"user","uuid":"u9","message":{"role":"user","content":"x"}}\n')
    return "appended"


def _read_head(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(10)


def test_another_users_file_is_copied_into_the_store_not_linked(
    tmp_path: Path, nobody: User
) -> None:
    """A link would leave the snapshot theirs: they could write into it, and restore uses
    only the user's own files."""
    path = session(tmp_path / "p")
    nobody.owns(path)
    done = run("micro", "--in-place", path)
    assert done.returncode == 0, done.stderr
    assert b"not hard-linked (it belongs to another user)" in done.stderr
    [snapshot] = SnapshotStore(tmp_path / "transcripts").select(source=path)
    assert snapshot.path.stat().st_uid == 0 and snapshot.path.stat().st_nlink == 1
    assert snapshot.read() == SESSION.read_bytes()


def test_a_second_hard_link_keeps_its_mode_and_its_version(tmp_path: Path) -> None:
    path = session(tmp_path / "p")
    os.chmod(path, 0o640)
    second = tmp_path / "p" / "second-name.jsonl"
    os.link(path, second)
    done = run("micro", "--in-place", path)
    assert done.returncode == 0, done.stderr
    assert b"not hard-linked (it has other hard links)" in done.stderr
    assert oct(second.stat().st_mode & 0o777) == "0o640"  # was 0600: the snapshot's chmod
    assert second.read_bytes() == SESSION.read_bytes()
    assert oct(path.stat().st_mode & 0o777) == "0o640"


def test_a_user_who_cannot_keep_the_owner_leaves_the_file_alone(space: Path, other: User) -> None:
    """A file of root's in a folder of the other user's group, writable by that group: the
    other user could replace it, but not with a file of root's. So it does not."""
    folder = space / "shared"
    path = session(folder)
    os.chown(folder, other.uid, other.gid)
    os.chown(path, 0, other.gid)
    os.chmod(path, 0o664)
    store = space / "their-store"
    store.mkdir(mode=0o700)
    other.owns(store)
    warm_up = session(space / "warm-up")
    _compact(str(warm_up), str(space / "warm-up-store"))  # import what the child needs
    error = other.call(_compact, str(path), str(store))
    assert "cannot keep its owner (root:" in str(error) and "left as is" in str(error)
    assert path.read_bytes() == SESSION.read_bytes() and path.stat().st_uid == 0


def _compact(path: str, store: str) -> Any:
    from compactor_core.ends.destinations import InPlace
    from compactor_core.process import Target, process
    from compactor_core.settings import RunSettings

    run_settings = RunSettings("micro", snapshots=SnapshotStore(Path(store)), min_idle=0)
    report = process(Target(LocalFile(Path(path), path), InPlace()), run_settings)
    return report.error or "done"


# --- 22.1: nothing of another user's is trusted ---------------------------------------------------


def test_a_snapshot_folder_of_another_user_is_refused(tmp_path: Path, other: User) -> None:
    path = session(tmp_path / "p")
    store = tmp_path / "theirs"
    store.mkdir(mode=0o700)
    other.owns(store)
    done = run("micro", "--in-place", "--snapshot-dir", store, path)
    assert done.returncode == ExitStatus.REFUSED
    assert f"it belongs to user {other.name}".encode() in done.stderr
    assert path.read_bytes() == SESSION.read_bytes() and os.listdir(store) == []


def test_a_folder_above_the_store_of_another_user_is_refused(tmp_path: Path, other: User) -> None:
    path = session(tmp_path / "p")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    other.owns(theirs)
    done = run("micro", "--in-place", "--snapshot-dir", theirs / "store", path)
    assert done.returncode == ExitStatus.REFUSED
    assert f"belongs to user {other.name}, who could replace it".encode() in done.stderr
    assert not (theirs / "store").exists()


def test_snapshots_another_user_planted_are_never_restored(tmp_path: Path, other: User) -> None:
    """A world-writable .transcripts of an older version, where the other user planted a newer
    snapshot of the file with a matching .meta: the folder is skipped, the file stays."""
    project = tmp_path / "project"
    path = session(project)
    planted = project / ".transcripts"
    store = SnapshotStore(planted)
    store.save_original(session_id_for_file(path), b'{"evil": true}\n', Details("jsonl"), path)
    for name in [planted, *planted.iterdir()]:
        other.owns(name)
    os.chmod(planted, 0o777)
    done = run("restore", path, cwd=project)
    assert done.returncode == ExitStatus.NO_INPUT
    assert b"snapshot folder not used" in done.stderr
    assert path.read_bytes() == SESSION.read_bytes()


def test_a_snapshot_or_record_not_the_users_own_is_not_used(tmp_path: Path, other: User) -> None:
    path = session(tmp_path / "p")
    assert run("micro", "--in-place", path).returncode == 0
    store = SnapshotStore(tmp_path / "transcripts")
    [snapshot] = store.select(source=path)
    other.owns(snapshot.path)  # the data is not the user's: refused when read
    refused = run("restore", path)
    assert refused.returncode == ExitStatus.NO_INPUT
    assert b"not a snapshot of yours" in refused.stderr
    os.chown(snapshot.path, 0, 0)
    other.owns(snapshot.path.with_name(snapshot.path.name + ".meta"))  # the record is not
    unknown = run("restore", path)
    assert unknown.returncode == ExitStatus.NO_INPUT
    assert b"never rewrote this file" in unknown.stderr


def test_the_other_user_cannot_read_a_kept_private_session(space: Path, other: User) -> None:
    """Issue 22.1 (b): the link of a 0644 session from a 0700 folder is in a 0700 store."""
    private = space / "private"
    path = session(private)
    os.chmod(private, 0o700)
    os.chmod(path, 0o644)
    assert run("micro", "--in-place", path).returncode == 0
    [snapshot] = SnapshotStore(Path(os.environ["CTXPACK_TRANSCRIPT_DIR"])).select(source=path)
    assert isinstance(other.call(_read_head, str(snapshot.path)), PermissionError)


# --- the real Claude Code, as the other user, after root rewrote its session ----------------------


def test_the_real_claude_code_of_another_user_resumes_and_writes_after_root_rewrote(
    space: Path, other: User
) -> None:
    from agents.claude import ClaudeHome, run_claude
    from agents.script import Script
    from agents.server import ModelServer

    root = space / "claude"
    project = root / "project"
    project.mkdir(parents=True)
    home = ClaudeHome(root)
    session_id = "516b7270-b0ab-4d34-9e4d-1f05c9ccd20a"
    path = home.session_file(project, session_id)
    path.parent.mkdir(parents=True)
    shutil.copyfile(SESSION, path)
    home.home.mkdir(parents=True)
    for folder, _, names in os.walk(root):
        other.owns(Path(folder))
        for name in names:
            other.owns(Path(folder) / name)
    os.chmod(path, 0o600)
    done = run("micro", "--in-place", "--min-idle", "0", path)  # root, as in issue 21.2
    assert done.returncode == 0, done.stderr
    assert metadata(path)[:3] == (other.uid, other.gid, 0o600)
    lines = path.read_bytes().count(b"\n")
    with ModelServer(Script()) as server:
        resumed = run_claude(
            home,
            project,
            "Resume: and now?",
            server,
            resume=session_id,
            user=(other.uid, other.gid),
        )
    resumed.check()
    assert path.read_bytes().count(b"\n") > lines  # it wrote its turn into its own session
    assert metadata(path)[:3] == (other.uid, other.gid, 0o600)
