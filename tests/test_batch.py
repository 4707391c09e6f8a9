"""Issue 5, in the core: finding the files of a batch, doing each one safely, in parallel.

The decisions checked here are the ones written in the docstrings of
``compactor_core.batch.targets``, ``compactor_core.batch.engines``,
``compactor_core.ends.destinations`` and ``compactor_core.disk.replace`` (and the README):
hidden files and folders, the snapshot and output
folders are skipped; symbolic links to files are followed, links to folders are not walked, a file
reached twice is done once; read-only files (by their mode bits, even for root) are refused; a file
that changed on disk after it was read is left alone; unchanged results are not rewritten.
The real-process side (exit statuses, reports, SIGKILL) is in ``test_cli_batch.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from compactor_core import process as process_module
from compactor_core.batch import engines, targets
from compactor_core.batch.engines import Engine, local_chunks, run_all
from compactor_core.batch.targets import DEFAULT_GLOBS, Listing, clean_up_after_killed_runs
from compactor_core.compaction.outcome import Report
from compactor_core.compaction.pipeline import run
from compactor_core.conversation.formats import dump, parse
from compactor_core.disk import atomic
from compactor_core.disk import replace as files
from compactor_core.disk.atomic import TEMP_SUFFIX, remove_stale_temp_files
from compactor_core.disk.replace import FileState, Replacement, replace
from compactor_core.ends.destinations import InPlace
from compactor_core.ends.sources import LocalFile
from compactor_core.errors import InputError, InputUnreadable, OutputError
from compactor_core.process import Target, process
from compactor_core.providers.base import SummaryRequest
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.settings import RunSettings, Settings
from compactor_core.snapshots.base import session_id_for_file
from compactor_core.snapshots.local_store import SnapshotStore


def find_targets(
    names: list[str],
    recursive: bool,
    globs: Any = DEFAULT_GLOBS,
    output_dir: Path | None = None,
    skip: Any = (),
) -> Any:
    output = str(output_dir) if output_dir else None
    listing = Listing(names, recursive, globs, output, [str(path) for path in skip])
    return targets.find_targets(listing)


def local(path: Path, label: str | None = None) -> Target:
    """The target of a local file compacted in place."""
    return Target(LocalFile(path, label or str(path)), InPlace())


def path_of(target: Target) -> Path:
    return target.source.path


def run_batch(
    targets: list[Target], settings: RunSettings, workers: int = 1, **options: Any
) -> Any:
    engine = Engine(jobs=workers, max_concurrency=options.pop("max_concurrency", 8))
    return run_all(targets, settings, engine, **options)


# --- sessions to work on -------------------------------------------------------------------------


def session(turns: int = 6, style: str = "anthropic", size: int = 300, seed: int = 0) -> list[dict]:
    """A small agent session with ``turns`` tool calls, so micro compaction has work to do."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"请修复 bug #{seed}: the parser drops the last line."},
    ]
    for turn in range(turns):
        call_id = f"call_{seed}_{turn}"
        tool = ("bash", "read_file", "grep")[turn % 3]
        output = f"line {turn} of session {seed}: " + "x" * size + " 结果"
        if style == "anthropic":
            messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Step {turn}."},
                        {"type": "tool_use", "id": call_id, "name": tool, "input": {"n": turn}},
                    ],
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
                }
            )
        else:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": tool, "arguments": json.dumps({"n": turn})},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
    messages.append({"role": "assistant", "content": "Done: the last line is kept now."})
    return messages


def encode(messages: list[dict], shape: str = "array") -> bytes:
    """A session file's bytes in one of the accepted shapes (not ctxpack's own layout)."""
    if shape == "jsonl":
        return b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\n" for m in messages)
    if shape == "envelope":
        document: Any = {"model": "m", "max_tokens": 100, "messages": messages}
    else:
        document = messages
    return json.dumps(document, ensure_ascii=False, indent=1).encode()


