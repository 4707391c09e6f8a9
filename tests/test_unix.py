"""What only a real process shows: exit statuses, pipes, terminals, signals, files and modes.

Every test runs the installed ``ctxpack`` executable (beside the test's Python) in a temporary
working directory, with snapshots going to the test's own transcript directory.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from bad_inputs import BAD_INPUTS, assert_one_line_error, bad_file
from helpers import CORPUS, CTXPACK, REPO, corpus_files, dumps, fingerprint, run

from cli.exit_codes import ExitStatus
from compactor_core.snapshots.base import session_id_for_file

BIG = CORPUS / "cc_entire_1284c080.json"  # 1 MB
MEDIUM = CORPUS / "cc_kimi_516b7270.json"  # 120 kB, Chinese


def turn(call_id: str, tool: str, result: object) -> list[dict]:
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": tool}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
        },
    ]


OUTPUT = "output number {}: " + "ok " * 12  # long enough for its marker to be shorter
CHAT = [{"role": "user", "content": "修复这个错误"}] + [
    message for n in range(5) for message in turn(f"t{n}", "bash", OUTPUT.format(n))
]


def test_the_executable_is_installed() -> None:
    assert CTXPACK.is_file() and os.access(CTXPACK, os.X_OK)
    result = run("--help")
    assert result.returncode == 0
    lines = [line.split() for line in result.stdout.decode().splitlines()]
    assert ["65", "input", "is", "not", "a", "valid", "conversation"] in lines
    assert ["130", "interrupted"] in lines


# --- bad input -----------------------------------------------------------------------------------
# Every case of bad_inputs runs in process (test_cli_micro), its message in tests/golden/
# parse_errors.txt; here, through the real executable: one case per exit status, from a file and
# from stdin, and every case in one real batch.

ONE_PER_STATUS = list({case[2]: case for case in reversed(BAD_INPUTS)}.values())


@pytest.mark.parametrize(("case", "data", "status", "place"), ONE_PER_STATUS)
def test_bad_input_file(case: str, data: bytes, status: int, place: str, tmp_path: Path) -> None:
    path = bad_file(tmp_path, case, data)
    before = fingerprint(path)
    result = run("micro", path)
    assert result.returncode == status, result.stderr
    assert_one_line_error(result.stdout, result.stderr, str(path), place)
    assert fingerprint(path) == before


@pytest.mark.parametrize(("case", "data", "status", "place"), ONE_PER_STATUS)
def test_bad_input_on_stdin(case: str, data: bytes, status: int, place: str) -> None:
    result = run("estimate", stdin=data)
    assert result.returncode == status
    assert_one_line_error(result.stdout, result.stderr, "<stdin>", place)


def test_bad_input_files_in_place_are_left_alone(tmp_path: Path, transcripts: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    paths = [bad_file(folder, case, data) for case, data, _, _ in BAD_INPUTS]
    before = {path: fingerprint(path) for path in paths}
    result = run("micro", "--in-place", "--backup", ".bak", "-j", "2", *paths)
    assert result.returncode == ExitStatus.DATA_ERROR
    assert result.stdout == b""
    stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == len(paths) + 1  # one a file, and the batch's summary
    for path, (_, _, _, place) in zip(paths, BAD_INPUTS, strict=True):
        [line] = [line for line in lines if line.startswith(f"ctxpack: {path}: ")]
        assert place in line
        assert fingerprint(path) == before[path]
    assert lines[-1].startswith(f"ctxpack: {len(paths)} files, 0 changed, {len(paths)} failed")
    assert sorted(os.listdir(folder)) == sorted(path.name for path in paths)  # no backup
    assert not transcripts.exists()


def test_at_least_25_bad_inputs() -> None:
    assert len(BAD_INPUTS) >= 25


def test_missing_file_is_66(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    for args in (["estimate"], ["micro"], ["micro", "--in-place"]):
        result = run(*args, missing)
        assert result.returncode == ExitStatus.NO_INPUT
        assert_one_line_error(result.stdout, result.stderr, str(missing), "no such file")
    assert not missing.exists()


def test_directory_is_66(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    for args in (["estimate"], ["micro", "--in-place"]):
        result = run(*args, folder)
        assert result.returncode == ExitStatus.NO_INPUT
        assert_one_line_error(result.stdout, result.stderr, str(folder), "directory")


# Each command suggests only the flags it takes, and only those still missing.
DIRECTORY_HINTS = [
    (["estimate"], "add -r/--recursive"),
    (["estimate", "--summary"], "add -r/--recursive"),
    (["micro"], "add -r with --in-place or --output-dir"),
    (["micro", "-r"], "-r needs --in-place or --output-dir"),
    (["full", "-r"], "-r needs --in-place or --output-dir"),
    (["micro", "--in-place"], "add -r/--recursive"),
    (["auto", "--output-dir", "out"], "add -r/--recursive"),
    (["check"], None),
]


@pytest.mark.parametrize(("args", "hint"), DIRECTORY_HINTS)
def test_a_directory_error_suggests_the_flags_of_its_command(
    tmp_path: Path, args: list[str], hint: str | None
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.json").write_bytes(dumps(CHAT))
    result = run(*args, folder, cwd=tmp_path)
    assert result.returncode == ExitStatus.NO_INPUT
    tail = f" ({hint})" if hint else ""
    assert result.stderr.decode() == f"ctxpack: {folder}: is a directory{tail}\n"
    assert result.stdout == b""


def test_a_directory_among_files_gets_the_hint_and_the_rest_go_on(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    good = tmp_path / "a.json"
    good.write_bytes(dumps(CHAT))
    result = run("micro", good, folder)
    assert result.returncode == ExitStatus.NO_INPUT
    assert result.stderr.decode() == (
        f"ctxpack: {folder}: is a directory (add -r with --in-place or --output-dir)\n"
    )
    assert b"[truncated: bash result" in result.stdout


def test_path_through_a_file_is_66(tmp_path: Path) -> None:
    file = tmp_path / "file.json"
    file.write_bytes(b"[]")
    result = run("estimate", file / "inner.json")
    assert result.returncode == ExitStatus.NO_INPUT
    assert_one_line_error(result.stdout, result.stderr, str(file / "inner.json"))


def test_dangling_link_is_66(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "gone.json")
    result = run("micro", "--in-place", link)
    assert result.returncode == ExitStatus.NO_INPUT
    assert_one_line_error(result.stdout, result.stderr, str(link))
    assert link.is_symlink() and not (tmp_path / "gone.json").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_66(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_bytes(dumps(CHAT))
    secret.chmod(0)
    result = run("estimate", secret)
    assert result.returncode == ExitStatus.NO_INPUT
    assert_one_line_error(result.stdout, result.stderr, str(secret))


def test_one_bad_file_among_good_ones(tmp_path: Path) -> None:
    good = [tmp_path / "a.json", tmp_path / "c.json"]
    bad = tmp_path / "b.json"
    for path in good:
        path.write_bytes(dumps(CHAT))
    bad.write_bytes(b'[{"role":"user"},{"role":2}]')
    before = fingerprint(bad)
    result = run("micro", "--in-place", "-j", "1", good[0], bad, good[1])
    assert result.returncode == ExitStatus.DATA_ERROR
    assert result.stdout == b""
    assert f'{bad}: messages[1]: "role" must be a string'.encode() in result.stderr
    assert b"Traceback" not in result.stderr
    assert fingerprint(bad) == before
    for path in good:
        assert b"[truncated: bash result" in path.read_bytes()


def test_estimate_goes_on_after_a_bad_file(tmp_path: Path) -> None:
    """As micro does over several files: the good ones counted, one line, the bad one's status."""
    good = [tmp_path / "a.json", tmp_path / "c.json"]
    for path in good:
        path.write_bytes(dumps(CHAT))
    tokens = int(run("estimate", good[0]).stdout)
    bad, missing = tmp_path / "b.json", tmp_path / "missing.json"
    bad.write_bytes(b'[{"role":"user"},{"role":2}]')
    result = run("estimate", good[0], bad, good[1])
    assert result.returncode == ExitStatus.DATA_ERROR
    assert result.stdout.decode() == f"{tokens}\t{good[0]}\n{tokens}\t{good[1]}\n"
    assert result.stderr.decode() == (
        f'ctxpack: {bad}: messages[1]: "role" must be a string, got a number\n'
    )
    # the failure decides even when a good file is over the threshold
    over = run("estimate", "-q", "--over", "0", good[0], missing)
    assert (over.returncode, over.stdout) == (ExitStatus.NO_INPUT, b"")
    assert over.stderr.decode() == f"ctxpack: {missing}: no such file\n"
    mixed = run("estimate", "--json", bad, missing, good[0])
    assert mixed.returncode == ExitStatus.NOT_OVER  # failures that differ, as in a batch
    assert [json.loads(line)["file"] for line in mixed.stdout.splitlines()] == [str(good[0])]


