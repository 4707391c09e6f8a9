"""``estimate`` over folders and prefixes: a line per file (``-r``), or statistics (``--summary``).

The statistics are computed where the batch runs (``-j`` local processes, ``--engine dask``, or
``--scheduler``): each task tallies a chunk of the listing and the tallies are merged here as
they come back. A file that cannot be read or parsed is reported on stderr as a local file would
be and left out of the figures; the exit status is then its error's (65, 66), or 1 when the
failures differ, as for a batch.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from compactor_core.batch.engines import estimate_all
from compactor_core.batch.targets import DEFAULT_GLOBS, Listing, find_targets
from compactor_core.compaction.corpus_stats import Tally, render
from compactor_core.conversation.formats import dumps

from . import io
from .exit_codes import ExitStatus, status_for, warn
from .run import engine_of


def expand(names: Sequence[str], globs: Sequence[str]) -> tuple[str, ...]:
    """The files named and those in the folders or prefixes named, as estimate reads them."""
    listing = Listing(names, True, tuple(globs) or DEFAULT_GLOBS)
    return tuple(target.label for target in find_targets(listing))


def summarize(
    names: Sequence[str], format_name: str, bareagent: bool, as_json: bool, **listing: Any
) -> None:
    """Print the corpus statistics (text, or one JSON object with ``--json``)."""
    globs = tuple(listing["globs"]) or DEFAULT_GLOBS
    targets = find_targets(Listing(names, listing["recursive"], globs))
    tally, failures = Tally(), []
    for part, errors in estimate_all(targets, format_name, bareagent, engine_of(listing)):
        tally.merge(part)
        for error in errors:
            warn(error)
            failures.append(status_for(error))
    summary = tally.summary()
    if as_json:
        io.write_stdout(dumps({**summary, "failed": len(failures)}) + b"\n")
    else:
        io.write_stdout(render(summary, len(failures)).encode() + b"\n")
    if failures:
        sys.exit(failures[0] if len(set(failures)) == 1 else ExitStatus.NOT_OVER)
