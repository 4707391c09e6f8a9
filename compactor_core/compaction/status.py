"""What became of the summary step of one run: one vocabulary for the core, batch and the CLI."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    COMPACTED = "compacted"  # the history was replaced by a summary
    NOTHING = "nothing"  # nothing to summarize (only system messages and the pending turn)
    FAILED = "failed"  # the provider failed; the input (or micro's result) stands
    WOULD_RUN = "would run"  # --dry-run: a summary would be asked for
    NOT_RUN = "not run"  # micro, or auto under its threshold