# --- usage errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["micro", "--in-place", "-"],
        ["micro", "--in-place", "-o", "out.json", "{file}"],
        ["micro", "--backup", ".bak", "{file}"],
        ["micro", "-o", "out.json", "{file}", "{file}"],
        ["micro", "--keep-recent", "x", "{file}"],
        ["estimate", "--threshold", "1.5", "{file}"],
        ["estimate", "--nope", "{file}"],
        ["restore"],
        ["no-such-command"],
    ],
)
def test_usage_error_is_2_and_touches_nothing(args: list[str], tmp_path: Path) -> None:
    file = tmp_path / "chat.json"
    file.write_bytes(dumps(CHAT))
    before = fingerprint(file)
    result = run(*(str(file) if arg == "{file}" else arg for arg in args), stdin=dumps(CHAT))
    assert result.returncode == ExitStatus.USAGE
    assert result.stdout == b""
    assert b"Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()  # one line, not click's usage block
    assert line.startswith(b"ctxpack: ") and line.endswith(b"--help')")
    assert fingerprint(file) == before
    assert not Path("out.json").exists()


def test_terminal_on_stdin_and_no_file_is_2() -> None:
    controller, terminal = pty.openpty()
    try:
        for command in ("estimate", "micro"):
            result = subprocess.run(
                [str(CTXPACK), command], stdin=terminal, capture_output=True, timeout=30
            )
            assert result.returncode == ExitStatus.USAGE
            assert result.stdout == b""
            assert b"no input" in result.stderr
    finally:
        os.close(controller)
        os.close(terminal)