def write_session(path: Path, shape: str = "array", **options: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(session(**options), shape))
    return path


def mixed_folder(root: Path) -> dict[str, Path]:
    """Arrays, envelopes, JSONL in both styles, an already compact file and malformed ones."""
    files = {
        "array": write_session(root / "array.json", seed=1),
        "envelope": write_session(root / "sub" / "envelope.json", "envelope", seed=2),
        "jsonl": write_session(root / "sub" / "deep" / "log.jsonl", "jsonl", seed=3),
        "openai": write_session(root / "openai.json", style="openai", seed=4),
        "small": write_session(root / "small.json", turns=2, seed=5),  # nothing to truncate
        "invalid": root / "broken.json",
        "not_messages": root / "sub" / "numbers.json",
    }
    files["invalid"].write_bytes(b'[{"role": "user", "content": "cut off')
    files["not_messages"].write_bytes(b"[1, 2, 3]\n")
    return files


def expected_micro(path: Path, job: RunSettings | None = None) -> bytes:
    """What the single-file command writes for ``path`` (to stdout)."""
    conversation = parse(path.read_bytes(), str(path))
    return dump(run(job or RunSettings("micro"), conversation).conversation)


def fingerprint(path: Path) -> tuple[bytes, int, int]:
    status = path.stat()
    return path.read_bytes(), status.st_mtime_ns, status.st_mode


def tree(root: Path) -> dict[str, tuple[bytes | None, int, int]]:
    """Every file and folder under ``root`` (itself included): contents, mtime, mode.

    A folder's mtime changes when an entry is created or removed in it, temporary files included.
    """
    found = {}
    for path in [root, *root.rglob("*")]:
        status = path.lstat()
        data = path.read_bytes() if stat.S_ISREG(status.st_mode) else None
        found[str(path.relative_to(root))] = (data, status.st_mtime_ns, status.st_mode)
    return found


def in_place(snapshots: Path | None = None, **options: Any) -> RunSettings:
    store = SnapshotStore(snapshots) if snapshots else None
    dry_run = options.pop("dry_run", False)
    job = options.pop("job", RunSettings("micro", measure=True))
    return dataclasses.replace(job, snapshots=store, dry_run=dry_run, **options)


def do(
    targets: list[Target], settings: RunSettings, workers: int = 1, **options: Any
) -> dict[str, Report]:
    reports = run_batch(targets, settings, workers, **options)
    return {report.label: report for report in reports}


def labels(targets: list[Target], root: Path) -> list[str]:
    return [str(Path(target.label).relative_to(root)) for target in targets]


# --- finding the files ---------------------------------------------------------------------------


def test_a_folder_needs_recursive(tmp_path: Path) -> None:
    write_session(tmp_path / "d" / "a.json")
    with pytest.raises(InputUnreadable, match="is a directory"):
        find_targets([str(tmp_path / "d")], recursive=False)


def test_folders_are_walked_for_json_and_jsonl_by_default(tmp_path: Path) -> None:
    root = tmp_path / "d"
    mixed_folder(root)
    (root / "notes.txt").write_text("not a session")
    (root / "sub" / "data.json.bak").write_text("[]")
    found = labels(find_targets([str(root)], recursive=True), root)
    assert sorted(found) == [
        "array.json",
        "broken.json",
        "openai.json",
        "small.json",
        "sub/deep/log.jsonl",
        "sub/envelope.json",
        "sub/numbers.json",
    ]


def test_glob_chooses_the_files(tmp_path: Path) -> None:
    root = tmp_path / "d"
    mixed_folder(root)
    (root / "x.session").write_text("[]")
    found = labels(find_targets([str(root)], True, ["*.jsonl", "*.session"]), root)
    assert sorted(found) == ["sub/deep/log.jsonl", "x.session"]


