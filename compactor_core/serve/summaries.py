"""Model-written summaries kept by the prefix they summarize: the same prefix, the same summary.

A proxy is sent the same history again and again, each time with a little more at its end. When
the policy summarizes a prefix it summarized before, asking the model again would cost a call
and, worse, give other words: everything after the summary would miss the prompt cache. So each
summary is kept under the hash of what the model was asked — the provider, both prompts (the
user prompt holds the serialized prefix), the budget — in memory (the newest ``memory``) and on
disk in ``folder`` (the newest ``disk`` files ``summary-HASH.json``, mode 0600 in a 0700 folder:
a summary can quote what a tool printed), so a restarted proxy gives the same summary too. A
summary read from disk goes to the model, so the folder is used as the snapshot store uses its
own (``PrivateDir``: the user's, no link, no one else may write) and a file is read only if it
is the user's own regular file, never through a link, at most ``MAX_FILE`` bytes. The
built-in extractive summarizer needs none of this: it writes the same summary for the same prefix
by itself.

What a deterministic summarizer's summaries make of a history is kept too, in memory: the result
of each full compaction of the cache-aware policy (``KeptCompactions``). A proxy is re-sent the
history with the same cuts in it on every request, and compacting them again (micro compaction,
the prompt, its count, the check of the summary) was most of the policy's time.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ..conversation.formats import Message, dumps
from ..disk.private_dir import PrivateDir
from ..errors import CtxpackError, SummaryCutOff
from ..providers.base import Summarizer, SummaryRequest, check_ready

if TYPE_CHECKING:
    from ..settings import Settings

VERSION = 1  # of the key: a change to what goes into it must not reuse the old summaries
MEMORY = 256  # summaries kept in memory
DISK = 2000  # summary files kept on disk
MAX_FILE = 4 << 20  # bytes of a summary file read at most: a summary is a few kilobytes
_STRIPES = 64  # locks: one request asks the model, others asking the same wait for its summary


@dataclass(frozen=True)
class KeptSummary:
    """A summary kept for the next request that asks for it (not a snapshot's ``Kept``)."""

    summary: str
    cut_off: str | None = None  # why the summary may lack its end (it stopped at max_tokens)


class SummaryStore:
    """Summaries by key, the newest in memory and, if ``folder`` is given, on disk."""

    def __init__(self, folder: Path | None, memory: int = MEMORY, disk: int = DISK) -> None:
        self.folder = folder
        self.memory = memory
        self.disk = disk
        self._recent: OrderedDict[str, KeptSummary] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> KeptSummary | None:
        with self._lock:
            kept = self._recent.get(key)
            if kept is not None:
                self._recent.move_to_end(key)
                return kept
        kept = self._read(key)
        if kept is not None:
            self._remember(key, kept)
        return kept

    def put(self, key: str, kept: KeptSummary) -> None:
        self._remember(key, kept)
        self._write(key, kept)

    def _remember(self, key: str, kept: KeptSummary) -> None:
        with self._lock:
            self._recent[key] = kept
            self._recent.move_to_end(key)
            while len(self._recent) > self.memory:
                self._recent.popitem(last=False)

    def _read(self, key: str) -> KeptSummary | None:
        try:
            with self._folder(create=False) as folder:
                record = orjson.loads(folder.read_own(f"summary-{key}.json", MAX_FILE))
        except (OSError, CtxpackError, ValueError, TypeError):
            return None  # not there, or not one of ours: ask the model
        if not isinstance(record, dict):
            return None
        summary, cut_off = record.get("summary"), record.get("cut_off")
        if not isinstance(summary, str) or not isinstance(cut_off, str | None):
            return None
        return KeptSummary(summary, cut_off)

    def _write(self, key: str, kept: KeptSummary) -> None:
        # A summary that cannot be kept on disk is still given (and kept in memory).
        with contextlib.suppress(OSError, CtxpackError), self._folder(create=True) as folder:
            record = dumps({"summary": kept.summary, "cut_off": kept.cut_off})
            folder.put(f"summary-{key}.json", record)
            self._prune(folder)

    def _folder(self, create: bool) -> contextlib.AbstractContextManager[PrivateDir]:
        if self.folder is None:
            raise FileNotFoundError("no folder")
        return PrivateDir.opened(self.folder, create=create)

    def _prune(self, folder: PrivateDir) -> None:
        names = [name for name in folder.names() if name.startswith("summary-")]
        if len(names) <= self.disk:
            return
        for old in sorted(names, key=folder.modified)[: len(names) - self.disk]:
            folder.unlink(old)


class KeptSummarizer:
    """A summarizer that asks ``provider`` once per prefix and gives the kept summary after.

    ``identity`` names the provider's model and address (never its key): another model's summary
    of the same prefix is another summary.
    """

    def __init__(self, provider: Summarizer, store: SummaryStore, identity: str) -> None:
        self.provider = provider
        self.store = store
        self.identity = identity
        self.name = provider.name
        # what the policy may count on: the same words for the same history, as its provider says
        self.deterministic = bool(getattr(provider, "deterministic", False))
        self.written = 0  # summaries the model wrote
        self.reused = 0  # summaries given again
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        self._count_lock = threading.Lock()
        self._compactions = KeptCompactions(lambda: self._count(asked=False))

    def ready(self) -> None:
        check_ready(self.provider)

    def summarize(self, request: SummaryRequest) -> str:
        key = self.key(request)
        with self._stripes[int(key[:8], 16) % _STRIPES]:
            kept = self.store.get(key)
            asked = kept is None
            if kept is None:
                kept = self._ask(request)
                self.store.put(key, kept)
        self._count(asked)
        if kept.cut_off is not None:
            raise SummaryCutOff(kept.cut_off, kept.summary)
        return kept.summary

    def compactions(self) -> KeptCompactions | None:
        """The full compactions its summaries made, kept for the requests that make them again;
        None when the provider may write other words for the same history (it must be asked)."""
        return self._compactions if self.deterministic else None

    def _count(self, asked: bool) -> None:
        with self._count_lock:
            if asked:
                self.written += 1
            else:
                self.reused += 1

    def key(self, request: SummaryRequest) -> str:
        asked = [VERSION, self.name, self.identity, request.system, request.user]
        asked += [request.max_tokens, request.lang]
        return hashlib.sha256(dumps(asked)).hexdigest()

    def _ask(self, request: SummaryRequest) -> KeptSummary:
        try:
            return KeptSummary(self.provider.summarize(request))
        except SummaryCutOff as error:
            return KeptSummary(error.summary, str(error))


class KeptCompactions:
    """The newest ``memory`` full compactions (``compaction.memo.Memo.compaction``), by what
    they were given: the settings and the print of the messages (``memo.KeptResults.print``);
    and the heads a plan's cuts left of a history (``Memo.head``), by the print of the history,
    the settings and the cuts. The same give the same result again, word for word, with a
    deterministic summarizer; ``given_again`` is told each time one is, as its summary is given
    again."""

    def __init__(self, given_again: Callable[[], None], memory: int = MEMORY) -> None:
        self.given_again = given_again
        self.memory = memory
        self._recent: OrderedDict[Hashable, list[Message]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, messages: bytes, settings: Settings) -> list[Message] | None:
        """The result of the compaction of the messages of this print, if kept."""
        return self._found((settings, messages))

    def put(self, messages: bytes, settings: Settings, result: list[Message]) -> None:
        self._keep((settings, messages), result)

    def head(self, history: bytes, cuts: Hashable) -> list[Message] | None:
        """The head the cuts (and their settings) left of the history of this print, if kept."""
        return self._found((history, cuts))

    def put_head(self, history: bytes, cuts: Hashable, head: list[Message]) -> None:
        self._keep((history, cuts), head)

    def _found(self, key: Hashable) -> list[Message] | None:
        with self._lock:
            result = self._recent.get(key)
            if result is None:
                return None
            self._recent.move_to_end(key)
        self.given_again()
        return result

    def _keep(self, key: Hashable, result: list[Message]) -> None:
        with self._lock:
            self._recent[key] = result
            self._recent.move_to_end(key)
            while len(self._recent) > self.memory:
                self._recent.popitem(last=False)
