"""The store of originals: what a marker with a recall handle replaced, by its content's hash.

``ctxpack micro|full|auto --recall`` and ``serve`` keep here each original a marker with a
handle replaced; ``ctxpack mcp`` gives it back (``recall``). A file ``original-SHA256`` holds
one original's text, so the same content is kept once however many requests carry its marker.
Originals are what tools printed, secrets included, so the folder is used as the snapshot store
uses its own (``PrivateDir``: the user's alone, 0700, files 0600, never through a link), and it
never holds anything but tool results (no key, no header). It is bounded: past ``limit`` bytes
the originals used least recently go first (a recall touches the one it reads).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..compaction.handles import HANDLE, content_text, digest
from ..disk.private_dir import PrivateDir
from ..errors import CtxpackError
from ..snapshots.locations import user_store

PREFIX = "original-"
LIMIT = 256 << 20  # bytes kept by default: thousands of long outputs
MAX_ORIGINAL = 64 << 20  # bytes of one original read back at most


@dataclass(frozen=True)
class Found:
    """What a handle names in the store: its original, or why there is none."""

    handle: str
    text: str | None = None
    matches: int = 0  # originals whose hash begins with the handle

    @property
    def answer(self) -> str:
        """What the model is told: the original; a list of content blocks as the text they
        hold, when they are all text (the JSON of anything else, as it was kept)."""
        if self.text is not None:
            return readable(self.text)
        if self.matches > 1:
            return f"recall {self.handle}: {self.matches} originals begin so; give more digits"
        if not HANDLE.match(self.handle):
            return f"recall {self.handle}: not a handle (6 to 64 hex digits, as a marker shows)"
        return (
            f"recall {self.handle}: the store no longer holds this original "
            "(it was dropped to keep the store within its size, or kept on another machine)"
        )


def readable(text: str) -> str:
    """A kept original as the model should read it: the text of a list of text blocks."""
    if not text.startswith("["):
        return text
    try:
        blocks = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    if isinstance(blocks, list) and blocks and all(_is_text(block) for block in blocks):
        return "".join(block["text"] for block in blocks)
    return text


def _is_text(block: object) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


class OriginalsStore:
    """Originals by their hash in ``folder``, at most ``limit`` bytes of them."""

    def __init__(self, folder: Path, limit: int = LIMIT) -> None:
        self.folder = folder
        self.limit = limit
        self._lock = threading.Lock()
        self._known: set[str] = set()  # digests written by this process: not written again

    def __reduce__(self) -> tuple[type, tuple[Path, int]]:
        """A store crosses to a batch worker as its folder and limit (its lock stays here)."""
        return OriginalsStore, (self.folder, self.limit)

    def keep(self, originals: Iterable[object]) -> int:
        """Keep each original (a tool result's content) not kept yet; how many were new."""
        texts = {digest(content): content_text(content) for content in originals}
        fresh = {name: text for name, text in texts.items() if name not in self._known}
        if not fresh:
            return 0
        with self._lock, PrivateDir.opened(self.folder, create=True) as folder:
            present = set(folder.names())
            written = 0
            for name, text in fresh.items():
                if PREFIX + name not in present:
                    folder.put(PREFIX + name, text.encode("utf-8", "surrogatepass"))
                    written += 1
                self._known.add(name)
            if written:
                self._prune(folder)
            return written

    def find(self, handle: str) -> Found:
        """The original a handle (or a longer prefix of the hash) names."""
        handle = handle.strip().lower()
        if not HANDLE.match(handle):
            return Found(handle)
        try:
            with PrivateDir.opened(self.folder, create=False) as folder:
                names = [name for name in folder.names() if name.startswith(PREFIX + handle)]
                if len(names) != 1:
                    return Found(handle, matches=len(names))
                data = folder.read_own(names[0], MAX_ORIGINAL)
        except (OSError, ValueError, CtxpackError):
            return Found(handle)
        return Found(handle, data.decode("utf-8", "surrogatepass"), 1)

    def stats(self) -> dict[str, int]:
        """How many originals the store holds, and their bytes."""
        try:
            with PrivateDir.opened(self.folder, create=False) as folder:
                sizes = [folder.stat(name).st_size for name in _originals(folder)]
        except (OSError, CtxpackError):
            sizes = []
        return {"originals": len(sizes), "bytes": sum(sizes), "limit": self.limit}

    def _prune(self, folder: PrivateDir) -> None:
        """The least recently used originals go until the rest fit within ``limit``."""
        names = sorted(_originals(folder), key=folder.modified, reverse=True)
        total = 0
        for name in names:
            total += folder.stat(name).st_size
            if total > self.limit:
                folder.unlink(name)
                self._known.discard(name.removeprefix(PREFIX))


def user_originals(state_home: str | None = None, home: str | None = None) -> OriginalsStore:
    """The user's store of originals: ``originals`` in the state folder of the snapshots
    (``snapshots.locations.user_store``: ``XDG_STATE_HOME`` and ``HOME`` as given)."""
    return OriginalsStore(user_store(state_home, home) / "originals")


def _originals(folder: PrivateDir) -> list[str]:
    return [name for name in folder.names() if name.startswith(PREFIX)]
