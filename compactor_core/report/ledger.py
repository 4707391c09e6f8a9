"""Each session file's bill, kept between reports: a second report reads only what changed.

The bills of a file are kept in an SQLite table in the user's private state folder (the
snapshot store's, with its rules: the user's own, no link, no one else may write), keyed by the
file's path, size and change time in nanoseconds, and by this module's ``VERSION``, so that a
changed file, or a newer ctxpack that reads files differently, is read again. A file that grew
is read again whole: the causes of its new requests depend on the requests before them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ..disk.private_dir import PrivateDir
from .bill import SessionBill

VERSION = 1
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bills (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER,"
    " version INTEGER, bills TEXT)"
)


class Ledger:
    """The kept bills, in ``folder`` (None: keep nothing)."""

    def __init__(self, folder: Path | None) -> None:
        self._connection: sqlite3.Connection | None = None
        if folder is not None:
            private = PrivateDir.open(folder, create=True, label=str(folder))
            if private is not None:
                private.close()  # checked: the user's own folder, safe to keep a file in
                self._connection = sqlite3.connect(folder / "bills.sqlite", timeout=5)
                self._connection.execute(_SCHEMA)

    def get(self, path: str, size: int, mtime: int) -> list[SessionBill] | None:
        if self._connection is None:
            return None
        row = self._connection.execute(
            "SELECT bills FROM bills WHERE path = ? AND size = ? AND mtime = ? AND version = ?",
            (path, size, mtime, VERSION),
        ).fetchone()
        return None if row is None else [SessionBill.from_json(bill) for bill in json.loads(row[0])]

    def put(self, path: str, size: int, mtime: int, bills: list[SessionBill]) -> None:
        if self._connection is None:
            return
        text = json.dumps([bill.as_json() for bill in bills], separators=(",", ":"))
        with self._connection:
            self._connection.execute(
                "INSERT OR REPLACE INTO bills VALUES (?, ?, ?, ?, ?)",
                (path, size, mtime, VERSION, text),
            )

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