def test_terminal_on_stdin_with_a_file_is_fine(tmp_path: Path) -> None:
    file = tmp_path / "chat.json"
    file.write_bytes(dumps(CHAT))
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run(
            [str(CTXPACK), "estimate", str(file)], stdin=terminal, capture_output=True, timeout=30
        )
    finally:
        os.close(controller)
        os.close(terminal)
    assert result.returncode == 0
    assert result.stdout.strip().isdigit()


def test_closed_stdin_is_a_usage_error_or_unreadable() -> None:
    def close_stdin() -> None:
        os.close(0)

    for args, status in (
        (["estimate"], ExitStatus.USAGE),
        (["estimate", "-"], ExitStatus.NO_INPUT),
    ):
        result = subprocess.run(
            [str(CTXPACK), *args], preexec_fn=close_stdin, capture_output=True, timeout=30
        )
        assert result.returncode == status
        assert b"Traceback" not in result.stderr


def test_closed_stdout_is_74(tmp_path: Path) -> None:
    file = tmp_path / "chat.json"
    file.write_bytes(dumps(CHAT))
    result = subprocess.run(
        [str(CTXPACK), "estimate", str(file)],
        preexec_fn=lambda: os.close(1),
        stderr=subprocess.PIPE,
        timeout=30,
    )
    assert result.returncode == ExitStatus.CANT_WRITE
    assert result.stderr == b"ctxpack: <stdout>: standard output is closed\n"


