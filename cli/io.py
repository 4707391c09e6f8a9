"""Reading inputs and writing results: stdin, files, -o, --in-place."""

from __future__ import annotations

import os
import sys
from io import UnsupportedOperation
from typing import NamedTuple

import click

from compactor_core.atomic import write_all
from compactor_core.errors import CtxpackError, InputUnreadable, IsADirectory, OutputError, reading
from compactor_core.formats import Conversation, parse

STDIN = "-"


class Input(NamedTuple):  # not a frozen dataclass: that costs ten times as much at start-up
    name: str  # as the user wrote it; "-" for standard input
    data: bytes

    @property
    def label(self) -> str:
        return label(self.name)

    def parse(self) -> Conversation:
        return parse(self.data, self.label)


def label(name: str) -> str:
    """How an input is named in messages."""
    return "<stdin>" if name == STDIN else name


def input_names(files: tuple[str, ...]) -> tuple[str, ...]:
    """The inputs to read; standard input when none are named, unless it is a terminal."""
    if files:
        return files
    if sys.stdin is None or sys.stdin.isatty():  # None: standard input is closed
        raise click.UsageError("no input: name a file, or pipe a conversation into standard input")
    return (STDIN,)


def read_input(name: str) -> Input:
    with reading(label(name)):
        if name == STDIN:
            if sys.stdin is None:
                raise InputUnreadable("<stdin>: standard input is closed")
            return Input(name, sys.stdin.buffer.read())
        if "://" in name:  # a URL (s3://bucket/key): read through fsspec, imported only then
            from compactor_core.storage import is_url, read

            if is_url(name):
                return Input(name, read(name))
        with open(name, "rb") as file:
            return Input(name, file.read())


def write_stdout(data: bytes) -> None:
    """Write all of ``data`` or fail: 141 on a closed pipe (BrokenPipeError), else 74."""
    if sys.stdout is None:
        raise OutputError("<stdout>: standard output is closed")
    try:
        sys.stdout.flush()  # whatever went through the text layer comes first
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, ValueError, UnsupportedOperation):  # not a real file (tests)
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return
        sys.stdout.buffer.flush()
        write_all(fd, data)  # os.write may take part of it: the rest is not silently dropped
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OutputError(f"<stdout>: cannot write: {error.strerror or error}") from None


def warn(message: str) -> None:
    click.echo(f"ctxpack: {message}", err=True)


_DIRECTORY_HINT = "ctxpack.directory_hint"  # kept in the click context's meta, which is shared


def set_directory_hint(hint: str | None) -> None:
    """What to suggest when a folder is named where this command wants a file.

    Which flags would help depends on the command and on the flags already given, so each command
    says it; ``error_line`` adds it wherever the error is reported.
    """
    context = click.get_current_context(silent=True)
    if context is not None:
        context.meta[_DIRECTORY_HINT] = hint


def error_line(error: CtxpackError) -> str:
    """The one line an error is reported as: its message, and the command's hint for a folder."""
    context = click.get_current_context(silent=True)
    hint = context.meta.get(_DIRECTORY_HINT) if context is not None else None
    return f"{error} ({hint})" if hint and isinstance(error, IsADirectory) else str(error)


def internal_error(error: BaseException) -> None:
    """Report a bug in one line; the traceback only when CTXPACK_TRACEBACK=1 asks for it."""
    if os.environ.get("CTXPACK_TRACEBACK") == "1":
        import traceback  # only for this, not at every start

        traceback.print_exception(error, file=sys.stderr)
    detail = " ".join(str(error).split())[:300]  # one line, whatever the message holds
    what = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
    warn(f"internal error: {what} (a bug in ctxpack; CTXPACK_TRACEBACK=1 shows where)")
