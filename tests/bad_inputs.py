"""Bad input files: what each holds, the exit status and what the one error line must name.

The real-process tests (test_unix) run a few; the in-process ones (test_cli_micro) run them all,
and the golden file tests/golden/parse_errors.txt holds the exact message of each.
"""

from __future__ import annotations

import os
from pathlib import Path

# (case name, file contents, exit status, what stderr must name besides the file)
BAD_INPUTS: list[tuple[str, bytes, int, str]] = [
    ("empty", b"", 65, "empty input"),
    ("blank", b" \n\n\t ", 65, "empty input"),
    ("bom only", b"\xef\xbb\xbf", 65, "empty input"),
    ("truncated", b'[{"role":"us', 65, "line 1, column 10"),
    ("open object", b"[{", 65, "line 1, column 3"),
    ("trailing comma", b'[{"role":"user"},]', 65, "line 1, column 18"),
    ("single quotes", b"[{'role':'user'}]", 65, "line 1, column 3"),
    ("second line", b'[\n{"role":"user"}\n{"role":"user"}]', 65, "line 3, column 1"),
    ("nan", b'[{"role":"user","n":NaN}]', 65, "NaN"),
    ("infinity", b'[{"role":"user","n":-Infinity}]', 65, "Infinity"),
    ("number too large", b'[{"role":"user",\n"n":1e999}]', 65, "line 2, column 5"),
    ("two documents", b"[] []", 65, "line 1, column 4"),
    ("garbage after", b"[]x", 65, "line 1, column 3"),
    ("invalid utf-8", b'[{"role":"user","content":"\xff"}]', 65, "line 1, byte 28"),
    ("utf-16", '[{"role":"user"}]'.encode("utf-16"), 65, "byte 1"),
    ("deep nesting", b"[" * 50_000 + b"]" * 50_000, 65, "nested more than"),
    (
        "deep message",
        b'[{"role":"user","content":' + b"[" * 300 + b"]" * 300 + b"}]",
        65,
        "messages[0]: nested",
    ),
    ("number", b"42", 65, "got a number"),
    ("string", b'"hello"', 65, "got a string"),
    ("null", b"null", 65, "got null"),
    ("object", b'{"model":"m"}', 65, "got an object"),
    ("messages not array", b'{"messages":"x"}', 65, '"messages" must be an array'),
    ("message not object", b'[{"role":"user"},"hi"]', 65, "messages[1]: a message must be"),
    ("role missing", b'[{"content":"x"}]', 65, 'messages[0]: "role" is missing'),
    ("role number", b'[{"role":1}]', 65, 'messages[0]: "role" must be a string'),
    ("content number", b'[{"role":"user","content":1}]', 65, "messages[0].content"),
    ("content object", b'[{"role":"user","content":{}}]', 65, "messages[0].content"),
    ("tool_calls object", b'[{"role":"a","tool_calls":{}}]', 65, "messages[0].tool_calls"),
    ("tool call string", b'[{"role":"a","tool_calls":[1]}]', 65, "messages[0].tool_calls[0]"),
    (
        "function string",
        b'[{"role":"a","tool_calls":[{"function":"f"}]}]',
        65,
        "messages[0].tool_calls[0].function",
    ),
    ("envelope message", b'{"model":"m","messages":[{"role":"user"},[]]}', 65, "messages[1]"),
    ("jsonl bad line", b'{"role":"user"}\n{"role":"user"}\n{"role":\n', 65, "line 3"),
    ("jsonl array line", b'{"role":"user"}\n\n[1]\n', 65, "line 3"),
    ("jsonl no role", b'{"role":"user"}\n{"content":"x"}\n', 65, 'line 2: "role" is missing'),
]
BAD_IDS = [case[0] for case in BAD_INPUTS]


def assert_one_line_error(stdout: bytes | str, stderr: bytes | str, *names: str) -> str:
    """Nothing on stdout; exactly one line on stderr naming everything in ``names``."""
    assert not stdout
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr
    assert stderr.count("\n") == 1 and stderr.endswith("\n"), stderr
    assert stderr.startswith("ctxpack: "), stderr
    for name in names:
        assert name in stderr, (name, stderr)
    return stderr


def bad_file(directory: Path, case: str, data: bytes) -> Path:
    path = directory / f"{case.replace(' ', '-')}.json"
    path.write_bytes(data)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # a change would show in the mtime
    return path
