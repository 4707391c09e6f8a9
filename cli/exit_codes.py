"""Exit statuses (SPEC §6), and the one place where core errors become them."""

from __future__ import annotations

from enum import IntEnum

from compactor_core.errors import (
    ConfigError,
    CtxpackError,
    InputError,
    InputUnreadable,
    OutputError,
    ProviderError,
    RetryableProviderError,
    SessionInUse,
    UsageError,
)


class ExitStatus(IntEnum):
    OK = 0
    NOT_OVER = 1  # estimate --threshold: not over; a batch whose failures differ
    USAGE = 2
    DATA_ERROR = 65
    NO_INPUT = 66
    PROVIDER_FAILED = 69
    CANT_WRITE = 74
    PROVIDER_RETRYABLE = 75
    TEMPORARY = 75  # EX_TEMPFAIL: try again later (a session file its agent is using)
    CONFIG = 78
    INTERRUPTED = 130
    BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `cat big | head`


# "\b" keeps click from re-wrapping the table into one paragraph in --help.
TABLE = """\
\b
Exit status:
  0    success (also: nothing to compact; a summary failure without --strict)
  1    estimate --threshold: not over; a batch in which files failed for different reasons
  2    usage error (bad or conflicting flags, no input on a terminal)
  65   input is not a valid conversation
  66   an input file is missing or unreadable
  69   --strict: the provider failed (bad reply, 4xx)
  74   output, in-place file or snapshot could not be written
  75   --strict: the provider failed in a way worth retrying (timeout, 429, 5xx, connection)
  78   configuration error (unknown provider, missing API key, bad config file)
  130  interrupted"""

_STATUS_OF_ERROR: list[tuple[type[CtxpackError], ExitStatus]] = [
    (RetryableProviderError, ExitStatus.PROVIDER_RETRYABLE),  # before its base class
    (ProviderError, ExitStatus.PROVIDER_FAILED),
    (InputError, ExitStatus.DATA_ERROR),
    (InputUnreadable, ExitStatus.NO_INPUT),
    (OutputError, ExitStatus.CANT_WRITE),
    (ConfigError, ExitStatus.CONFIG),
    (UsageError, ExitStatus.USAGE),
    (SessionInUse, ExitStatus.TEMPORARY),
]


def status_for(error: CtxpackError) -> ExitStatus:
    for error_type, status in _STATUS_OF_ERROR:
        if isinstance(error, error_type):
            return status
    return ExitStatus.DATA_ERROR