def test_full_disk_on_stdout_is_74(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    file = tmp_path / "chat.json"
    file.write_bytes(dumps(CHAT))
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [str(CTXPACK), "micro", str(file)], stdout=full, stderr=subprocess.PIPE, timeout=30
        )
    assert result.returncode == ExitStatus.CANT_WRITE
    assert result.stderr.count(b"\n") == 1 and b"<stdout>" in result.stderr


# --- valid JSON that orjson refuses comes back intact --------------------------------------------

ODD = (
    b'\xef\xbb\xbf[{"role":"user","content":"lone \\ud800 surrogate",'
    b'"n":123456789012345678901234567890,"m":-98765432109876543210}]\n'
)


def test_odd_valid_json_streams_back_byte_for_byte() -> None:
    result = run("micro", stdin=ODD)
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == ODD
    assert run("estimate", stdin=ODD).stdout == b"5\n"  # "lone \ud800 surrogate": 4.25


def test_odd_valid_json_survives_in_place(tmp_path: Path, transcripts: Path) -> None:
    odd = json.loads(ODD[3:].decode())
    messages = odd + turn("a", "bash", "big output " * 4 + "\ud800") + turn("b", "x", "y") * 3
    path = tmp_path / "odd.json"
    data = b"\xef\xbb\xbf" + json.dumps(messages).encode()
    path.write_bytes(data)
    result = run("micro", "--in-place", "--keep-recent", "1", path)
    assert result.returncode == 0, result.stderr
    out = path.read_bytes()
    assert out.startswith(b"\xef\xbb\xbf[")
    compacted = json.loads(out[3:].decode())
    assert compacted[0] == odd[0]
    assert compacted[0]["n"] == 123456789012345678901234567890
    assert compacted[2]["content"][0]["content"] == "[truncated: bash result, 45 chars]"
    restored = run("restore", "--session-id", session_id_for_file(path))
    assert json.loads(restored.stdout) == messages
    assert run("restore", path).returncode == 0
    assert path.read_bytes() == data


# --- pipes ---------------------------------------------------------------------------------------


def shell(script: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PATH=f"{CTXPACK.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(
        ["bash", "-c", "set -o pipefail\n" + script], capture_output=True, env=env, timeout=60
    )


def test_pipeline_of_filters(tmp_path: Path) -> None:
    source = CORPUS / "cc_kimi_516b7270.json"
    result = shell(
        f"cat '{source}' | ctxpack micro --keep-recent 0 | ctxpack micro | ctxpack estimate"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    before = int(run("estimate", source).stdout)
    assert 0 < int(result.stdout) < before
    direct = run("micro", "--keep-recent", "0", source).stdout
    piped = shell(f"ctxpack micro --keep-recent 0 < '{source}'").stdout
    assert direct == piped


def test_threshold_in_a_shell_condition() -> None:
    result = shell(
        f"if ctxpack estimate -q --over 1000 '{BIG}'; then echo big; else echo small; fi;"
        f"if ctxpack estimate -q --threshold 100000000 '{BIG}'; then echo big; else echo small; fi"
    )
    assert result.stdout == b"big\nsmall\n"
    assert result.stderr == b""


def test_estimate_exit_statuses_and_json() -> None:
    tokens = int(run("estimate", MEDIUM).stdout)
    assert run("estimate", "--threshold", tokens - 1, MEDIUM).returncode == 0
    assert run("estimate", "--threshold", tokens, MEDIUM).returncode == 1
    quiet = run("estimate", "-q", "--over", tokens - 1, MEDIUM)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, b"", b"")
    report = json.loads(run("estimate", "--json", MEDIUM).stdout)
    assert report["tokens"] == tokens
    assert report["by_tool"] and report["by_role"]
    assert int(run("estimate", "--compat", "bareagent", MEDIUM).stdout) <= tokens


