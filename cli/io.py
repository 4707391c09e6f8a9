"""Standard input, standard output and standard error: the process's streams, for the commands."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from io import UnsupportedOperation
from typing import Any

import click

from compactor_core.disk.database_names import is_database_file
from compactor_core.disk.streams import write_chunks
from compactor_core.ends.sources import Given, RemoteObject, Source, local_file
from compactor_core.ends.urls import is_url
from compactor_core.errors import CtxpackError, InputUnreadable, IsADirectory, OutputError, reading

STDIN = "-"


def label(name: str) -> str:
    """How an input is named in messages."""
    return "<stdin>" if name == STDIN else name


def input_names(files: tuple[str, ...]) -> tuple[str, ...]:
    """The inputs to read; standard input when none are named, unless it is a terminal."""
    if files:
        return each_session(files)
    if sys.stdin is None or sys.stdin.isatty():  # None: standard input is closed
        raise click.UsageError("no input: name a file, or pipe a conversation into standard input")
    return (STDIN,)


def each_session(names: tuple[str, ...]) -> tuple[str, ...]:
    """The names, a database of sessions standing for each of them (``FILE#SESSION``)."""
    if not any(is_database_file(name) for name in names if name != STDIN):
        return names
    from compactor_core.session_files.registry import each_session as sessions_of  # agents: 10 ms

    return tuple(sessions_of(names))


def source_of(name: str) -> Source:
    """Where the input ``name`` is: standard input (read now), a URL, or a local file."""
    if name == STDIN:
        return Given(read_stdin(), "<stdin>")
    if is_url(name):
        return RemoteObject(name, name)
    return local_file(name)  # a file, or one session of a database: FILE#SESSION


def read_stdin() -> bytes:
    """All of standard input (the core gets inputs as bytes or files, never the stream)."""
    with reading("<stdin>"):
        if sys.stdin is None:
            raise InputUnreadable("<stdin>: standard input is closed")
        return sys.stdin.buffer.read()


def stdin_lines() -> Iterator[bytes]:
    """Standard input line by line, each as soon as it has come (a protocol, not a file)."""
    if sys.stdin is not None:
        yield from sys.stdin.buffer


def write_stdout(data: bytes) -> None:
    """Write all of ``data`` or fail: 141 on a closed pipe (BrokenPipeError), else 74."""
    write_stdout_chunks((data,))


def stdout_is_a_terminal() -> bool:
    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except ValueError:  # closed
        return False


def write_stdout_chunks(chunks: Iterable[bytes]) -> None:
    """Write every chunk to standard output, as they come (a session file of any size)."""
    if sys.stdout is None:
        raise OutputError("<stdout>: standard output is closed")
    try:
        sys.stdout.flush()  # whatever went through the text layer comes first
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, ValueError, UnsupportedOperation):  # not a real file (tests)
            for chunk in chunks:
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            return
        sys.stdout.buffer.flush()
        write_chunks(fd, chunks, "<stdout>")  # os.write may take part: the rest is not dropped
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OutputError(f"<stdout>: cannot write: {error.strerror or error}") from None


def one_pass() -> None:
    """This process reads its inputs, writes their results and ends: the cyclic garbage collector
    is switched off, which would otherwise walk every object of a big parsed conversation again
    and again while the estimate or micro compaction makes its small lists (15–30% of their time
    on a 55 MB conversation). A parsed conversation holds no reference cycles; memory is freed by
    reference counting, and the rest when the process ends."""
    gc.disable()


# What the runs that end the process at once (``end_at_once``) keep to the end; None: commands
# run in some other program's process (tests), which end nothing.
_kept: list[tuple[Any, ...]] | None = None


def end_at_once(*kept: Any) -> None:
    """In the executable's own run (``run_to_the_end``), this run ends the process as soon as it
    exits: its output flushed, and nothing torn down or freed. A filter's teardown is a tenth
    of its start-up (8 ms of ``micro``'s 79), and freeing a parsed 55 MB conversation (``kept``)
    takes 20–30 ms, which a process about to end does not need. Not for a run with workers,
    threads or servers of its own, whose teardown matters."""
    if _kept is not None:
        _kept.append(kept)


def run_to_the_end(command: Callable[[], None]) -> None:
    """Run ``command`` (every command line, ended by SystemExit) as this process's whole work;
    a run that asked (``end_at_once``) ends the process as soon as it exits."""
    global _kept
    _kept = []
    try:
        command()
    except SystemExit as end:
        if _kept:
            _end_now(end.code)
        raise


def _end_now(code: Any) -> None:
    if isinstance(code, str):  # what sys.exit does with a message
        click.echo(code, err=True)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # closed, or none reads
            stream.flush()
    os._exit(code or 0)


def warn(message: str) -> None:
    click.echo(f"ctxpack: {message}", err=True)


_DIRECTORY_HINT = "ctxpack.directory_hint"  # kept in the click context's meta, which is shared


def set_directory_hint(hint: str | None) -> None:
    """What to suggest when a folder is named where this command wants a file.

    Which flags would help depends on the command and on the flags already given, so each command
    says it; ``exit_codes.error_line`` adds it wherever the error is reported.
    """
    context = click.get_current_context(silent=True)
    if context is not None:
        context.meta[_DIRECTORY_HINT] = hint


def with_directory_hint(error: CtxpackError) -> str:
    """An error's message, and the command's hint when a folder was named for a file."""
    context = click.get_current_context(silent=True)
    hint = context.meta.get(_DIRECTORY_HINT) if context is not None else None
    return f"{error} ({hint})" if hint and isinstance(error, IsADirectory) else str(error)
