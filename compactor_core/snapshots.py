"""Transcript snapshots: the conversation saved as JSONL before anything is thrown away (SPEC §5).

A snapshot is ``{session_id}_{YYYY-MM-DDTHH-MM-SS-ffffff}.jsonl`` in the transcript directory, one
message per line. Files are never overwritten: each is written to a temporary file and hard-linked
to its final name, which fails if the name exists, so two processes in the same microsecond both
succeed (the second takes the next microsecond). Snapshots may hold secrets from tool output, so
files are 0600 and a new directory 0700.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from . import defaults
from .atomic import _remove, fsync_directory, write_temp
from .errors import ConfigError, InputUnreadable, OutputError
from .formats import Message, dumps, parse_jsonl

DEFAULT_DIRECTORY = defaults.TRANSCRIPT_DIR
DEFAULT_SESSION = defaults.SESSION_ID
_SESSION_ID = re.compile(r"[A-Za-z0-9._:@+-]{1,128}")
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._:@+-]")
_FILE_NAME = re.compile(r"(?P<session>.+)_(?P<stamp>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{6})\.jsonl")
_STAMP = "%Y-%m-%dT%H-%M-%S-%f"


def check_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is allowed; refuse it (never rewrite it) otherwise."""
    if _SESSION_ID.fullmatch(session_id) and not session_id.startswith("."):
        return session_id
    raise ConfigError(
        f"invalid session id {session_id!r}: use 1-128 of A-Z a-z 0-9 . _ : @ + -, "
        "not starting with '.'"
    )


def session_id_for_file(path: Path) -> str:
    """The session id an in-place run uses for a file: its name without the extension, cleaned."""
    cleaned = _NOT_ALLOWED.sub("-", Path(path).stem)[:128]
    if cleaned.startswith("."):
        cleaned = "-" + cleaned[1:]
    return cleaned or DEFAULT_SESSION


@dataclass(frozen=True)
class SnapshotInfo:
    session_id: str
    stamp: str
    path: Path


@dataclass(frozen=True)
class SnapshotStore:
    """Snapshots in one directory; ``clock`` gives the local time for new names."""

    directory: Path
    clock: Callable[[], datetime] = datetime.now

    def save(self, session_id: str, messages: list[Message]) -> Path:
        check_session_id(session_id)
        data = b"".join(dumps(message) + b"\n" for message in messages)
        try:
            self._make_directory()
            temp = write_temp(self.directory, session_id, data, 0o600)
            try:
                return self._link_under_a_free_name(temp, session_id)
            finally:
                _remove(temp)
        except OSError as error:
            raise OutputError(
                f"{self.directory}: cannot write snapshot: {error.strerror or error}"
            ) from None

    def _make_directory(self) -> None:
        if not self.directory.is_dir():
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _link_under_a_free_name(self, temp: Path, session_id: str) -> Path:
        moment = self.clock()
        while True:
            target = self.directory / f"{session_id}_{moment.strftime(_STAMP)}.jsonl"
            try:
                os.link(temp, target)
            except FileExistsError:
                moment += timedelta(microseconds=1)
                continue
            fsync_directory(self.directory)
            return target

    def snapshots(self) -> list[SnapshotInfo]:
        """Every snapshot in the directory, newest first."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        except OSError as error:
            raise InputUnreadable(f"{self.directory}: {error.strerror}") from None
        found = []
        for name in names:
            match = _FILE_NAME.fullmatch(name)
            if match:
                found.append(SnapshotInfo(match["session"], match["stamp"], self.directory / name))
        return sorted(found, key=lambda info: (info.stamp, info.path.name), reverse=True)

    def newest(self, session_id: str) -> SnapshotInfo:
        check_session_id(session_id)
        for info in self.snapshots():
            if info.session_id == session_id:
                return info
        raise InputUnreadable(f"{self.directory}: no snapshot of session {session_id!r}")

    def load(self, info: SnapshotInfo) -> list[Message]:
        try:
            data = info.path.read_bytes()
        except OSError as error:
            raise InputUnreadable(f"{info.path}: {error.strerror}") from None
        return parse_jsonl(data, str(info.path)).messages
