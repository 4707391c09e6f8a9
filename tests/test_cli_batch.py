"""Issue 5 through the real executable: batches over files and folders, reports, exit statuses,
a SIGKILL midway, a progress bar on a terminal, and bounded concurrency against a slow server.

The core-level decisions (links, read-only files, files changing underneath) are in
``test_batch.py``; here each is checked once more only where the process matters.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    CORPUS,
    CTXPACK,
    corpus_files,
    invoke,
    run,
    serve_in_background,
    still_running,
)
from test_batch import encode, expected_micro, mixed_folder, session, tree, write_session

from compactor_core.conversation.formats import parse
from compactor_core.disk.atomic import TEMP_SUFFIX
from compactor_core.snapshots.base import session_id_for_file

SUMMARY = re.compile(
    r"^ctxpack: (?P<files>\d+) files, (?P<changed>\d+) (?:would change|changed), "
    r"(?P<failed>\d+) failed, tokens (?P<before>\d+) -> (?P<after>\d+)$"
)


def summary_of(stderr: bytes) -> dict[str, int]:
    last = stderr.decode().rstrip("\n").splitlines()[-1]
    match = SUMMARY.match(last)
    assert match, f"no summary line at the end of stderr: {last!r}"
    return {key: int(value) for key, value in match.groupdict().items()}


def stderr_lines(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    return done.stderr.decode().splitlines()


def copy_corpus(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    copies = []
    for path in corpus_files():
        copy = folder / path.name
        copy.write_bytes(path.read_bytes())  # the corpus itself is read-only
        copies.append(copy)
    return copies


needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="tests/corpus is not there")


# --- the same result as the single-file command --------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("command", ["micro", "auto"])
def test_in_place_results_equal_the_single_file_command(tmp_path: Path, command: str) -> None:
    # auto's threshold sends every corpus file to full compaction (the offline summarizer) and
    # leaves the small generated ones at micro compaction.
    root = tmp_path / "d"
    files = copy_corpus(root / "corpus")
    files += [
        write_session(root / f"gen/s{seed}.json", style="openai", seed=seed) for seed in (1, 2)
    ]
    files.append(write_session(root / "gen" / "small.jsonl", "jsonl", turns=1))
    options = ["--transcript-dir", tmp_path / "snaps"]
    if command == "auto":
        options += ["--threshold", "3000"]
    # the single-file command in this process (a process each would add seconds, not coverage)
    expected = {path: invoke(command, path, *options).stdout_bytes for path in files}
    originals = {path: path.read_bytes() for path in files}
    done = run(command, "-i", "-r", root, "-j", "2", *options)
    assert done.returncode == 0, done.stderr
    for path in files:
        if path.read_bytes() == originals[path]:  # unchanged: not rewritten, same messages
            assert parse(expected[path]).messages == parse(originals[path]).messages, path
        else:
            assert path.read_bytes() == expected[path], path
    assert summary_of(done.stderr)["files"] == len(files)
    assert summary_of(done.stderr)["changed"] >= len(corpus_files())


@needs_corpus
@pytest.mark.parametrize("command", ["micro", "auto"])
def test_output_dir_results_equal_the_single_file_command(tmp_path: Path, command: str) -> None:
    root = tmp_path / "d"
    files = copy_corpus(root / "a" / "b")
    files.append(write_session(root / "top.json", "envelope"))
    before = tree(root)
    options = ["--threshold", "3000"] if command == "auto" else []
    out = tmp_path / "out"
    dry = run(command, "-O", out, "-r", root, "--dry-run", *options)
    assert dry.returncode == 0 and not out.exists()
    done = run(command, "-O", out, "-r", root, "--no-transcript", *options)
    assert done.returncode == 0, done.stderr
    assert tree(root) == before
    for path in files:
        result = out / path.relative_to(root)
        expected = invoke(command, path, "--no-transcript", *options).stdout_bytes
        if result.read_bytes() == path.read_bytes():  # nothing to do: copied as it is
            assert parse(expected).messages == parse(path.read_bytes()).messages
        else:
            assert result.read_bytes() == expected, path


def test_one_and_two_workers_give_identical_files(tmp_path: Path) -> None:
    results = []
    for jobs in ("1", "2"):
        root = tmp_path / f"j{jobs}"
        mixed_folder(root)
        for seed in range(10):
            write_session(root / "many" / f"s{seed}.json", style="openai", seed=seed, turns=seed)
        done = run("micro", "-i", "-r", root, "-j", jobs, "--json", "--no-transcript")
        report = json.loads(done.stdout)
        for item in report["results"]:
            item["path"] = str(Path(item["path"]).relative_to(root))
            item["error"] = item["error"] and item["error"].replace(str(root), "ROOT")
        files = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        results.append((done.returncode, report, files, summary_of(done.stderr)))
    assert results[0] == results[1]


# --- folders -------------------------------------------------------------------------------------


def test_a_folder_without_recursive_is_an_error(tmp_path: Path) -> None:
    write_session(tmp_path / "d" / "a.json")
    before = tree(tmp_path / "d")
    done = run("micro", "-i", tmp_path / "d")
    assert done.returncode == 66
    assert stderr_lines(done) == [f"ctxpack: {tmp_path / 'd'}: is a directory (add -r/--recursive)"]
    assert tree(tmp_path / "d") == before


def test_default_globs_glob_hidden_and_transcript_folders(tmp_path: Path) -> None:
    root = tmp_path / "d"
    for name in ("a.json", "b.jsonl", "sub/c.json", ".hidden.json", ".git/d.json", "e.txt"):
        shape = "jsonl" if name.endswith("jsonl") else "array"
        write_session(root / name, shape)
    snaps = root / "snaps"  # a visible transcript folder inside the tree
    done = run("micro", "-i", "-r", root, "--json", "--transcript-dir", snaps)
    paths = {item["path"] for item in json.loads(done.stdout)["results"]}
    assert paths == {str(root / name) for name in ("a.json", "b.jsonl", "sub/c.json")}
    again = run("micro", "-i", "-r", root, "--json", "--transcript-dir", snaps)
    assert {item["path"] for item in json.loads(again.stdout)["results"]} == paths
    done = run("micro", "-i", "-r", root, "--glob", "*.txt", "--glob", ".*.json", "--json")
    paths = {item["path"] for item in json.loads(done.stdout)["results"]}
    assert paths == {str(root / ".hidden.json"), str(root / "e.txt")}


def test_colliding_outputs_are_refused_before_anything_is_done(tmp_path: Path) -> None:
    a = write_session(tmp_path / "a" / "x.json")
    b = write_session(tmp_path / "b" / "x.json")
    done = run("micro", "-O", tmp_path / "out", a, b)
    assert done.returncode == 74
    assert "would hold the results of both" in done.stderr.decode()
    assert not (tmp_path / "out").exists()


# --- mixed folders, failures, reports ------------------------------------------------------------


def test_a_mixed_folder_is_done_except_its_malformed_files(tmp_path: Path) -> None:
    root = tmp_path / "d"
    files = mixed_folder(root)
    bad = {name: tree(files[name].parent)[files[name].name] for name in ("invalid", "not_messages")}
    good = ("array", "envelope", "jsonl", "openai")
    expected = {name: expected_micro(files[name]) for name in good}
    done = run("micro", "-i", "-r", root, "-j", "2")
    assert done.returncode == 65  # every failure is invalid input
    for name in good:
        assert files[name].read_bytes() == expected[name]
    for name, before in bad.items():
        assert tree(files[name].parent)[files[name].name] == before
    lines = stderr_lines(done)
    failures = sorted(line for line in lines[:-1])
    assert failures[0].startswith(f"ctxpack: {files['invalid']}: ")
    assert failures[
        1
    ] == f"ctxpack: {files['not_messages']}: messages[0]: a message must be an " + (
        "object, got a number"
    )
    assert summary_of(done.stderr)["files"] == 7
    assert summary_of(done.stderr)["changed"] == 4
    assert summary_of(done.stderr)["failed"] == 2


def test_exit_status_is_shared_code_or_one(tmp_path: Path) -> None:
    good = write_session(tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"{}")
    missing = tmp_path / "missing.json"
    assert run("micro", "-i", good, "--no-transcript").returncode == 0
    assert run("micro", "-i", good, bad, "--no-transcript").returncode == 65
    assert run("micro", "-i", missing, good, "--no-transcript").returncode == 66
    done = run("micro", "-i", bad, missing, good, "--no-transcript")
    assert done.returncode == 1
    assert summary_of(done.stderr)["failed"] == 2
    read_only = write_session(tmp_path / "ro.json")
    read_only.chmod(0o444)
    done = run("micro", "-i", read_only, good, "--no-transcript")
    assert done.returncode == 74
    assert f"ctxpack: {read_only}: file is read-only, left as is" in done.stderr.decode()


def test_json_report_and_summary_line(tmp_path: Path) -> None:
    root = tmp_path / "d"
    files = mixed_folder(root)
    done = run("micro", "-i", "-r", root, "--json", "--transcript-dir", tmp_path / "snaps")
    report = json.loads(done.stdout)  # the report is all there is on stdout
    line = summary_of(done.stderr)
    assert report["files"] == report["done"] == line["files"] == 7
    assert report["changed"] == line["changed"] == 4
    assert report["failed"] == line["failed"] == 2
    assert report["dry_run"] is False
    assert (report["tokens_before"], report["tokens_after"]) == (line["before"], line["after"])
    assert line["after"] < line["before"]
    by_path = {item["path"]: item for item in report["results"]}
    assert by_path[str(files["array"])]["changed"] is True
    assert by_path[str(files["array"])]["truncated"] == 3
    assert by_path[str(files["small"])]["changed"] is False
    assert by_path[str(files["invalid"])]["error"].startswith(str(files["invalid"]))


def test_the_summary_line_counts_failed_summaries(tmp_path: Path) -> None:
    """Every summary fails (a model command that exits 1): micro's results stand, and the
    summary line and the report say so rather than "0 failed" alone."""
    files = [write_session(tmp_path / "d" / f"{name}.json") for name in "abc"]
    options = ["--threshold", "0", "--provider", "command", "--command", "false"]
    options += ["--policy", "every-turn"]  # micro's markers on every call: the files change
    done = run("auto", "-i", "-r", tmp_path / "d", "--json", "--no-transcript", *options)
    assert done.returncode == 0, done.stderr  # a summary failure without --strict
    report = json.loads(done.stdout)
    assert (report["failed"], report["summaries_failed"]) == (0, 3)
    before, after = report["tokens_before"], report["tokens_after"]
    names = ", ".join(str(path) for path in files)
    assert stderr_lines(done)[-1] == (
        f"ctxpack: 3 files, 3 changed, 0 failed, tokens {before} -> {after}, "
        f"3 summaries failed: {names}"
    )
    assert sum("summary failed" in line for line in stderr_lines(done)) == 3


def test_fail_fast_stops_at_the_first_failure(tmp_path: Path) -> None:
    for seed in range(30):
        path = tmp_path / "d" / f"s{seed:02}.json"
        if seed == 0:
            path.parent.mkdir()
            path.write_bytes(b"nope")
        else:
            write_session(path, seed=seed)
    done = run("micro", "-i", "-r", tmp_path / "d", "-j", "1", "--fail-fast", "--json")
    assert done.returncode == 65
    report = json.loads(done.stdout)
    assert report["done"] == 1 and report["files"] == 30
    assert "(29 not done)" in stderr_lines(done)[-1]
    assert all(b"[truncated:" not in p.read_bytes() for p in (tmp_path / "d").iterdir())
    parallel = run("micro", "-i", "-r", tmp_path / "d", "-j", "2", "--fail-fast", "--json")
    assert parallel.returncode == 65
    report = json.loads(parallel.stdout)
    assert report["done"] < 30
    rewritten = [p for p in (tmp_path / "d").iterdir() if b"[truncated:" in p.read_bytes()]
    assert report["changed"] == len(rewritten)  # what was in progress at the stop is reported


def test_no_progress_bar_off_a_terminal(tmp_path: Path) -> None:
    for seed in range(5):
        write_session(tmp_path / "d" / f"s{seed}.json", seed=seed)
    done = run("micro", "-i", "-r", tmp_path / "d", "--no-transcript")
    assert done.stdout == b""
    assert stderr_lines(done) == [summary_line_for(done)]
    assert b"\r" not in done.stderr and b"\x1b" not in done.stderr


def summary_line_for(done: subprocess.CompletedProcess[bytes]) -> str:
    line = stderr_lines(done)[-1]
    assert SUMMARY.match(line)
    return line


def test_a_progress_bar_when_stderr_is_a_terminal(tmp_path: Path) -> None:
    for seed in range(5):
        write_session(tmp_path / "d" / f"s{seed}.json", seed=seed)
    controller, terminal = pty.openpty()
    try:
        child = subprocess.Popen(
            [CTXPACK, "micro", "-i", "-r", tmp_path / "d", "--no-transcript"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
        )
        os.close(terminal)
        output = read_all(controller)
        assert child.wait(timeout=30) == 0
        assert child.stdout is not None and child.stdout.read() == b""
    finally:
        os.close(controller)
    text = output.decode()
    assert "compacting" in text and "100%" in text
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines() if line.strip()]
    assert SUMMARY.match(lines[-1])


def read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


# --- safety --------------------------------------------------------------------------------------


def test_snapshots_dry_run_and_backup(tmp_path: Path) -> None:
    root = tmp_path / "d"
    files = mixed_folder(root)
    stale = root / f".array.json.999999999.x{TEMP_SUFFIX}"  # a dead run's leftover
    stale.write_bytes(b"half")
    before = tree(root)
    snaps = tmp_path / "snaps"
    done = run("micro", "-i", "-r", root, "--dry-run", "--json", "--transcript-dir", snaps)
    assert done.returncode == 65  # the malformed files are reported in a dry run too
    assert tree(root) == before  # nothing written, nothing removed, no temp files
    assert not snaps.exists()
    assert json.loads(done.stdout)["dry_run"] is True
    assert json.loads(done.stdout)["changed"] == 4
    assert "4 would change" in stderr_lines(done)[-1]

    done = run("micro", "-i", "-r", root, "--backup", ".orig", "--transcript-dir", snaps)
    assert not stale.exists()  # the real run cleans up
    assert (root / "array.json.orig").read_bytes() == before["array.json"][0]
    assert not (root / "small.json.orig").exists()
    sessions = sorted({path.name.split("_")[0] for path in snaps.iterdir()})
    changed = [files[name] for name in ("array", "envelope", "jsonl", "openai")]
    assert sessions == sorted(session_id_for_file(path) for path in changed)
    envelope = session_id_for_file(files["envelope"])
    restored = run("restore", "--session-id", envelope, "--transcript-dir", snaps)
    assert json.loads(restored.stdout) == session(seed=2)
    assert files["small"].stat().st_mtime_ns == before["small.json"][1]


def test_no_transcript_and_unchanged_files(tmp_path: Path) -> None:
    changed = write_session(tmp_path / "d" / "a.json")
    write_session(tmp_path / "d" / "b.json", turns=2)
    same_before = tree(tmp_path / "d")["b.json"]
    done = run("micro", "-i", "-r", tmp_path / "d", "--no-transcript")
    assert done.returncode == 0
    assert b"[truncated:" in changed.read_bytes()
    assert tree(tmp_path / "d")["b.json"] == same_before
    assert not (tmp_path / "transcripts").exists()  # CTXPACK_TRANSCRIPT_DIR of the test


def test_links_in_a_batch(tmp_path: Path) -> None:
    real = write_session(tmp_path / "real" / "t.json")
    expected = expected_micro(real)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "one.json").symlink_to(real)
    (tmp_path / "d" / "two.json").symlink_to(real)
    (tmp_path / "d" / "dir").symlink_to(real.parent, target_is_directory=True)
    done = run("micro", "-i", "-r", tmp_path / "d", "--json")
    assert json.loads(done.stdout)["files"] == 1
    assert real.read_bytes() == expected
    assert (tmp_path / "d" / "one.json").is_symlink()


# --- a batch killed midway -----------------------------------------------------------------------


def test_sigkill_midway_leaves_old_or_new_files_and_a_rerun_finishes(tmp_path: Path) -> None:
    root = tmp_path / "d"
    old: dict[Path, bytes] = {}
    for seed in range(320):
        shape = ("array", "envelope", "jsonl")[seed % 3]
        path = root / f"g{seed % 4}" / f"s{seed:03}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode(session(turns=8, size=1500, seed=seed), shape))
        old[path] = path.read_bytes()
    new = {path: expected_micro(path) for path in old}
    snaps = tmp_path / "snaps"
    command = [CTXPACK, "micro", "-i", "-r", str(root), "-j", "2", "--transcript-dir", str(snaps)]
    child = subprocess.Popen(command, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_until_some_changed(old, child)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
    assert child.returncode == -signal.SIGKILL

    states = {path: path.read_bytes() for path in old}
    done_before = [path for path in old if states[path] == new[path]]
    for path, data in states.items():
        assert data in (old[path], new[path]), f"{path} is half-written"
        parse(data)
    assert 0 < len(done_before) < len(old), "the kill came too late to test anything"
    leftovers = list(tmp_path.rglob(f"*{TEMP_SUFFIX}"))
    planted = root / "g0" / f".s000.json.{dead_pid()}.zz{TEMP_SUFFIX}"
    planted.write_bytes(b"half")

    again = run(*command[1:], "--json", timeout=120)
    assert again.returncode == 0, again.stderr
    assert not list(tmp_path.rglob(f"*{TEMP_SUFFIX}")), f"not cleaned up: {leftovers}"
    assert all(path.read_bytes() == new[path] for path in old)
    report = json.loads(again.stdout)
    assert report["changed"] == len(old) - len(done_before)
    assert all(item["error"] is None for item in report["results"])


def test_ctrl_c_finishes_the_files_in_progress_and_exits_130(tmp_path: Path) -> None:
    root = tmp_path / "d"
    old: dict[Path, bytes] = {}
    for seed in range(200):
        path = write_session(root / f"s{seed:03}.json", turns=8, size=1500, seed=seed)
        old[path] = path.read_bytes()
    new = {path: expected_micro(path) for path in old}
    command = [CTXPACK, "micro", "-i", "-r", str(root), "-j", "2", "--no-transcript"]
    child = subprocess.Popen(command, stderr=subprocess.PIPE, start_new_session=True)
    wait_until_some_changed(old, child)
    os.killpg(child.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    _, stderr = child.communicate(timeout=30)
    assert child.returncode == 130
    assert stderr.decode().splitlines()[-1] == "ctxpack: interrupted"
    assert all(path.read_bytes() in (old[path], new[path]) for path in old)
    assert any(path.read_bytes() == old[path] for path in old)  # it did stop
    assert not list(tmp_path.rglob(f"*{TEMP_SUFFIX}"))  # in-progress files were finished


def test_a_worker_that_dies_is_one_line_per_file_not_done_and_70(tmp_path: Path) -> None:
    """A worker SIGKILLed midway (as the OOM killer would): no traceback, every file whole.

    The last file is a FIFO this test holds open: the worker that reads it blocks there, so it is
    found by its open file (``/proc/PID/fd``) and killed while the other files are done.
    """
    root = tmp_path.resolve() / "d"  # as /proc names the FIFO
    paths = [write_session(root / f"s{seed}.json", seed=seed) for seed in range(4)]
    new = {path: expected_micro(path) for path in paths}
    fifo = root / "z.json"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDWR)  # a writer that never writes: its reader waits
    command = [CTXPACK, "micro", "-i", "-r", str(root), "-j", "2", "--transcript-dir"]
    child = subprocess.Popen([*command, str(tmp_path / "snaps")], stderr=subprocess.PIPE)
    try:
        worker = wait_for_reader(fifo, child)
        wait_until_done(new, child)
        time.sleep(0.2)  # their reports reach the parent
        os.kill(worker, signal.SIGKILL)
        _, stderr = child.communicate(timeout=30)
    finally:
        os.close(held)
        if child.poll() is None:
            child.kill()
    assert child.returncode == 70
    assert b"Traceback" not in stderr
    assert stderr.decode().splitlines()[:-1] == [
        f"ctxpack: {fifo}: not done: a worker process died unexpectedly "
        "(the file is whole; run the batch again)"
    ]
    assert summary_of(stderr) | {"before": 0, "after": 0} == {
        "files": 5,
        "changed": 4,
        "failed": 1,
        "before": 0,
        "after": 0,
    }
    assert all(path.read_bytes() == data for path, data in new.items())  # done, still done
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert not list(tmp_path.rglob(f"*{TEMP_SUFFIX}"))


def wait_for_reader(fifo: Path, child: subprocess.Popen[bytes]) -> int:
    """The process other than this one that has ``fifo`` open: the worker reading it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and child.poll() is None:
        for pid in (int(name) for name in os.listdir("/proc") if name.isdigit()):
            if pid != os.getpid() and str(fifo) in open_files(pid):
                return pid
        time.sleep(0.01)
    raise AssertionError("no worker opened the FIFO")


