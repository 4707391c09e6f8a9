"""Exit statuses (SPEC §6), and the one place where core errors become them and their words.

The core's messages name what a library caller can change: its arguments (``force=True``,
``min_idle=60s``, ``output=FILE``) and functions. ``in_flag_words`` says the same in the
command line's words (``--force``, ``--min-idle 60s``, ``-o FILE``), for every line the CLI
prints from the core: errors, skipped inputs, summary warnings, session listings, serve's log.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum

from compactor_core.errors import (
    ClusterError,
    ConfigError,
    CtxpackError,
    InputError,
    InputUnreadable,
    InternalError,
    OutputError,
    ProviderError,
    Refused,
    RetryableProviderError,
    SessionInUse,
    UsageError,
    WorkerDied,
)

from . import io


class ExitStatus(IntEnum):
    OK = 0
    NOT_OVER = 1  # estimate --threshold: not over; a batch whose failures differ
    PROBLEMS_LEFT = 1  # check: problems found; rescue: some it could not repair
    USAGE = 2
    DATA_ERROR = 65
    NO_INPUT = 66
    PROVIDER_FAILED = 69
    CANT_WRITE = 74
    PROVIDER_RETRYABLE = 75
    TEMPORARY = 75  # EX_TEMPFAIL: try again later (a session file its agent is using)
    SOFTWARE = 70  # EX_SOFTWARE: an unexpected error, a bug of ctxpack
    REFUSED = 77  # EX_NOPERM: refused to keep data safe (an unsafe folder, a lossy restore)
    CONFIG = 78
    INTERRUPTED = 130
    BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `cat big | head`


# "\b" keeps click from re-wrapping the table into one paragraph in --help.
TABLE = """\
\b
Exit status:
  0    success (also: nothing to compact; a summary failure without --strict)
  1    estimate --threshold: not over; check: problems found; rescue: problems left; failures differ
  2    usage error (bad or conflicting flags or values, no input on a terminal)
  65   input is not a valid conversation
  66   an input file is missing or unreadable
  69   --strict: the provider failed (bad reply, 4xx)
  70   internal error: a bug of ctxpack (CTXPACK_TRACEBACK=1 shows where), or a batch worker died
  74   output, in-place file or snapshot could not be written
  75   try again later: a session file in use; --strict: provider timeout, 429, 5xx, connection
  77   refused to keep data safe: an unsafe snapshot folder; restore over newer lines (--force)
  78   configuration error (unknown provider, missing API key, bad config file)
  130  interrupted
  141  standard output was closed early (| head): a quiet stop"""

_STATUS_OF_ERROR: list[tuple[type[CtxpackError], ExitStatus]] = [
    (RetryableProviderError, ExitStatus.PROVIDER_RETRYABLE),  # before its base class
    (ProviderError, ExitStatus.PROVIDER_FAILED),
    (InputError, ExitStatus.DATA_ERROR),
    (InputUnreadable, ExitStatus.NO_INPUT),
    (OutputError, ExitStatus.CANT_WRITE),
    (ConfigError, ExitStatus.CONFIG),
    (UsageError, ExitStatus.USAGE),
    (SessionInUse, ExitStatus.TEMPORARY),
    (Refused, ExitStatus.REFUSED),
    (WorkerDied, ExitStatus.SOFTWARE),  # before its base class
    (ClusterError, ExitStatus.CANT_WRITE),
    (InternalError, ExitStatus.SOFTWARE),
]


# (the core's words, as a pattern; the command line's), applied in turn: the more specific first.
_FLAG_WORDS: tuple[tuple[str, str], ...] = (
    (r"restore_file\(force=True\)", "restore --force"),
    (r"restore_file\(keep_new=True\)", "restore --keep-new"),
    (r"force=True", "--force"),
    (r"min_idle=", "--min-idle "),
    (r"snapshots=FOLDER", "--snapshot-dir"),
    (r"format=NAME", "--format"),
    (r"base_url=URL", "--base-url"),
    (r"max_tokens=N", "--max-tokens"),
    (r"command=COMMAND", "--command or CTXPACK_COMMAND"),
    (r"use output(_dir)?=None", "use --in-place"),
    (
        r"compact it in place \(the original is kept\), or give output=FILE",
        "add --in-place to shrink it where it is (the original is kept), or -o FILE or a "
        "redirection to write the result elsewhere",
    ),
    (r"output_dir=FOLDER", "--output-dir"),
    (r"Engine\(kind='dask'\)", "--engine dask"),
    (r"plotting\(\)", "--plot"),
    (r"\(a bug in ctxpack\)", "(a bug in ctxpack; CTXPACK_TRACEBACK=1 shows where)"),
    (r"list_sessions\(agent='([\w-]+)'\)", r"ctxpack sessions --agent \1"),
    (r"\(or give the file instead\)", "(or give the file: ctxpack restore FILE)"),
    (r"\(SnapshotStore\.select\(\) lists them\)", "(ctxpack restore --list shows them)"),
    (r"as SnapshotStore\.select\(\) lists it", "as --list shows it"),
    (r"\bat='", "--at '"),
    (r"to_prune needs keep=N or older_than=AGE", "--prune needs --keep N or --older-than AGE"),
    (r"older_than='", "--older-than '"),
)


def in_flag_words(message: str) -> str:
    """The core's message with its arguments named as the command line's flags (the patterns
    are compiled by ``re`` on the first error, not on every start)."""
    for pattern, flag in _FLAG_WORDS:
        message = re.sub(pattern, flag, message)
    return message


def error_line(error: CtxpackError) -> str:
    """The one line an error is reported as: its message in flag words, and the command's hint
    for a folder."""
    return in_flag_words(io.with_directory_hint(error))


def warn(error: CtxpackError) -> None:
    """Report ``error`` in its one line; a bug's traceback first, when CTXPACK_TRACEBACK=1."""
    if isinstance(error, InternalError) and os.environ.get("CTXPACK_TRACEBACK") == "1":
        sys.stderr.write(error.traceback)
    io.warn(error_line(error))


def internal_error(error: BaseException) -> None:
    """Report an exception nobody expected, a bug of ctxpack, as a worker's bugs are reported."""
    warn(InternalError.of(error))


def status_for(error: CtxpackError) -> ExitStatus:
    for error_type, status in _STATUS_OF_ERROR:
        if isinstance(error, error_type):
            return status
    return ExitStatus.SOFTWARE  # an error class without a status is ctxpack's own bug


def combined(failures: list[ExitStatus]) -> ExitStatus:
    """0 when all went well; the failures' status when they agree; else 1."""
    if not failures:
        return ExitStatus.OK
    return failures[0] if len(set(failures)) == 1 else ExitStatus.NOT_OVER


def for_each_input(
    names: Sequence[str], handle: Callable[[str], Iterable[ExitStatus] | None]
) -> list[ExitStatus]:
    """Handle every input in turn; return the statuses the failures call for.

    With several inputs a failed one is reported in one line and the rest go on, as ``cat`` does;
    a single input's error goes up, to be reported once by the command group.
    """
    failures: list[ExitStatus] = []
    for name in names:
        try:
            failures.extend(handle(name) or ())
        except CtxpackError as error:
            if len(names) == 1:
                raise
            warn(error)
            failures.append(status_for(error))
    return failures