def test_hidden_files_and_folders_are_skipped_unless_a_pattern_asks(tmp_path: Path) -> None:
    root = tmp_path / "d"
    write_session(root / "a.json")
    write_session(root / ".hidden.json")
    write_session(root / ".git" / "b.json")
    write_session(root / ".transcripts" / "c.json")
    assert labels(find_targets([str(root)], True), root) == ["a.json"]
    assert labels(find_targets([str(root)], True, [".*.json"]), root) == [".hidden.json"]


def test_the_snapshot_and_output_folders_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "d"
    write_session(root / "a.json")
    write_session(root / "snaps" / "a_2026-01-01T00-00-00-000000.jsonl", "jsonl")
    write_session(root / "out" / "a.json")  # a previous run's results
    found = find_targets([str(root)], True, output_dir=root / "out", skip=[root / "snaps"])
    assert labels(found, root) == ["a.json"]


def test_files_named_directly_are_taken_whatever_their_name(tmp_path: Path) -> None:
    path = write_session(tmp_path / ".odd.name")
    assert [path_of(target) for target in find_targets([str(path)], False)] == [path]


def test_links_to_files_are_followed_once_links_to_folders_not_walked(tmp_path: Path) -> None:
    real = write_session(tmp_path / "real" / "t.json")
    root = tmp_path / "d"
    root.mkdir()
    (root / "link.json").symlink_to(real)
    (root / "link2.json").symlink_to(real)
    (root / "loop").symlink_to(root)  # a cycle, if it were walked
    (root / "linkdir").symlink_to(real.parent)
    found = find_targets([str(root), str(real)], True)
    assert labels(found, root) == ["link.json"]


def test_output_dir_mirrors_the_folders(tmp_path: Path) -> None:
    root = tmp_path / "d"
    mixed_folder(root)
    single = write_session(tmp_path / "single.json")
    out = tmp_path / "out"
    targets = find_targets([str(root), str(single)], True, output_dir=out)
    destinations = {target.label: target.destination.path for target in targets}
    assert destinations[str(root / "sub" / "deep" / "log.jsonl")] == out / "sub/deep/log.jsonl"
    assert destinations[str(single)] == out / "single.json"


def test_two_inputs_for_one_output_file_are_refused(tmp_path: Path) -> None:
    a = write_session(tmp_path / "a" / "x.json")
    b = write_session(tmp_path / "b" / "x.json")
    with pytest.raises(OutputError, match="both"):
        find_targets([str(a), str(b)], False, output_dir=tmp_path / "out")
    with pytest.raises(OutputError, match="both"):
        find_targets([str(a.parent), str(b.parent)], True, output_dir=tmp_path / "out")


def test_an_input_that_would_be_its_own_output_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "d"
    write_session(root / "a.json")
    with pytest.raises(OutputError, match="output_dir=None"):
        find_targets([str(root)], True, output_dir=root)


# --- one batch -----------------------------------------------------------------------------------


def test_each_file_ends_as_the_single_file_command_would_write_it(tmp_path: Path) -> None:
    root = tmp_path / "d"
    files = mixed_folder(root)
    good = [name for name in files if name not in ("invalid", "not_messages", "small")]
    expected = {name: expected_micro(files[name]) for name in good}
    small = fingerprint(files["small"])
    reports = do(find_targets([str(root)], True), in_place())
    for name in good:
        assert files[name].read_bytes() == expected[name], name
        assert reports[str(files[name])].changed
    assert fingerprint(files["small"]) == small  # nothing to do: not rewritten
    assert not reports[str(files["small"])].changed
    assert len(reports) == 7