def open_files(pid: int) -> set[str]:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        return {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in fds}
    except OSError:  # gone, or not ours
        return set()


def wait_until_done(new: dict[Path, bytes], child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and child.poll() is None:
        if all(path.read_bytes() == data for path, data in new.items()):
            return
        time.sleep(0.01)
    raise AssertionError("the other files were not done")


def wait_until_some_changed(old: dict[Path, bytes], child: subprocess.Popen[bytes]) -> None:
    sizes = {path: len(data) for path, data in old.items()}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and child.poll() is None:
        changed = sum(1 for path, size in sizes.items() if path.stat().st_size != size)
        if changed >= 10:
            return
        time.sleep(0.002)
    raise AssertionError("the batch ended (or stalled) before it could be killed")


def dead_pid() -> int:
    probe = subprocess.Popen(["true"])
    probe.wait()
    return probe.pid


# --- bounded concurrency against a network provider ----------------------------------------------


class SlowModel:
    """A Chat Completions server that answers after ``delay`` and records requests in flight."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.in_flight = 0
        self.most = 0
        self.requests = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else each reply's body waits ~40 ms for an ACK

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                owner.enter()
                try:
                    time.sleep(owner.delay)
                finally:
                    owner.leave()
                body = json.dumps(
                    {
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": "目标: 修复解析器。"},
                                "finish_reason": "stop",
                            }
                        ]
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = serve_in_background(self.server)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.requests += 1
            self.most = max(self.most, self.in_flight)

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def slow_model() -> Iterator[SlowModel]:
    if not (Path(__file__).parents[1] / "compactor_core" / "providers" / "openai.py").exists():
        pytest.skip("compactor_core/providers/openai.py is not written yet")
    model = SlowModel(delay=0.25)
    yield model
    model.close()


@pytest.mark.parametrize("limit", [1, 3])
def test_max_concurrency_bounds_requests_in_flight(
    tmp_path: Path, slow_model: SlowModel, limit: int
) -> None:
    for seed in range(7):
        write_session(tmp_path / "d" / f"s{seed}.json", turns=6, size=400, seed=seed)
    done = run(
        "auto",
        "--provider",
        "openai",
        "--base-url",
        slow_model.url,
        "--threshold",
        "100",
        "--max-concurrency",
        limit,
        "-i",
        "-r",
        tmp_path / "d",
        "--json",
        "--strict",
        "--no-transcript",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [item["summary"] for item in report["results"]] == ["compacted"] * 7
    assert slow_model.requests == 7
    assert slow_model.most == limit  # overlapping when allowed, never beyond the limit
    for path in (tmp_path / "d").iterdir():
        assert "目标: 修复解析器。" in path.read_text()


def test_an_output_folder_that_cannot_be_made_fails_its_files_and_the_batch_goes_on(
    tmp_path: Path,
) -> None:
    """Issue 22.7: an output folder under a file was "internal error … exit 70" and stopped the
    whole -r batch. Now each file under it is exit 74, and the others are written."""
    source = tmp_path / "in"
    (source / "blocked").mkdir(parents=True)
    for name in ("a.json", "blocked/b.json", "blocked/c.json"):
        (source / name).write_bytes(encode(session(6)))
    out = tmp_path / "out"
    out.mkdir()
    (out / "blocked").write_text("a file where a folder should be\n")
    done = run("micro", "-r", source, "--output-dir", out, "-j", "2")
    assert done.returncode == 74
    assert sorted(stderr_lines(done)[:-1]) == [
        f"ctxpack: {out}/blocked/{name}.json: cannot write: {out}/blocked is a file"
        for name in "bc"
    ]
    assert summary_of(done.stderr)["failed"] == 2
    assert (out / "a.json").read_bytes() == expected_micro(source / "a.json")


def test_an_output_folder_on_a_read_only_mount_is_74(tmp_path: Path) -> None:
    mount = tmp_path / "mount"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(mount)], check=False)
    if made.returncode != 0:
        pytest.skip("mounting a read-only tmpfs needs root")
    try:
        source = tmp_path / "in"
        source.mkdir()
        for name in ("a.json", "b.json"):
            (source / name).write_bytes(encode(session(3)))
        done = run("micro", "-r", source, "--output-dir", mount / "out")
    finally:
        subprocess.run(["umount", str(mount)], check=True)
    assert done.returncode == 74
    assert sorted(stderr_lines(done)[:-1]) == [
        f"ctxpack: {mount}/out/{name}.json: cannot write: Read-only file system" for name in "ab"
    ]


def test_workers_die_with_their_parent(tmp_path: Path) -> None:
    """Issue 22.5: the batch's parent killed alone (18 of 40 runs) left its workers rewriting
    files, then sleeping under PID 1. They die with it, wherever the batch is."""
    import psutil

    root = tmp_path / "d"
    old = {
        write_session(root / f"s{seed:03}.json", turns=8, size=1500, seed=seed): b""
        for seed in range(160)
    }
    for path in old:
        old[path] = path.read_bytes()
    new = {path: expected_micro(path) for path in old}
    command = [CTXPACK, "micro", "-i", "-r", str(root), "-j", "2", "--no-transcript"]
    for trial in range(10):
        for path, data in old.items():
            path.write_bytes(data)
        child = subprocess.Popen(command, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_until_some_changed(old, child)
            time.sleep(trial % 5 * 0.02)  # now and then a little later in the batch
            workers = psutil.Process(child.pid).children(recursive=True)
            assert len(workers) >= 2
        finally:
            child.kill()  # the parent only, as `kill -9 PID` would
            child.wait()
        survivors = still_running(workers, timeout=5)
        for worker in survivors:
            worker.kill()
        assert survivors == [], f"trial {trial}: workers outlived their parent"
        assert all(path.read_bytes() in (old[path], new[path]) for path in old)
