"""The bills of many session files: each read once, or taken from the ledger when unchanged.

A file that cannot be read, or holds no session ctxpack knows, is one ``Unreadable`` line; the
report goes on. A file may hold several sessions (an OpenCode database): each is a bill.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..ends.documents import open_document
from ..ends.session_documents import SessionDocument
from ..ends.sources import local_file
from ..errors import CtxpackError
from ..session_files.base import AgentFormat
from ..session_files.records import is_regular
from ..session_files.registry import each_session
from ..settings import Settings
from .bill import SessionBill, bill_of, with_ctxpack
from .ledger import Ledger


@dataclass(frozen=True)
class SessionPlace:
    """Where a session is, and what its agent's folder says of it."""

    path: Path
    agent_format: AgentFormat | None  # None: detect from the content
    session_id: str | None = None
    project: str | None = None


@dataclass(frozen=True)
class Unreadable:
    path: str
    reason: str


def places_in_homes(homes: Iterable[tuple[AgentFormat, Path]]) -> Iterator[SessionPlace]:
    """Every session the agents keep in their home folders (as ``ctxpack sessions`` lists); a
    database of many sessions once (``bills_of`` reads each of its sessions)."""
    databases: set[Path] = set()
    for agent_format, home in homes:
        for found in agent_format.session_files(home):
            if not is_regular(found.held_in or found.path):
                continue  # a FIFO, a device, a link to one: never a session, never read
            if found.held_in is None:
                yield SessionPlace(found.path, agent_format, found.session_id, found.project)
            elif found.held_in not in databases:
                databases.add(found.held_in)
                yield SessionPlace(found.held_in, agent_format)


def collect(
    places: Iterable[SessionPlace],
    ledger: Ledger,
    settings: Settings,
    rewrites: Callable[[Path], list[float]],
    counterfactual: bool = True,
    progress: Callable[[int], None] = lambda _size: None,
) -> Iterator[SessionBill | Unreadable]:
    """Each place's bills (from the ledger where the file is unchanged), or why it could not
    be read; ``progress`` hears the bytes of each file done."""
    for place in places:
        try:
            status = os.stat(place.path)
        except OSError as error:
            yield Unreadable(str(place.path), error.strerror or str(error))
            continue
        key = (str(place.path), status.st_size, status.st_mtime_ns)
        bills = ledger.get(*key)
        if bills is None or (counterfactual and any(b.with_ctxpack is None for b in bills)):
            try:
                bills = list(bills_of(place, rewrites(place.path), settings, counterfactual))
            except (OSError, CtxpackError) as error:
                yield Unreadable(str(place.path), str(error))
                progress(status.st_size)
                continue
            ledger.put(*key, bills)
        yield from bills
        progress(status.st_size)


def bills_of(
    place: SessionPlace, rewrites: list[float], settings: Settings, counterfactual: bool
) -> Iterator[SessionBill]:
    name = str(place.path)
    format_name = place.agent_format.name if place.agent_format else "auto"
    for each in each_session([name]):
        with open_document(local_file(each), format_name) as document:
            if not isinstance(document, SessionDocument):
                continue  # a conversation of messages records no bill
            requests = bill_of(document, rewrites)
            if requests is None:
                continue
            share = with_ctxpack(document, settings) if counterfactual else None
            yield SessionBill(
                document.format.agent,
                place.session_id or _session_of(each),
                place.project or place.path.parent.name,
                each,
                requests,
                share,
            )


def _session_of(name: str) -> str:
    return name.rpartition("#")[2] if "#" in name else Path(name).stem
