"""`ctxpack micro` and `ctxpack restore` through click's CliRunner."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from bad_inputs import BAD_IDS, BAD_INPUTS, assert_one_line_error, bad_file
from helpers import dumps, fingerprint, invoke

from compactor_core.conversation.formats import parse
from compactor_core.errors import InputError
from compactor_core.snapshots.base import session_id_for_file


def turn(call_id: str, tool: str, result: str) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
        },
    ]


# Outputs long enough for their markers to be shorter (a marker never replaces a shorter one).
READ, THREE, FOUR, FIVE = "1: [provider]\n2: ...\n" * 3, "three " * 8, "four " * 10, "five " * 10
CHAT = [
    {"role": "system", "content": "你是助手"},
    {"role": "user", "content": "请读取配置"},
    *turn("t1", "read_file", READ),
    *turn("t2", "bash", "x" * 1204),
    *turn("t3", "bash", THREE),
    *turn("t4", "grep", FOUR),
    *turn("t5", "bash", FIVE),
]


def contents(messages: list[dict]) -> list[str]:
    return [
        block["content"]
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


MARKED = [
    "[truncated: read_file result, 63 chars]",
    "[truncated: bash result, 1204 chars]",
    THREE,
    FOUR,
    FIVE,
]


def test_stdin_to_stdout() -> None:
    result = invoke("micro", stdin=dumps(CHAT))
    assert result.exit_code == 0
    assert result.stderr == ""
    out = json.loads(result.stdout)
    assert contents(out) == MARKED
    assert out[:2] == CHAT[:2]
    assert result.stdout.endswith("]\n") and result.stdout.count("\n") == 1  # compact


def test_no_snapshot_when_writing_to_stdout(transcripts: Path) -> None:
    invoke("micro", stdin=dumps(CHAT))
    assert not transcripts.exists()


ALL_MARKED = [
    "[truncated: read_file result, 63 chars]",
    "[truncated: bash result, 1204 chars]",
    "[truncated: bash result, 48 chars]",
    "[truncated: grep result, 50 chars]",
    "[truncated: bash result, 50 chars]",
]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--keep-recent", "0"], ALL_MARKED),
        (["--keep-recent", "-3"], ALL_MARKED),
        (["--keep-recent", "5"], contents(CHAT)),
        (["--keep-recent", "1"], [*ALL_MARKED[:4], FIVE]),
        (
            ["--keep-recent", "0", "--exclude-tool", "bash", "--exclude-tool", "grep"],
            ["[truncated: read_file result, 63 chars]", "x" * 1204, THREE, FOUR, FIVE],
        ),
        (
            ["--keep-recent", "0", "--min-chars", "64"],
            [READ, *ALL_MARKED[1:2], THREE, FOUR, FIVE],
        ),
    ],
)
def test_micro_options(args: list[str], expected: list[str]) -> None:
    result = invoke("micro", *args, stdin=dumps(CHAT))
    assert result.exit_code == 0, result.stderr
    assert contents(json.loads(result.stdout)) == expected


def test_output_keeps_the_input_shape() -> None:
    envelope = {"model": "m", "messages": CHAT, "max_tokens": 9}
    out = json.loads(invoke("micro", stdin=dumps(envelope)).stdout)
    assert list(out) == ["model", "messages", "max_tokens"]
    assert contents(out["messages"]) == MARKED
    jsonl = b"".join(dumps(message) + b"\n" for message in CHAT)
    lines = invoke("micro", stdin=jsonl).stdout.splitlines()
    assert len(lines) == len(CHAT)
    assert contents([json.loads(line) for line in lines]) == MARKED


def test_pretty() -> None:
    result = invoke("micro", "--pretty", stdin=dumps(CHAT))
    assert result.stdout.startswith('[\n  {\n    "role": "system",\n    "content": "你是助手"')


def test_stats_go_to_stderr() -> None:
    result = invoke("micro", "--stats", stdin=dumps(CHAT))
    assert contents(json.loads(result.stdout)) == MARKED
    assert result.stderr.startswith("ctxpack: <stdin>: 2 tool results truncated")
    assert "tokens" in result.stderr and result.stderr.count("\n") == 1


def test_output_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    result = invoke("micro", "-o", str(target), stdin=dumps(CHAT))
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert contents(json.loads(target.read_bytes())) == MARKED
    assert [name for name in os.listdir(tmp_path) if "ctxpack-tmp" in name] == []


def test_output_file_keeps_an_existing_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    os.chmod(target, 0o600)
    invoke("micro", "-o", str(target), stdin=dumps(CHAT))
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert contents(json.loads(target.read_bytes())) == MARKED


def test_output_into_a_missing_directory_is_74(tmp_path: Path) -> None:
    result = invoke("micro", "-o", str(tmp_path / "no" / "out.json"), stdin=dumps(CHAT))
    assert result.exit_code == 74
    assert result.stdout == ""
    assert result.stderr.startswith("ctxpack: ") and result.stderr.count("\n") == 1
    assert "out.json" in result.stderr


@pytest.fixture
def chats(tmp_path: Path) -> list[Path]:
    paths = []
    for name in ("alpha.json", "beta.jsonl", "gamma 1.json"):
        path = tmp_path / "in" / name
        path.parent.mkdir(exist_ok=True)
        data = (
            b"".join(dumps(m) + b"\n" for m in CHAT)
            if name.endswith(".jsonl")
            else json.dumps(CHAT, indent=2, ensure_ascii=False).encode()
        )
        path.write_bytes(data)
        paths.append(path)
    return paths


def test_in_place_several_files_with_snapshots(chats: list[Path], tmp_path: Path) -> None:
    originals = [path.read_bytes() for path in chats]
    snaps = tmp_path / "snaps"
    result = invoke("micro", "--in-place", "--transcript-dir", str(snaps), *map(str, chats))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    for path in chats:
        data = path.read_bytes()
        messages = (
            [json.loads(line) for line in data.splitlines()]
            if path.suffix == ".jsonl"
            else json.loads(data)
        )
        assert contents(messages) == MARKED
    assert chats[1].read_bytes().count(b"\n") == len(CHAT)  # still JSONL
    saved = sorted(name for name in os.listdir(snaps) if not name.endswith(".meta"))
    sessions = [session_id_for_file(path) for path in chats]
    assert [name.rsplit("_", 1)[0] for name in saved] == sessions
    for name, original in zip(saved, originals, strict=True):
        assert (snaps / name).read_bytes() == original  # the snapshot holds what the file held
    for sid, path, original in zip(sessions, chats, originals, strict=True):
        restored = invoke("restore", "--session-id", sid, "--transcript-dir", str(snaps))
        assert json.loads(restored.stdout) == CHAT
        assert path.read_bytes() != original


def test_in_place_uses_the_transcript_dir_from_the_environment(
    chats: list[Path], transcripts: Path
) -> None:
    result = invoke("micro", "-i", str(chats[0]))
    assert result.exit_code == 0, result.stderr
    alpha = session_id_for_file(chats[0])
    assert {name.split("_")[0] for name in os.listdir(transcripts)} == {alpha}
    assert json.loads(invoke("restore", "--session-id", alpha).stdout) == CHAT


def test_in_place_backup(chats: list[Path]) -> None:
    original = chats[0].read_bytes()
    result = invoke("micro", "--in-place", "--backup", ".orig", str(chats[0]))
    assert result.exit_code == 0, result.stderr
    assert chats[0].with_name("alpha.json.orig").read_bytes() == original
    assert contents(json.loads(chats[0].read_bytes())) == MARKED


def test_in_place_with_nothing_to_do_leaves_the_file_alone(tmp_path: Path, transcripts) -> None:
    path = tmp_path / "small.json"
    path.write_bytes(dumps(CHAT[:2]))
    before = fingerprint(path)
    result = invoke("micro", "--in-place", str(path))
    assert result.exit_code == 0
    assert fingerprint(path) == before
    assert not transcripts.exists() or os.listdir(transcripts) == []


def test_in_place_no_transcript(chats: list[Path], transcripts: Path) -> None:
    assert invoke("micro", "-i", "--no-transcript", str(chats[0])).exit_code == 0
    assert contents(json.loads(chats[0].read_bytes())) == MARKED
    assert not transcripts.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--in-place", "-o", "x.json", "{file}"],
        ["--in-place", "-"],
        ["--backup", ".bak", "{file}"],
        ["-o", "x.json", "{file}", "{file}"],
        ["--keep-recent", "three", "{file}"],
        ["--min-chars", "-1", "{file}"],
        ["--compat", "nonsense", "{file}"],
        ["--no-such-flag", "{file}"],
    ],
)
def test_usage_errors_exit_2_and_touch_nothing(args: list[str], chats: list[Path]) -> None:
    before = fingerprint(chats[0])
    argv = [str(chats[0]) if arg == "{file}" else arg for arg in args]
    result = invoke("micro", *argv, stdin=dumps(CHAT))
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("ctxpack: ") and line.endswith("--help')")
    assert fingerprint(chats[0]) == before
    assert not Path("x.json").exists()


@pytest.mark.parametrize("session_id", ["a/b", "..", "../escape", ".hidden", "", "x" * 129])
def test_bad_session_id_is_a_usage_error(
    session_id: str, chats: list[Path], transcripts: Path
) -> None:
    before = fingerprint(chats[0])
    result = invoke("micro", "--in-place", "--session-id", session_id, str(chats[0]))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("ctxpack: invalid session id")
    assert result.stderr.count("\n") == 1
    assert fingerprint(chats[0]) == before
    assert not transcripts.exists()


def test_bad_session_id_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXPACK_SESSION_ID", "../../etc")
    result = invoke("micro", stdin=dumps(CHAT))
    assert result.exit_code == 2
    assert result.stdout == ""


# --- restore -------------------------------------------------------------------------------------


def test_restore_list_newest_first(chats: list[Path], transcripts: Path) -> None:
    for path in (chats[0], chats[2], chats[0]):
        path.write_bytes(dumps(CHAT))
        assert invoke("micro", "-i", str(path)).exit_code == 0
    result = invoke("restore", "--list")
    assert result.exit_code == 0 and result.stderr == ""
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    alpha, gamma = session_id_for_file(chats[0]), session_id_for_file(chats[2])
    assert [row[1] for row in rows] == [alpha, gamma, alpha]  # newest first
    assert [row[2] for row in rows] == ["original"] * 3
    assert [row[5] for row in rows] == [str(chats[0]), str(chats[2]), str(chats[0])]


def test_restore_pretty(chats: list[Path]) -> None:
    invoke("micro", "-i", str(chats[0]))
    result = invoke("restore", "--session-id", session_id_for_file(chats[0]), "--pretty")
    assert json.loads(result.stdout) == CHAT
    assert result.stdout.startswith("[\n  {")


def test_restore_unknown_session_is_66() -> None:
    result = invoke("restore", "--session-id", "never")
    assert result.exit_code == 66
    assert result.stdout == ""
    assert "never" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("session_id", ["../x", "a/b", ".."])
def test_restore_refuses_a_bad_session_id(session_id: str) -> None:
    result = invoke("restore", "--session-id", session_id)
    assert result.exit_code == 2
    assert result.stdout == ""


@pytest.mark.parametrize("args", [[], ["--list", "--prune"], ["--list", "--result"]])
def test_restore_needs_exactly_one_of_its_options(args: list[str]) -> None:
    result = invoke("restore", *args)
    assert result.exit_code == 2
    assert result.stdout == ""


def test_restore_list_with_no_snapshots_is_empty() -> None:
    result = invoke("restore", "--list")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


# --- bad input: every case (test_unix runs one per exit status in a real process) ---------------


def parse_error(data: bytes, name: str) -> str:
    """What the parser says of ``data`` (tests/golden/parse_errors.txt holds each message)."""
    with pytest.raises(InputError) as raised:
        parse(data, name)
    return str(raised.value)


@pytest.mark.parametrize(("case", "data", "status", "place"), BAD_INPUTS, ids=BAD_IDS)
def test_bad_input(
    case: str, data: bytes, status: int, place: str, tmp_path: Path, transcripts: Path
) -> None:
    """One line naming the file and the place, the parser's own message, and nothing touched:
    from a file (micro, estimate, micro --in-place) and from stdin."""
    path = bad_file(tmp_path, case, data)
    before = fingerprint(path)
    for args in (["micro"], ["estimate"], ["micro", "--in-place"]):
        result = invoke(*args, str(path))
        assert result.exit_code == status, (args, result.stderr)
        line = assert_one_line_error(result.stdout, result.stderr, str(path), place)
        assert line == f"ctxpack: {parse_error(data, str(path))}\n"
        assert fingerprint(path) == before
    assert sorted(os.listdir(tmp_path)) == sorted(["home", "work", path.name])
    assert not transcripts.exists()
    result = invoke("micro", stdin=data)
    assert result.exit_code == status
    assert_one_line_error(result.stdout, result.stderr, "<stdin>", place)
