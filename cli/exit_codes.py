"""Exit statuses (SPEC §6), and the one place where core errors become them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum

from compactor_core.errors import (
    ConfigError,
    CtxpackError,
    InputError,
    InputUnreadable,
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
    (WorkerDied, ExitStatus.SOFTWARE),
]


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
            io.warn(io.error_line(error))
            failures.append(status_for(error))
    return failures
