"""The framework every agent format shares: lines, detection, write-back, the in-use test."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import CORPUS, session_result, wait_until_open

from compactor_core.errors import InputError
from compactor_core.session_files import registry
from compactor_core.session_files.in_use import in_use, writer_of
from compactor_core.session_files.index import index_session
from compactor_core.session_files.records import Line, lines, parse_exact, parse_fast
from compactor_core.session_files.registry import detect
from compactor_core.session_files.write import UNCHANGED, session_chunks
from compactor_core.settings import RunSettings

KIMI = CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl"
CLAUDE = registry.get("claude-code")


def test_lines_keep_their_endings_and_places() -> None:
    data = b'\xef\xbb\xbf{"a":1}\r\n\n{"b":2}'
    found = list(lines(io.BytesIO(data)))
    assert b"".join(line.data for line in found) == data
    assert [line.ending for line in found] == [b"\r\n", b"\n", b""]
    assert found[0].body == b'{"a":1}' and found[0].prefix == b"\xef\xbb\xbf"
    assert [line.offset for line in found] == [0, 12, 13]
    assert parse_fast(found[1]) == (None, "blank")


def test_a_big_integer_comes_back_exactly() -> None:
    line = Line(1, 0, b'{"n":123456789012345678901234567890,"s":"x"}\n')
    assert parse_exact(line, "s")["n"] == 123456789012345678901234567890
    assert parse_fast(Line(1, 0, b"[1]"))[1] == "a record must be an object, got an array"


def test_detection_reads_content_not_names() -> None:
    with open(KIMI, "rb") as handle:
        assert detect(handle, "auto", "x.json").name == "claude-code"
        assert detect(handle, "messages", "x") is None
    assert detect(io.BytesIO(b'[{"role":"user","content":"hi"}]'), "auto", "x") is None
    assert detect(io.BytesIO(b'{"role":"user","content":"hi"}\n'), "auto", "x") is None
    assert detect(io.BytesIO(b'{"x":1}\n'), "auto", "x") is None  # the core says what is wrong
    with pytest.raises(InputError, match="messages, claude-code, codex, gemini-cli"):
        detect(io.BytesIO(b'{"x":1}\n{"x":2}\n'), "auto", "x")
    assert registry.FORMAT_NAMES == (
        "messages",
        "claude-code",
        "codex",
        "gemini-cli",
        "qwen-code",
        "pi",
        "copilot-cli",
        "cline",
        "opencode",
    )


def test_the_cli_offers_the_registry_formats() -> None:
    from cli.options import FORMATS

    assert (registry.AUTO, *registry.FORMAT_NAMES) == FORMATS


def test_crlf_and_bom_survive_a_rewrite() -> None:
    data = b"\xef\xbb\xbf" + KIMI.read_bytes().replace(b"\n", b"\r\n")
    after, _, _ = session_result(data, CLAUDE, RunSettings("micro"))
    assert after.startswith(b"\xef\xbb\xbf") and after != data
    assert after.count(b"\r\n") == data.count(b"\r\n") and after.count(b"\n") == data.count(b"\n")


def test_lines_written_after_pass_one_are_copied() -> None:
    data = KIMI.read_bytes()
    handle = io.BytesIO(data)
    session = index_session(handle, CLAUDE, "s")
    appended = b'{"type":"user","uuid":"late"}\n'
    handle.seek(0, 2)
    handle.write(appended)
    after = b"".join(session_chunks(handle, session, UNCHANGED))
    assert after == data + appended


def test_in_use_by_idle_time_and_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"{}\n")
    now = time.time()
    assert "less than min_idle=" in (in_use(path, now, 60) or "")
    os.utime(path, (now - 120, now - 120))
    assert in_use(path, now, 60) is None
    reader = subprocess.Popen(
        [sys.executable, "-c", f"f=open({str(path)!r});input()"], stdin=subprocess.PIPE
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", f"f=open({str(path)!r},'a');input()"], stdin=subprocess.PIPE
    )
    try:
        wait_until_open(reader.pid, path)
        wait_until_open(writer.pid, path)
        status = path.stat()
        assert writer_of(status.st_dev, status.st_ino) == writer.pid  # the reader does not count
        assert f"process {writer.pid}" in (in_use(path, now, 60) or "")
    finally:
        for process in (reader, writer):
            process.kill()
            process.wait()
    assert in_use(path, now, 60) is None
    assert writer_of(1, 1, tmp_path / "no-proc") is None  # no /proc: the idle test only