def test_head_closing_the_pipe_ends_quietly() -> None:
    producer = subprocess.Popen(
        [str(CTXPACK), "micro", str(BIG)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    head = subprocess.run(["head", "-c", "10"], stdin=producer.stdout, capture_output=True)
    producer.stdout.close()
    stderr = producer.stderr.read()
    producer.stderr.close()
    status = producer.wait(timeout=60)
    assert head.stdout == b'[{"role":"'
    assert stderr == b""
    assert status in (0, ExitStatus.BROKEN_PIPE)


def test_writing_to_a_closed_pipe_ends_quietly() -> None:
    reader, writer = os.pipe()
    os.close(reader)  # nobody will ever read: the first write fails with EPIPE
    try:
        result = subprocess.run(
            [str(CTXPACK), "micro", str(BIG)], stdout=writer, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(writer)
    assert result.stderr == b""
    assert result.returncode == ExitStatus.BROKEN_PIPE


def test_interrupt_is_130() -> None:
    process = subprocess.Popen(
        [str(CTXPACK), "estimate"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_until_reading_stdin(process.pid)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == ExitStatus.INTERRUPTED
    assert stdout == b""
    assert stderr == b"ctxpack: interrupted\n"


def wait_until_reading_stdin(pid: int) -> None:
    """Until the process blocks in read(0, ...); a fixed pause where /proc cannot tell."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            fields = Path(f"/proc/{pid}/syscall").read_text().split()
        except OSError:
            time.sleep(1.5)
            return
        if fields[:2] in (["0", "0x0"], ["63", "0x0"]):  # read(0, ...): x86-64, arm64 numbers
            time.sleep(0.05)
            return
        time.sleep(0.02)
    time.sleep(0.5)


# --- output files --------------------------------------------------------------------------------


def test_output_file_is_replaced_atomically(tmp_path: Path) -> None:
    # A reader never sees a mix: every read of the target is one of the results, whole.
    target = tmp_path / "out.json"
    old = json.dumps(CHAT).encode()
    target.write_bytes(old)
    keeps = ["0", "3"]
    results = {run("micro", "--keep-recent", keep, MEDIUM).stdout for keep in keeps}
    assert len(results) == 2
    seen: set[bytes] = set()
    reads = 0
    stop = threading.Event()

    def watch() -> None:
        nonlocal reads
        while not stop.is_set():
            data = target.read_bytes()
            reads += 1
            if data != old and data not in results:
                seen.add(data[:100])

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for keep in keeps * 2:
            result = run("micro", "--keep-recent", keep, "-o", target, MEDIUM)
            assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    finally:
        stop.set()
        watcher.join()
    assert reads > 10
    assert seen == set()
    assert [name for name in os.listdir(tmp_path) if "ctxpack-tmp" in name] == []


def test_in_place_on_corpus_copies_with_snapshots_and_restore(tmp_path: Path) -> None:
    snaps = tmp_path / "snaps"  # does not exist yet
    copies = []
    for source in corpus_files():
        copy = tmp_path / source.name
        copy.write_bytes(source.read_bytes())
        copies.append(copy)
    result = run("micro", "--in-place", "--transcript-dir", snaps, *copies)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    assert b"Traceback" not in result.stderr
    assert stat.S_IMODE(snaps.stat().st_mode) == 0o700
    names = sorted(os.listdir(snaps))
    data = [name for name in names if not name.endswith(".meta")]
    assert [name.rsplit("_", 1)[0] for name in data] == sorted(map(session_id_for_file, copies))
    for name in names:
        assert stat.S_IMODE((snaps / name).stat().st_mode) == 0o600
    for copy, source in zip(copies, corpus_files(), strict=True):
        compacted = json.loads(copy.read_bytes())
        original = json.loads(source.read_bytes())
        assert len(compacted) == len(original)
        assert compacted != original
        session = session_id_for_file(copy)
        restored = run("restore", "--transcript-dir", snaps, "--session-id", session)
        assert restored.returncode == 0
        assert json.loads(restored.stdout) == original
    listing = run("restore", "--list", "--transcript-dir", snaps).stdout.decode().splitlines()
    sessions = sorted(line.split("\t")[1] for line in listing)
    assert sessions == sorted(map(session_id_for_file, copies))
    restored = run("restore", "--transcript-dir", snaps, *copies)
    assert restored.returncode == 0, restored.stderr
    for copy, source in zip(copies, corpus_files(), strict=True):
        assert copy.read_bytes() == source.read_bytes()


def test_in_place_backup_suffix(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    original = json.dumps(CHAT, indent=2).encode()
    path.write_bytes(original)
    result = run("micro", "-i", "--backup", "~", path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "chat.json~").read_bytes() == original
    assert b"[truncated: bash result, 53 chars]" in path.read_bytes()


@pytest.mark.parametrize("session_id", ["a/b", "..", "../../etc", "nul\x01"])
def test_session_ids_with_slashes_or_dots_are_a_usage_error(
    session_id: str, tmp_path: Path, transcripts: Path
) -> None:
    path = tmp_path / "chat.json"
    path.write_bytes(dumps(CHAT))
    before = fingerprint(path)
    result = run("micro", "--in-place", "--session-id", session_id, path)
    assert result.returncode == ExitStatus.USAGE
    assert_one_line_error(result.stdout, result.stderr, "invalid session id")
    assert fingerprint(path) == before
    assert not transcripts.exists()
    restore = run("restore", "--session-id", session_id)
    assert restore.returncode == ExitStatus.USAGE
    assert_one_line_error(restore.stdout, restore.stderr, "invalid session id")


# --- the executable ends without freeing what it read --------------------------------------------

_KEEPING = """\
import atexit, sys
from cli import io
atexit.register(lambda: print("teardown ran"))
def command():
    if sys.argv[2] == "keep":
        io.end_at_once([1])
    print("result")
    sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else sys.argv[1])
io.run_to_the_end(command)
"""


@pytest.mark.parametrize("status", ["0", "1", "3", "a message"])
def test_a_run_that_kept_what_it_read_ends_at_once_with_its_output_and_status(
    status: str,
) -> None:
    """Nothing of the process's teardown runs, but its buffered output is all written and its
    status is the one it exited with (a message: on stderr, status 1)."""
    done = subprocess.run(
        [sys.executable, "-c", _KEEPING, status, "keep"], capture_output=True, cwd=REPO
    )
    assert done.stdout == b"result\n"
    assert done.returncode == (int(status) if status.isdigit() else 1)
    assert done.stderr == (b"" if status.isdigit() else b"a message\n")


def test_a_run_that_kept_nothing_ends_as_any_program_does() -> None:
    done = subprocess.run([sys.executable, "-c", _KEEPING, "3", "-"], capture_output=True, cwd=REPO)
    assert (done.stdout, done.returncode) == (b"result\nteardown ran\n", 3)


_TEARDOWN_TOLD = """\
import atexit, sys
atexit.register(lambda: print("teardown ran", file=sys.stderr))
sys.argv = ["ctxpack", *sys.argv[1:]]
from cli.entry import main
main()
"""


@pytest.mark.parametrize("command", [["micro"], ["auto"], ["estimate"], ["config", "micro"]])
def test_the_filters_end_at_once_and_the_other_commands_as_any_program(
    command: list[str],
) -> None:
    """A filter (micro, auto, estimate to standard output) ends without a teardown; a command
    that is not one ends as any program does."""
    done = subprocess.run(
        [sys.executable, "-c", _TEARDOWN_TOLD, *command],
        input=dumps([{"role": "user", "content": "hi"}]),
        capture_output=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0 and done.stdout, done.stderr
    filter_run = command[0] != "config"
    assert (b"teardown ran" in done.stderr) is not filter_run
