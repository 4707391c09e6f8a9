"""One exception tree for everything ctxpack can refuse or fail at.

    CtxpackError
    ├── InputError            the input is not a valid conversation (exit 65)
    ├── InputUnreadable       an input file is missing or unreadable (exit 66)
    │   └── IsADirectory      ... a folder where a file was expected (the CLI adds the hint)
    ├── OutputError           stdout, an output file or a snapshot could not be written (exit 74)
    ├── ConfigError           unknown provider, missing API key, bad config file (exit 78)
    ├── UsageError            a value the user gave cannot be used (exit 2), e.g. a session id
    ├── SessionInUse          an agent's session file is in use by its agent: skipped (exit 75)
    ├── Refused               not done, to keep the user's data safe (exit 77)
    │   ├── UnsafeLocation    ... a snapshot folder others could change or plant files in
    │   └── WouldDrop         ... a restore that would drop what was added after the run
    ├── ClusterError          the batch engine failed: workers kept dying, a lost cluster (exit 74)
    │   └── WorkerDied        ... a local worker process died before the file was done (exit 70)
    ├── InternalError         an exception ctxpack did not expect, in a worker: a bug (exit 70)
    └── ProviderError         the summary provider failed (exit 69 under --strict)
        ├── RetryableProviderError   ... in a way worth retrying: timeout, 429, 5xx (exit 75)
        └── SummaryCutOff            the summary stopped at max_tokens (kept unless --strict)

The core raises these; only the CLI turns them into exit statuses, in one place.
Every message is one line that names its subject (a file, a place, a setting).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class CtxpackError(Exception):
    """Base of every error ctxpack reports to its user."""


class InputError(CtxpackError):
    """The input is not a valid conversation.

    ``path`` names the input (a file name, ``<stdin>``) and ``place`` where in it the problem is
    (``messages[3].content``, ``line 4``), when they are known.
    """

    def __init__(self, message: str, path: str | None = None, place: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.place = place


class InputUnreadable(CtxpackError):
    """An input file is missing or cannot be read."""


class IsADirectory(InputUnreadable):
    """A folder was named where a file was expected.

    The message is only "NAME: is a directory": which flag would help depends on the command,
    so the front end adds that hint.
    """


class OutputError(CtxpackError):
    """An output, an in-place file or a snapshot could not be written."""


class ConfigError(CtxpackError):
    """A setting is wrong: unknown provider, missing key, bad config file or flag value."""


class UsageError(CtxpackError):
    """A value given on the command line is refused, such as a malformed session id."""


class SessionInUse(CtxpackError):
    """An agent is using the session file (changed within --min-idle, or open for writing)."""


class Refused(CtxpackError):
    """Not done, because doing it would put the user's data at risk."""


class UnsafeLocation(Refused):
    """A snapshot folder is not safe to use: a symbolic link, someone else's, or one that others
    could write to (it or a folder above it). Nothing is written to it or read from it."""


class WouldDrop(Refused):
    """``restore`` would drop what was added to the file after ctxpack's run (``--force``)."""


class ProviderError(CtxpackError):
    """The summary provider failed: bad reply, refusal, 4xx. ``status_code``: the HTTP status
    of the last reply, when a server gave one."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class RetryableProviderError(ProviderError):
    """The provider failed in a way worth retrying later: timeout, 429, 5xx, connection."""


class SummaryCutOff(ProviderError):
    """The model stopped at ``max_tokens``: a summary, but perhaps without its end.

    Full compaction keeps it (it is still a summary, and better than none) and reports it; only a
    caller that asked for whole summaries (``--strict``) treats it as a failure.
    """

    def __init__(self, message: str, summary: str) -> None:
        super().__init__(message)
        self.summary = summary


class ClusterError(CtxpackError):
    """The batch engine itself could not finish a task: a worker killed again and again, a lost
    connection to the cluster, a timeout. Never raised for what a task's own code raised."""


class WorkerDied(ClusterError):
    """A local batch worker process died (killed, out of memory) before this file was reported.

    The file itself is whole: every write is an atomic rename, so it holds its old version or,
    if the worker got that far, its new one.
    """


class InternalError(CtxpackError):
    """An exception ctxpack did not expect, caught where a batch worker did an input: a bug of
    ctxpack, reported as that input's failure so that the batch goes on with the others.

    ``traceback`` is where it was raised, as text: a traceback does not cross to the parent
    process, and only the front end knows whether its user asked to see it.
    """

    def __init__(self, message: str, traceback: str = "") -> None:
        super().__init__(message)
        self.traceback = traceback

    @classmethod
    def of(cls, error: BaseException, label: str | None = None) -> InternalError:
        """The bug ``error`` in one line, named by the input ``label`` it happened on."""
        from traceback import format_exception  # only when there is a bug to tell

        detail = " ".join(str(error).split())[:300]  # one line, whatever the message holds
        what = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
        named = f"{label}: " if label else ""
        where = "".join(format_exception(error))
        bug = cls(f"{named}internal error: {what} (a bug in ctxpack)", where)
        bug.__cause__ = error  # in this process, the original stays in the chain
        return bug


@contextmanager
def reading(label: str) -> Iterator[None]:
    """Turn the OS's errors while reading the input ``label`` into ours, named by ``label``."""
    try:
        yield
    except FileNotFoundError:
        raise InputUnreadable(f"{label}: no such file") from None
    except IsADirectoryError:
        raise IsADirectory(f"{label}: is a directory") from None
    except OSError as error:
        raise InputUnreadable(f"{label}: cannot read: {error.strerror}") from None
