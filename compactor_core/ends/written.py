"""What writing a result reports (``Written``), and what an object written records of its making.

Light on purpose: every destination and every origin names these, a filter's run included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ..compaction.outcome import Outcome


class Written(NamedTuple):
    folder: str | None = None  # the folder a file was written into, for its fsync
    warning: str | None = None  # the agent's own index of the session could not be updated, …
    copied: str | None = None  # why the original was copied into the snapshots, not linked


NOTHING_WRITTEN = Written()
# What an object written by a batch records of its making (S3 metadata): a re-run skips it.
SOURCE, SETTINGS, TOKENS = "ctxpack-source", "ctxpack-settings", "ctxpack-tokens"


def record(source_version: str, settings_key: str, outcome: Outcome) -> dict[str, str]:
    """What an object records of its making: the input's version, the settings, the tokens."""
    tokens = f"{outcome.tokens_before} {outcome.tokens_after}"
    return {SOURCE: source_version, SETTINGS: settings_key, TOKENS: tokens}