def test_malformed_files_are_reported_and_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "d"
    files = mixed_folder(root)
    before = {name: fingerprint(files[name]) for name in ("invalid", "not_messages")}
    reports = do(find_targets([str(root)], True), in_place(tmp_path / "snaps"))
    failed = {label: report.error for label, report in reports.items() if report.error}
    assert set(failed) == {str(files["invalid"]), str(files["not_messages"])}
    assert all(isinstance(error, InputError) for error in failed.values())
    assert str(failed[str(files["not_messages"])]).startswith(f"{files['not_messages']}: ")
    assert "messages[0]" in str(failed[str(files["not_messages"])])
    for name, print_ in before.items():
        assert fingerprint(files[name]) == print_
    kept = sorted(snapshot.source for snapshot in SnapshotStore(tmp_path / "snaps").snapshots())
    changed = ("array", "envelope", "jsonl", "openai")  # the changed files only
    assert kept == sorted(str(files[name].resolve()) for name in changed)


def test_the_original_goes_to_a_snapshot_named_after_the_file(tmp_path: Path) -> None:
    path = write_session(tmp_path / "my session (1).json", "envelope")
    original = path.read_bytes()
    do(find_targets([str(path)], False), in_place(tmp_path / "snaps"))
    store = SnapshotStore(tmp_path / "snaps")
    [snapshot] = store.select(session_id_for_file(path), "original")
    assert snapshot.session_id.startswith("my-session--1-")
    assert snapshot.read() == original
    assert stat.S_IMODE(snapshot.path.stat().st_mode) == 0o600


def test_no_transcript_saves_no_snapshot(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json")
    do(find_targets([str(path)], False), in_place(None))
    assert path.read_bytes() == expected_micro_of(session())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "home", "work"]


def expected_micro_of(messages: list[dict]) -> bytes:
    return dump(run(RunSettings("micro"), parse(encode(messages))).conversation)


def test_a_second_run_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "d"
    mixed_folder(root)
    do(find_targets([str(root)], True), in_place())
    before = tree(root)
    reports = do(find_targets([str(root)], True), in_place(tmp_path / "snaps"))
    assert not any(report.changed for report in reports.values())
    assert tree(root) == before
    assert not (tmp_path / "snaps").exists()


def test_dry_run_writes_nothing_and_says_what_would_change(tmp_path: Path) -> None:
    root = tmp_path / "d"
    files = mixed_folder(root)
    before = tree(root)
    settings = in_place(tmp_path / "snaps", dry_run=True, backup_suffix=".bak")
    reports = do(find_targets([str(root)], True), settings, workers=2)
    changed = {label for label, report in reports.items() if report.changed}
    assert changed == {str(files[name]) for name in ("array", "envelope", "jsonl", "openai")}
    assert tree(root) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "home", "work"]


