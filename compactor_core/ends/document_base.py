"""What every kind of document has (``documents.py``, ``session_documents.py``): where it was
read from (its ``origin``), and what it does unless its kind says otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from ..compaction.estimate import Counter
    from ..compaction.outcome import Outcome
    from ..compaction.pipeline import SnapshotKeeper, Subject
    from ..settings import RunSettings
    from .origins import Origin
    from .written import Written


class BaseDocument:
    """What every kind of document has: where it was read from, and what it does by default."""

    guarded = False  # an agent may be writing it: never rewritten while in use (SPEC §8.4)
    in_memory = False  # held whole in memory: its result is compared and hashed whole

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.label = origin.label

    def busy(self, rules: RunSettings) -> str | None:
        """Why its agent is using it now, by the agent's own signs (beyond the file's)."""
        return None

    def check_in_place(self, run: RunSettings) -> None:
        """Refuse to be written over where it may not be (``InPlace.prepare``)."""
        self.origin.check_in_place(self, run)

    def write_in_place(
        self, subject: Subject, outcome: Outcome, run: RunSettings, sync: bool, settings_key: str
    ) -> Written:
        """Write the result over the input, where it was read from (``InPlace.write``)."""
        return self.origin.write_back(self, subject, outcome, run, sync, settings_key)

    def snapshot_keeper(
        self, session_id: str, run: RunSettings, keeps_input: bool
    ) -> SnapshotKeeper | None:
        """Who keeps the input and the result in the run's snapshot store when a summary
        replaces the history (SPEC §3.3); None by default: a session file's summary is appended
        to it, so its result is the file itself, and its original is kept when the file is
        replaced."""
        return None

    def after_replace(self, path: Path) -> str | None:
        """What the input's agent needs once its file was replaced; a warning line, if any."""
        return None


def stale_share(messages: list[Any], counter: Counter) -> dict[str, Any]:
    """``estimate --json``'s stale share (staleness.py, imported here: plain ``estimate``, run on
    every turn, never needs its rules and classes, ~6 ms to import)."""
    from ..compaction.staleness import stale_report

    return stale_report(messages, counter=counter)
