"""How a tool call ended: its exit status, whether it failed, and the line that says why.

Harnesses report a command differently: Claude Code flags the result (``is_error``, and
``Exit code 1`` as the first line), Codex writes a header (``Process exited with code 1`` …
``Output:``) or a JSON object with ``metadata.exit_code``, other harnesses only give the output.
A failure's text is the line that tells the most: a compiler's or a test's ``file:line:``
message, else the first line that reports an error, else the first line.
"""

from __future__ import annotations

import json
import re

from ...compaction.micro import is_marker
from .calls import Call, command_of, is_test_run, paths_in, runs_command

ERROR_LINE = re.compile(
    r"(?i)\b(error|exception|traceback|failed|failure|fatal|panic|denied|not found|"
    r"(?-i:FAIL|CONFLICT))\b|exit (code|status) [1-9]|错误|失败|异常"
)
EXIT_STATUS = re.compile(r"(?i)exit (code|status):? \d+")
# ``path/file.go:12:3: message``: a compiler's, a linter's or a test's report of one place.
DIAGNOSTIC = re.compile(r"^[\w./~-]+\.\w+:\d+(?::\d+)?:\s*\S")
TELLING = re.compile(r"(?i)error|undefined|expected|want|got|cannot|can't|not |no such|missing")
BARE = re.compile(r"(?i)(FAIL(ED)?|ERROR|exit (code|status):? \d+):?")  # says that, not why
CANCELLED = "Sibling tool call errored"
TOOL_ERROR_TAG = re.compile(r"</?tool_use_error>")
CODEX_HEADER = re.compile(
    r"\A(?:(?:Chunk ID|Wall time|Process exited with code|Exit code|Original token count|"
    r"Process running with session ID)[^\n]*\n)+Output:\n"
)
CODEX_STATUS = re.compile(r"^(?:Process exited with code|Exit code:?) (-?\d+)$", re.M)
FAILED_TESTS = re.compile(r"(?m)^(?:--- )?FAIL(?:ED)?\b|\b[1-9]\d* (?:failed|errors?)\b")
TEST_TALLY = re.compile(
    r"(?i)\b\d+ (passed|failed|tests?|errors?)\b|^(ok|PASS|FAIL)\b|\btests? (passed|failed)\b"
)


def exit_status(result: str) -> int | None:
    """The exit status a Codex output states (its header, or ``metadata.exit_code``)."""
    header = CODEX_HEADER.match(result)
    if header is not None:
        status = CODEX_STATUS.search(header.group(0))
        return int(status.group(1)) if status else None
    shaped = _json_output(result)
    metadata = shaped.get("metadata") if shaped else None
    code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    return code if isinstance(code, int) else None


def output_of(result: str) -> str:
    """What the command printed, without the harness's header around it."""
    header = CODEX_HEADER.match(result)
    if header is not None:
        return result[header.end() :]
    shaped = _json_output(result)
    output = shaped.get("output") if shaped else None
    return output if isinstance(output, str) else TOOL_ERROR_TAG.sub("", result)


def _json_output(result: str) -> dict | None:
    if not result.startswith('{"output"'):
        return None
    try:
        value = json.loads(result)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def error_line(text: str) -> str | None:
    """The first line that reports an error, and the next if it only introduces it (``ERROR:``);
    a bare ``Exit code 1`` (Claude Code's first line) only when nothing says more."""
    lines = [line.strip() for line in text[:20000].splitlines() if line.strip()]
    status = None
    for index, line in enumerate(lines):
        if EXIT_STATUS.fullmatch(line):
            status = status or line
        elif ERROR_LINE.search(line):
            if line.endswith(":") and index + 1 < len(lines):
                return f"{line} {lines[index + 1]}"
            return line
    return status


def failed(call: Call) -> bool:
    """The call failed: the user refused it, a test run's output counts failures (a pipe's
    last command may have hidden its exit status), the harness said so or stated a non-zero
    exit, or, where it says neither, a command's readable output reports an error (a file's
    text mentioning "error" is no failure)."""
    if call.refused is not None:
        return True
    if is_marker(call.result):
        return call.is_error
    if is_test_run(call) and FAILED_TESTS.search(output_of(call.result)[-20000:]):
        return True
    if call.is_error or call.flagged:
        return call.is_error
    status = exit_status(call.result)
    if status is not None:
        return status != 0
    return runs_command(call) and error_line(output_of(call.result)) is not None


def cancelled(call: Call) -> bool:
    """Claude Code cancelled the call because a call made beside it failed: it never ran."""
    return CANCELLED in call.result[:200]


def error_text(call: Call) -> str | None:
    """The line that says why a failed call failed, when its result can still be read."""
    if is_marker(call.result):
        return None
    output = output_of(call.result)
    lines = [line.strip() for line in output[:20000].splitlines() if line.strip()]
    diagnostics = [line for line in lines if DIAGNOSTIC.match(line)]
    telling = [line for line in diagnostics if TELLING.search(line.split(":", 2)[-1])]
    for line in telling or diagnostics:
        return line
    worded = [line for line in lines if ERROR_LINE.search(line) and not BARE.fullmatch(line)]
    return next(iter(worded), None) or error_line(output) or next(iter(lines), None)


def test_tally(text: str) -> str | None:
    """The last line of a result that counts tests (``5 passed``, ``ok  pkg 0.2s``, ``FAIL``)."""
    tallies = [line.strip() for line in text[-20000:].splitlines() if TEST_TALLY.search(line)]
    return tallies[-1] if tallies else None


def test_result(call: Call) -> str | None:
    """A finished test run's tally, when its output can still be read."""
    if not is_test_run(call) or is_marker(call.result):
        return None
    return test_tally(output_of(call.result))


def subject(call: Call) -> str:
    """What a call was about, for telling whether a later call redid it: the tests, a command,
    a file, or the tool."""
    if is_test_run(call):
        return "tests"  # the latest test run tells whether the tests fail
    command = command_of(call.arguments)
    if command is not None and " " in command.strip():
        return "command:" + " ".join(command.split())
    paths = paths_in(call.arguments)
    return "path:" + paths[0] if paths else "tool:" + call.name
