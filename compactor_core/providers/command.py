"""Any program as the summary provider (SPEC §7), e.g. ``--command 'llm -m gpt-4o-mini'``.

The command is split like a shell would split it (``shlex``) but never run by one, so ``;``,
``$(...)`` and ``*`` reach the program as they are. The program gets the user prompt on its stdin as
UTF-8, the system prompt in ``CTXPACK_SYSTEM_PROMPT`` on top of the environment in the settings
(the CLI passes its own, so the program sees what a shell would give it), and writes the summary on
stdout, which is used exactly as it comes: no stripping, so the program's
text, trailing newline and all, reaches the rebuilt message.

A program that cannot be found is a configuration error (exit 78), found when the provider is built
— before any input is read — just like a missing API key: no retry or ``--strict`` changes it.
A non-zero exit, a signal, output that is empty or not UTF-8 is a failure (exit 69 under
``--strict``); a timeout is a failure worth retrying (75). The program runs in a session of its
own so that a timeout, or ctxpack being interrupted, kills everything it started (its process
group), not just the program itself. Commands are not retried: ``--retries`` is for HTTP.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping

from ..errors import ConfigError, ProviderError, RetryableProviderError
from ..text import clip
from .base import SummaryRequest
from .catalog import ProviderSettings

SYSTEM_PROMPT_VARIABLE = "CTXPACK_SYSTEM_PROMPT"
STDERR_CHARS = 200
REAP_SECONDS = 5.0


class CommandSummarizer:
    name = "command"

    def __init__(self, settings: ProviderSettings) -> None:
        self.environment = dict(settings.environment or {})
        self.argv = split_command(settings.command or "")
        self.program = find_program(self.argv[0], self.environment.get("PATH"))
        self.timeout = settings.timeout or None  # 0 means no limit
        self.label = f"command ({os.path.basename(self.argv[0])})"

    def summarize(self, request: SummaryRequest) -> str:
        environment = {**self.environment, SYSTEM_PROMPT_VARIABLE: request.system}
        stdout, stderr, status = self._run(request.user.encode("utf-8"), environment)
        if status != 0:
            raise ProviderError(f"{self.label}: {_status(status)}{_last_line(stderr)}")
        try:
            summary = stdout.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProviderError(
                f"{self.label}: the output is not UTF-8 (byte {error.start})"
            ) from None
        if not summary.strip():
            raise ProviderError(f"{self.label}: the output is empty{_last_line(stderr)}")
        return summary

    def _run(self, prompt: bytes, environ: Mapping[str, str]) -> tuple[bytes, bytes, int]:
        try:
            process = subprocess.Popen(
                self.argv,
                executable=self.program,  # found once, at start-up
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environ,
                start_new_session=True,  # its own process group, which a timeout kills whole
            )
        except (OSError, ValueError) as error:  # vanished since start-up, a NUL in the prompt…
            raise ProviderError(f"{self.label}: cannot run: {_reason(error)}") from None
        try:
            stdout, stderr = process.communicate(prompt, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise RetryableProviderError(
                f"{self.label}: no summary within {self.timeout:g} s (killed)"
            ) from None
        except BaseException:  # Ctrl-C: the child, in a session of its own, did not get it
            _kill_group(process)
            raise
        return stdout, stderr, process.returncode


def split_command(command: str) -> list[str]:
    """The command's words; ConfigError if it is empty or its quotes are unbalanced."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise ConfigError(f"provider 'command': {command!r} cannot be split: {error}") from None
    if not argv:
        raise ConfigError("provider 'command' needs a command: use command=COMMAND")
    return argv


def find_program(name: str, path: str | None) -> str:
    """The program's path, looked up in ``path`` like a shell would; ConfigError if none."""
    found = shutil.which(name, path=path)
    if found is None:
        where = "" if os.sep in name else " on PATH"
        raise ConfigError(
            f"provider 'command': program {name!r} not found{where} (or not executable)"
        )
    return found


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=REAP_SECONDS)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _status(status: int) -> str:
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exited with status {status}"


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    return ": " + clip(lines[-1], STDERR_CHARS)


def _reason(error: BaseException) -> str:
    return error.strerror if isinstance(error, OSError) and error.strerror else str(error)
