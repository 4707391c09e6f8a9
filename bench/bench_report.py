"""``ctxpack report`` over 1 GB of session files: first run, second run, peak memory (issue 33).

The folder is the bundled real Claude Code sessions (``tests/corpus/originals/cc_*.jsonl``)
copied again and again into ten project folders until it holds about 1 GB: real records, real
usage, every file a session of its own. The issue's targets are absolute, and are the rows'
targets here: a first run (nothing kept yet) reads at least 50 MB/s for the recorded bill and
the causes (``--no-with-ctxpack``); a second run (every file's bill kept) takes under 2 s; peak
memory does not grow with the number of files (the whole folder against one project folder, a
tenth of it). For context, side by side: orjson parsing every line of every file (the least any
reader of every record does), and the first run with the counterfactual (the replay of every
session through the cache-aware policy) on one project folder.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
from pathlib import Path

from harness import CTXPACK, DATA_DIR, ENV, PYTHON, ROOT, Report, peak_rss, run_once

ORIGINALS = ROOT / "tests" / "corpus" / "originals"
VERSION = 2
SIZE = 1_000_000_000
PROJECTS = 10
MB = 1e6
FIRST_RUN_MBPS = 50.0  # the targets
SECOND_RUN_SECONDS = 2.0
RSS_GROWTH = 1.25  # the whole folder's peak over a tenth's: flat, give or take the interpreter's
# every line of every file parsed by orjson, nothing else
ORJSON_EVERY_LINE = (
    "import orjson, os, sys\n"
    "for root, _, names in os.walk(sys.argv[1]):\n"
    "    for name in names:\n"
    "        with open(os.path.join(root, name), 'rb') as handle:\n"
    "            for line in handle:\n"
    "                orjson.loads(line)\n"
)


def run(report: Report) -> None:
    folder = ensure(report)
    report.case("report.first_run", lambda: _first_run(report, folder))
    report.case("report.second_run", lambda: _second_run(report, folder))
    report.case("report.rss", lambda: _rss(report, folder))
    report.case("report.with_ctxpack", lambda: _with_ctxpack(report, folder))


def ensure(report: Report) -> Path:
    """The folder of about ``SIZE`` bytes of sessions, built now unless it is there already."""
    folder = DATA_DIR / f"report-sessions-v{VERSION}-{SIZE}"
    if folder.exists():
        return folder
    partial = folder.with_name(f".{folder.name}.{os.getpid()}")
    originals = sorted(ORIGINALS.glob("cc_*.jsonl"))
    written = copy = 0
    while written < SIZE:
        for original in originals:
            project = partial / f"project-{copy % PROJECTS:02d}"
            project.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(original, project / f"{copy:04d}-{original.name}")
            written += original.stat().st_size
        copy += 1
    os.replace(partial, folder)
    report.log(f"built {folder.name}: {written / MB:.0f} MB in {copy * len(originals)} files")
    return folder


def size_of(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def report_command(folder: Path, *options: str) -> list[str]:
    return [CTXPACK, "report", "--json", *options, str(folder)]


def with_state(state: Path) -> dict[str, str]:
    """The environment of a run whose kept bills are in ``state``."""
    return {**ENV, "XDG_STATE_HOME": str(state)}


def fresh_runs(command: list[str], rounds: int) -> float:
    """The median wall time of ``command`` with nothing kept, each round in a state of its own."""
    times = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(dir=DATA_DIR) as state:
            times.append(run_once(command, with_state(Path(state))))
    return statistics.median(times)


def _first_run(report: Report, folder: Path) -> None:
    size, rounds = size_of(folder), min(report.repeat, 3)
    run_once([PYTHON, "-c", ORJSON_EVERY_LINE, str(folder)])  # warm-up: the page cache
    ours = fresh_runs(report_command(folder, "--no-with-ctxpack"), rounds)
    base = statistics.median(
        run_once([PYTHON, "-c", ORJSON_EVERY_LINE, str(folder)]) for _ in range(rounds)
    )
    note = (
        f"--no-with-ctxpack, nothing kept, {size / MB:.0f} MB, median of {rounds}; "
        f"orjson parses every line at {size / base / MB:.0f} MB/s"
    )
    report.ratio(
        "report.first_run",
        size / ours / MB,
        FIRST_RUN_MBPS,
        target=1.0,
        unit="MB/s",
        higher_is_better=True,
        note=note,
    )
    report.info(
        "report.first_run_vs_orjson",
        ours,
        base,
        "s",
        note="the first run side by side with orjson parsing every line of every file",
    )


def _second_run(report: Report, folder: Path) -> None:
    with tempfile.TemporaryDirectory(dir=DATA_DIR) as state:
        command = report_command(folder, "--no-with-ctxpack")
        run_once(command, with_state(Path(state)))  # the first run keeps every bill
        times = [run_once(command, with_state(Path(state))) for _ in range(report.repeat)]
    size = size_of(folder)
    note = (
        f"every bill kept, {size / MB:.0f} MB in {_files(folder)} files, median of {report.repeat}"
    )
    report.ratio(
        "report.second_run",
        statistics.median(times),
        SECOND_RUN_SECONDS,
        target=1.0,
        note=note,
    )


def _rss(report: Report, folder: Path) -> None:
    tenth = folder / "project-00"
    peaks = {}
    for place in (folder, tenth):
        with tempfile.TemporaryDirectory(dir=DATA_DIR) as state:
            command = report_command(place, "--no-with-ctxpack")
            peaks[place] = peak_rss(command, with_state(Path(state)))
    note = (
        f"a first run over {_files(folder)} files vs over {_files(tenth)} "
        f"({size_of(tenth) / MB:.0f} MB)"
    )
    report.ratio(
        "report.rss",
        peaks[folder] / MB,
        peaks[tenth] / MB,
        target=RSS_GROWTH,
        unit="MB",
        note=note,
    )


def _with_ctxpack(report: Report, folder: Path) -> None:
    tenth = folder / "project-00"
    size = size_of(tenth)
    ours = fresh_runs(report_command(tenth, "--with-ctxpack"), 1)
    without = fresh_runs(report_command(tenth, "--no-with-ctxpack"), 1)
    note = f"a first run on {size / MB:.0f} MB: replaying every session vs the bill alone"
    report.info("report.with_ctxpack", size / ours / MB, size / without / MB, "MB/s", note=note)


def _files(folder: Path) -> int:
    return sum(1 for path in folder.rglob("*.jsonl"))
