"""Issue 30.4: a bug in a batch worker is a bug (exit 70, named as one), not the engine's failure.

An exception ctxpack did not expect, raised while a worker does one input, used to come back as
``ClusterError: the cluster could not finish a task: …`` (exit 74) and end the batch. Here a real
``ctxpack`` runs with one function broken for one file (``bug.json``): its worker processes are
forked from it, so they carry the same bug. The batch goes on with the other files.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO
from test_batch import expected_micro, write_session
from test_cli_batch import summary_of

from compactor_core.batch.engines import Engine, run_all
from compactor_core.ends.sources import LocalFile
from compactor_core.errors import InternalError
from compactor_core.process import Target
from compactor_core.settings import RunSettings

# ``process`` does each input through ``_process``; this one fails on bug.json as a bug would.
BROKEN = """
import sys
import compactor_core.process as process
from cli.main import main

done = process._process

def broken(target, *arguments):
    if target.label.endswith("bug.json"):
        return None.current  # the failure issue 30 quotes
    return done(target, *arguments)

process._process = broken
sys.argv[0] = "ctxpack"
main()
"""
BUG = "internal error: AttributeError: 'NoneType' object has no attribute 'current'"


def broken_ctxpack(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", BROKEN, *map(str, args)]
    return subprocess.run(command, capture_output=True, cwd=REPO, timeout=120, env=env)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bug_in_a_worker_is_exit_70_and_the_batch_goes_on(tmp_path: Path, jobs: str) -> None:
    root = tmp_path / "d"
    good = [write_session(root / f"s{seed}.json", seed=seed) for seed in range(3)]
    new = {path: expected_micro(path) for path in good}
    bug = write_session(root / "bug.json", seed=9)
    before = bug.read_bytes()
    done = broken_ctxpack("micro", "-i", "-r", root, "-j", jobs, "--transcript-dir", tmp_path / "s")
    assert done.returncode == 70, done.stderr
    assert b"Traceback" not in done.stderr
    assert done.stderr.decode().splitlines()[:-1] == [
        f"ctxpack: {bug}: {BUG} (a bug in ctxpack; CTXPACK_TRACEBACK=1 shows where)"
    ]
    assert summary_of(done.stderr) | {"before": 0, "after": 0} == {
        "files": 4,
        "changed": 3,
        "failed": 1,
        "before": 0,
        "after": 0,
    }
    assert all(path.read_bytes() == data for path, data in new.items())
    assert bug.read_bytes() == before


def test_the_traceback_of_a_workers_bug_is_shown_on_request(tmp_path: Path) -> None:
    root = tmp_path / "d"
    write_session(root / "s1.json", seed=1)
    write_session(root / "bug.json", seed=9)
    env = {"CTXPACK_TRACEBACK": "1", "PATH": "/usr/bin:/bin"}
    done = broken_ctxpack("micro", "-i", "-r", root, "-j", "2", "--transcript-dir", root, env=env)
    assert done.returncode == 70
    stderr = done.stderr.decode()
    assert stderr.startswith("Traceback (most recent call last):")
    assert "in broken\nAttributeError: 'NoneType' object has no attribute 'current'\n" in stderr


def test_a_target_with_no_destination_is_reported_as_a_bug(tmp_path: Path) -> None:
    """Through the library: a local pool of two processes, one target a caller got wrong."""
    files = [write_session(tmp_path / f"s{seed}.json", seed=seed) for seed in range(4)]
    targets = [Target(LocalFile(path, str(path)), None) for path in files]  # type: ignore[arg-type]
    run = RunSettings("micro", dry_run=True)
    reports = list(run_all(targets, run, Engine(jobs=2)))
    assert sorted(report.label for report in reports) == sorted(map(str, files))
    for report in reports:
        assert isinstance(report.error, InternalError)
        assert str(report.error) == f"{report.label}: {BUG} (a bug in ctxpack)"
        assert "AttributeError" in report.error.traceback