def test_dry_run_of_a_full_compaction_calls_no_model(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json")
    before = fingerprint(path)
    job = RunSettings("full", measure=True)
    reports = do(
        find_targets([str(path)], False), in_place(tmp_path / "snaps", job=job, dry_run=True)
    )
    assert reports[str(path)].outcome.full == "would run"
    assert reports[str(path)].changed
    assert fingerprint(path) == before
    assert not (tmp_path / "snaps").exists()


def test_backup_keeps_the_original_beside_the_file(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json")
    original = path.read_bytes()
    small = write_session(tmp_path / "small.json", turns=1)
    do(find_targets([str(tmp_path)], True), in_place(backup_suffix=".orig"))
    assert (tmp_path / "a.json.orig").read_bytes() == original
    assert path.read_bytes() != original
    assert not small.with_name("small.json.orig").exists()  # unchanged: nothing to back up


def test_output_dir_gets_results_and_copies_and_leaves_the_inputs(tmp_path: Path) -> None:
    root = tmp_path / "d"
    files = mixed_folder(root)
    before = tree(root)
    out = tmp_path / "out"
    reports = do(find_targets([str(root)], True, output_dir=out), in_place(tmp_path / "snaps"))
    assert tree(root) == before
    for name in ("array", "envelope", "jsonl", "openai"):
        relative = files[name].relative_to(root)
        assert (out / relative).read_bytes() == expected_micro(files[name])
    assert (out / "small.json").read_bytes() == files["small"].read_bytes()
    assert not (out / "broken.json").exists()
    assert sum(report.error is not None for report in reports.values()) == 2
    assert not (tmp_path / "snaps").exists()  # nothing was taken from the inputs


def test_output_dir_rerun_leaves_finished_results_alone(tmp_path: Path) -> None:
    root = tmp_path / "d"
    mixed_folder(root)
    out = tmp_path / "out"
    do(find_targets([str(root)], True, output_dir=out), in_place())
    before = tree(out)
    time.sleep(0.01)
    do(find_targets([str(root)], True, output_dir=out), in_place())
    assert tree(out) == before


def test_one_worker_and_two_give_the_same_files(tmp_path: Path) -> None:
    results = []
    for workers in (1, 2):
        root = tmp_path / f"run{workers}"
        for seed in range(12):
            shape = ("array", "envelope", "jsonl")[seed % 3]
            style = ("anthropic", "openai")[seed % 2]
            write_session(root / f"s{seed}.json", shape, style=style, seed=seed, turns=seed % 7)
        (root / "bad.json").write_bytes(b"{")
        reports = do(find_targets([str(root)], True), in_place(tmp_path / "snaps"), workers)
        files = {path.name: path.read_bytes() for path in sorted(root.iterdir())}
        summary = sorted(
            (Path(r.label).name, r.changed, r.error is not None, r.outcome.tokens_after)
            for r in reports.values()
        )
        results.append((files, summary))
    assert results[0] == results[1]


def test_auto_in_a_batch_equals_auto_on_one_file(tmp_path: Path) -> None:
    job = RunSettings("auto", Settings(threshold=300), measure=True)
    big = write_session(tmp_path / "big.json", turns=12, size=800, seed=7)
    small = write_session(tmp_path / "small.json", turns=1, seed=8)
    provider = ExtractiveSummarizer()
    expected = {
        path: dump(run(job, parse(path.read_bytes()), provider).conversation)
        for path in (big, small)
    }
    reports = do(find_targets([str(tmp_path)], True), in_place(tmp_path / "snaps", job=job), 2)
    assert reports[str(big)].outcome.full == "compacted"
    assert big.read_bytes() == expected[big]
    assert reports[str(small)].outcome.full == "not run"
    assert parse(small.read_bytes()).messages == parse(expected[small]).messages


def test_stopping_the_iteration_cancels_what_has_not_started(tmp_path: Path) -> None:
    for seed in range(40):
        write_session(tmp_path / f"s{seed:02}.json", seed=seed)
    targets = find_targets([str(tmp_path)], True)
    for workers in (1, 2):
        reports = run_batch(targets, in_place(), workers)
        next(reports)
        reports.close()
    untouched = [t for t in targets if b"[truncated:" not in path_of(t).read_bytes()]
    assert untouched  # a closed batch does not go on with the rest


@pytest.mark.parametrize("workers", [1, 2])
def test_a_stop_starts_nothing_more_and_reports_what_was_in_progress(
    tmp_path: Path, workers: int
) -> None:
    for seed in range(60):
        write_session(tmp_path / f"s{seed:02}.json", seed=seed)
    targets = find_targets([str(tmp_path)], True)
    stop = threading.Event()
    reports = []
    for report in run_batch(targets, in_place(), workers, stop=stop):
        reports.append(report)
        stop.set()
    rewritten = {str(path_of(t)) for t in targets if b"[truncated:" in path_of(t).read_bytes()}
    assert rewritten == {report.label for report in reports if report.changed}
    assert len(reports) == 1 if workers == 1 else 1 <= len(reports) < 60


def test_worker_tasks_are_small_groups_in_order(tmp_path: Path) -> None:
    targets = [local(tmp_path / f"s{n:04}.json", f"s{n:04}.json") for n in range(1000)]
    for target in targets[:400]:
        path_of(target).write_bytes(b"x" * 1000)
    big = path_of(targets[500])
    big.write_bytes(b"x" * (engines.CHUNK_BYTES + 1))
    chunks = list(local_chunks(targets, workers=2))
    assert [target for chunk in chunks for target in chunk] == targets
    assert all(len(chunk) <= engines.CHUNK_FILES for chunk in chunks)
    assert [path_of(target) for target in next(c for c in chunks if targets[500] in c)][-1] == big
    few = list(local_chunks(targets[:24], workers=2))
    assert len(few) == 8  # at least four groups per worker, for balance


# --- read-only files, links, files that change underneath ----------------------------------------


def test_read_only_files_are_refused_by_their_mode_bits(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json")
    path.chmod(0o444)  # root could still write it: the decision rests on the mode
    before = fingerprint(path)
    reports = do([local(path, "a.json")], in_place(tmp_path / "snaps"))
    error = reports["a.json"].error
    assert isinstance(error, OutputError)
    assert str(error) == "a.json: file is read-only, left as is: make it writable to compact it"
    assert fingerprint(path) == before
    assert not (tmp_path / "snaps").exists()


def test_a_read_only_file_costs_no_model_call(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json")
    path.chmod(0o400)
    calls: list[SummaryRequest] = []

    class Recorder(ExtractiveSummarizer):
        def summarize(self, request: SummaryRequest) -> str:
            calls.append(request)
            return super().summarize(request)

    settings = in_place(tmp_path / "snaps", job=RunSettings("full", measure=True))
    report = process(local(path, "a.json"), settings, Recorder())
    assert isinstance(report.error, OutputError)
    assert calls == []
    assert not (tmp_path / "snaps").exists()


def test_read_only_output_dir_results_are_written_normally(tmp_path: Path) -> None:
    path = write_session(tmp_path / "d" / "a.json")
    path.chmod(0o444)
    out = tmp_path / "out"
    do(find_targets([str(path.parent)], True, output_dir=out), in_place())
    assert (out / "a.json").read_bytes() == expected_micro(path)


def test_a_link_to_a_file_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real = write_session(tmp_path / "real" / "t.json")
    expected = expected_micro(real)
    root = tmp_path / "d"
    root.mkdir()
    for name in ("link.json", "again.json"):
        (root / name).symlink_to(real)
    reports = do(find_targets([str(root)], True), in_place(tmp_path / "snaps", backup_suffix="~"))
    assert len(reports) == 1  # two links, one file: done once
    assert real.read_bytes() == expected
    assert (root / "again.json").is_symlink() and (root / "link.json").is_symlink()
    assert os.readlink(root / "link.json") == str(real)
    assert (tmp_path / "real" / "t.json~").exists()  # the backup sits beside the real file
    [snapshot] = SnapshotStore(tmp_path / "snaps").snapshots()  # one id, whichever link
    assert snapshot.session_id == session_id_for_file(real)


def change_file(path: Path, keep_size_and_mtime: bool) -> None:
    """Another program's write; optionally one a size-and-mtime check cannot see."""
    status = path.stat()
    data = path.read_bytes()
    if keep_size_and_mtime:
        data = data.replace(b"Step 0.", b"Step X.", 1)
        assert len(data) == status.st_size
        path.write_bytes(data)
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    else:
        path.write_bytes(data + b"\n")


@pytest.mark.parametrize("sneaky", [False, True], ids=["plain", "same-size-and-mtime"])
def test_a_file_changed_after_it_was_read_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sneaky: bool
) -> None:
    path = write_session(tmp_path / "a.json")
    real_decide = process_module.decide

    def decide_then_someone_writes(*args: Any) -> Any:
        outcome = real_decide(*args)
        change_file(path, sneaky)
        return outcome

    monkeypatch.setattr(process_module, "decide", decide_then_someone_writes)
    reports = do([local(path, "a.json")], in_place())
    assert isinstance(reports["a.json"].error, OutputError)
    assert "changed while it was being compacted" in str(reports["a.json"].error)
    assert b"[truncated:" not in path.read_bytes()  # the other program's text survives
    if not sneaky:
        assert path.read_bytes().endswith(b"\n")


def test_a_file_changed_while_the_model_writes_its_summary_is_left_alone(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json", turns=8)
    original = path.read_bytes()

    class SlowModel(ExtractiveSummarizer):
        def summarize(self, request: SummaryRequest) -> str:
            change_file(path, keep_size_and_mtime=False)
            return super().summarize(request)

    job = RunSettings("full", measure=True)
    report = process(local(path, "a.json"), in_place(tmp_path / "snaps", job=job), SlowModel())
    assert isinstance(report.error, OutputError)
    assert path.read_bytes() == original + b"\n"  # the other program's version


def test_a_change_while_the_new_version_is_written_is_caught_at_the_last_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_session(tmp_path / "a.json")
    real_write = atomic.NewFile.write.__func__  # type: ignore[attr-defined]

    def write_meanwhile_someone_writes(cls: type, *args: Any) -> atomic.NewFile:
        new = real_write(cls, *args)
        change_file(path, keep_size_and_mtime=True)
        return new

    monkeypatch.setattr(atomic.NewFile, "write", classmethod(write_meanwhile_someone_writes))
    reports = do([local(path, "a.json")], in_place(tmp_path / "snaps"))
    assert "changed while it was being compacted" in str(reports["a.json"].error)
    assert b"Step X." in path.read_bytes()  # the other writer's version
    # caught before the original was kept: no snapshot, no folder made for one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "home", "work"]


def test_a_file_replaced_by_another_after_it_was_read_is_left_alone(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json")
    data, read = path.read_bytes(), FileState.of(path.stat())
    status = path.stat()
    other = path.with_name("other")
    other.write_bytes(data)
    os.utime(other, ns=(status.st_atime_ns, status.st_mtime_ns))
    with path.open("rb") as opened:
        os.replace(other, path)  # same bytes, size and mtime; a different file
        with pytest.raises(OutputError, match="changed while"):
            replace(path, opened.fileno(), read, [data], Replacement("a.json"))


def test_a_file_deleted_after_it_was_read_is_not_recreated(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json")
    data, read = path.read_bytes(), FileState.of(path.stat())
    with path.open("rb") as opened:
        path.unlink()
        with pytest.raises(OutputError, match="changed while"):
            replace(path, opened.fileno(), read, [data], Replacement("a.json"))
    assert not path.exists()


def test_missing_files_are_reported_as_unreadable(tmp_path: Path) -> None:
    reports = do(find_targets([str(tmp_path / "nope.json")], False), in_place())
    assert isinstance(reports[str(tmp_path / "nope.json")].error, InputUnreadable)


# --- durability: each folder fsynced once -------------------------------------------------------


def record_folder_syncs(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    synced: list[Path] = []
    real_sync = atomic.fsync_directory

    def sync(directory: Path) -> None:
        synced.append(Path(directory))
        real_sync(directory)

    monkeypatch.setattr(atomic, "fsync_directory", sync)
    monkeypatch.setattr(files, "fsync_directory", sync)
    monkeypatch.setattr(engines, "fsync_directory", sync)
    return synced


def test_a_batch_fsyncs_each_folder_once_after_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "d"
    for folder in ("a", "b", "c"):
        for seed in range(4):
            write_session(root / folder / f"s{seed}.json", seed=seed)
    write_session(root / "quiet" / "small.json", turns=1)  # not rewritten: nothing to sync
    synced = record_folder_syncs(monkeypatch)
    reports = list(run_batch(find_targets([str(root)], True), in_place()))
    assert len(reports) == 13
    assert sorted(synced) == [root / "a", root / "b", root / "c"]


def test_a_stopped_batch_still_fsyncs_the_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for seed in range(6):
        write_session(tmp_path / "d" / f"s{seed}.json", seed=seed)
    synced = record_folder_syncs(monkeypatch)
    reports = run_batch(find_targets([str(tmp_path / "d")], True), in_place())
    next(reports)
    assert synced == []
    reports.close()
    assert synced == [tmp_path / "d"]


def test_one_file_on_its_own_is_fsynced_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_session(tmp_path / "a.json")
    synced = record_folder_syncs(monkeypatch)
    report = process(local(path, "a.json"), in_place(), None)
    assert report.written == str(tmp_path)
    assert synced == [tmp_path]


def test_temp_files_are_fsynced_with_their_final_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_session(tmp_path / "a.json")
    path.chmod(0o640)
    modes: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    do([local(path, "a.json")], in_place())
    assert modes[0] == 0o640  # the temporary file, already with the mode it will keep
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


# --- leftovers of killed runs --------------------------------------------------------------------


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def zombie() -> tuple[subprocess.Popen[bytes], int]:
    """A child that has exited but is not reaped yet: ``kill(pid, 0)`` still finds it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        state = Path(f"/proc/{child.pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
        if state == b"Z":
            return child, child.pid
        time.sleep(0.01)
    raise AssertionError("the child did not exit")


def temp_name(target: str, pid: int) -> str:
    return f".{target}.{pid}.abc123{TEMP_SUFFIX}"


def test_temp_files_of_dead_processes_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / temp_name("a.json", dead_pid())
    alive = tmp_path / temp_name("a.json", os.getpid())
    unrelated = tmp_path / "notes.ctxpack-tmp.txt"
    for path in (dead, alive, unrelated):
        path.write_bytes(b"half")
    assert remove_stale_temp_files(tmp_path) == 1
    assert not dead.exists() and alive.exists() and unrelated.exists()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_temp_files_of_unreaped_processes_are_removed(tmp_path: Path) -> None:
    # The workers of a SIGKILLed batch stay zombies where process 1 reaps no orphans.
    child, pid = zombie()
    try:
        stale = tmp_path / temp_name("a.json", pid)
        stale.write_bytes(b"half")
        assert remove_stale_temp_files(tmp_path) == 1
        assert not stale.exists()
    finally:
        child.wait()


def test_clean_up_looks_beside_inputs_outputs_and_snapshots(tmp_path: Path) -> None:
    pid = dead_pid()
    root = tmp_path / "d"
    write_session(root / "sub" / "a.json")
    (tmp_path / "out" / "sub").mkdir(parents=True)
    (tmp_path / "snaps").mkdir()
    leftovers = [
        root / "sub" / temp_name("a.json", pid),
        tmp_path / "out" / "sub" / temp_name("a.json", pid),
        tmp_path / "snaps" / temp_name("a", pid),
    ]
    for path in leftovers:
        path.write_bytes(b"half")
    targets = find_targets([str(root)], True, output_dir=tmp_path / "out")
    assert clean_up_after_killed_runs(targets, [str(tmp_path / "snaps")]) == 3
    assert not any(path.exists() for path in leftovers)


def test_failed_writes_leave_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_session(tmp_path / "a.json")
    before = fingerprint(path)

    def refuse(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    reports = do([local(path, "a.json")], in_place())
    assert "No space left on device" in str(reports["a.json"].error)
    assert fingerprint(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "home", "work"]


# --- the reports ---------------------------------------------------------------------------------


def test_reports_carry_the_figures(tmp_path: Path) -> None:
    path = write_session(tmp_path / "a.json", turns=6)
    report = do([local(path, "a.json")], in_place())["a.json"]
    assert report.changed and report.error is None
    outcome = report.outcome
    assert outcome.truncated == 3
    assert outcome.tokens_before is not None and outcome.tokens_after is not None
    assert outcome.tokens_after < outcome.tokens_before


def test_reports_cross_process_boundaries(tmp_path: Path) -> None:
    import pickle

    error_report = Report("x", error=InputError("x: messages[0]: bad"))
    assert str(pickle.loads(pickle.dumps(error_report)).error) == "x: messages[0]: bad"
