"""What every benchmark module shares: the report, side-by-side timing, peak memory.

A benchmark module is ``bench/bench_<name>.py`` exposing ``run(report: Report) -> None``; ``run.py``
finds it by that name. Inside, each measurement is a case named ``<module>.<case>``; ``report.case``
runs it only if the user asked for it, and records a crash as an error without stopping the others:

    def run(report: Report) -> None:
        report.case("core.estimate", lambda: _estimate(report))

    def _estimate(report: Report) -> None:
        ours, base = report.time_pair([CTXPACK, "estimate", path], [PYTHON, "-c", LOAD, path])
        report.ratio("core.estimate", ours, base, target=2.0)

Targets are ratios measured side by side in one run, never absolute times: the two commands are
run alternately (A B, B A, A B, ...) after one untimed warm-up each, and the median of N wall
times of each is compared, so machine load and a cold page cache hit both sides alike. The median,
not the best: it is what a user typically waits for, and one lucky run cannot decide a target.

Bytecode: every command runs with ``ENV``, which caches bytecode under ``bench/data/pycache``
(``PYTHONPYCACHEPREFIX``) even where the caller sets ``PYTHONDONTWRITEBYTECODE``. Otherwise the
project's own modules (an editable install has no ``.pyc``) would be compiled from source on every
run while click's and orjson's come precompiled from pip, and start-up would measure the compiler.
"""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import tarfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
BIN = Path(sys.executable).parent
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
CTXPACK = str(BIN / "ctxpack")
DATA_DIR = BENCH_DIR / "data"

ENV = {
    **{key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPYCACHEPREFIX": str(DATA_DIR / "pycache"),
}

Command = Sequence[str]


def use_revision(revision: str) -> str:
    """Measure the code of a commit, not the working tree (which others may be editing).

    The commit's files are exported once to ``bench/data/src-<sha>`` and put first on the import
    path, in this process and in every command's ``PYTHONPATH``; the venv (its ``ctxpack`` script
    and dependencies) stays as installed. Returns the short commit id.
    """
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    source = DATA_DIR / f"src-{sha}"
    if not source.exists():
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", sha],
            capture_output=True,
            check=True,
        ).stdout
        partial = DATA_DIR / f".src-{sha}.{os.getpid()}"
        partial.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(partial, filter="data")
        os.replace(partial, source)
    sys.path.insert(0, str(source))
    ENV["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), ENV.get("PYTHONPATH")]))
    return sha


@dataclass(frozen=True)
class Row:
    name: str
    measured: float
    baseline: float
    unit: str  # of measured and baseline: "s", "MB", "MB/s", or any other label ("tokens")
    target: float | None  # None: for context only
    higher_is_better: bool = False  # the ratio must be >= target instead of <=
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.measured / self.baseline if self.baseline else float("inf")

    @property
    def status(self) -> str:
        if self.target is None:
            return "info"
        ok = self.ratio >= self.target if self.higher_is_better else self.ratio <= self.target
        return "PASS" if ok else "FAIL"


@dataclass
class Report:
    """Collects rows, prints each as it comes, and the table at the end."""

    repeat: int = 5
    selection: tuple[str, ...] = ()  # case or module names; empty: everything
    out: TextIO = sys.stdout
    rows: list[Row] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def wants(self, case: str) -> bool:
        if not self.selection:
            return True
        module = case.split(".", 1)[0]
        return any(name in (case, module, case.split(".", 1)[-1]) for name in self.selection)

    def case(self, name: str, function: Callable[[], Any]) -> None:
        """Run one case if it was asked for; a crash becomes an error and the next case runs."""
        if not self.wants(name):
            return
        try:
            function()
        except Exception as error:
            self.error(name, error)

    def error(self, name: str, error: BaseException) -> None:
        traceback.print_exception(error, file=sys.stderr)
        self.errors.append(f"{name}: {error}")
        self.log(f"{name}: ERROR {error}")

    def ratio(
        self,
        name: str,
        measured: float,
        baseline: float,
        target: float | None,
        unit: str = "s",
        higher_is_better: bool = False,
        note: str = "",
    ) -> Row:
        row = Row(name, measured, baseline, unit, target, higher_is_better, note)
        self.rows.append(row)
        self.log(
            f"{row.name}: {_fmt(measured, unit)} vs {_fmt(baseline, unit)} = {row.ratio:.2f}x "
            f"[{row.status}]"
        )
        return row

    def info(self, name: str, measured: float, baseline: float, unit: str, note: str = "") -> Row:
        return self.ratio(name, measured, baseline, None, unit, note=note)

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.log(text)

    def log(self, text: str) -> None:
        print(f"  {text}", file=self.out, flush=True)

    # the table ---------------------------------------------------------------------------------

    def table(self) -> str:
        headers = ("benchmark", "measured", "baseline", "ratio", "target", "result")
        lines = [
            (
                row.name,
                _fmt(row.measured, row.unit),
                _fmt(row.baseline, row.unit),
                f"{row.ratio:.2f}x",
                _target(row),
                row.status,
            )
            for row in self.rows
        ]
        widths = [
            max(len(cell) for cell in column) for column in zip(headers, *lines, strict=False)
        ]
        left = {0, 5}

        def render(cells: Sequence[str]) -> str:
            return "  ".join(
                cell.ljust(width) if i in left else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()

        rule = "  ".join("-" * width for width in widths)
        body = [render(headers), rule, *(render(line) for line in lines)]
        for row in self.rows:
            if row.note:
                body.append(f"  {row.name}: {row.note}")
        return "\n".join(body)

    def summary(self) -> str:
        counts = {status: 0 for status in ("PASS", "FAIL", "info")}
        for row in self.rows:
            counts[row.status] += 1
        text = f"bench: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['info']} info"
        if self.errors:
            text += f", {len(self.errors)} error{'s' if len(self.errors) > 1 else ''}"
        return text

    # measuring -----------------------------------------------------------------------------------

    def time_pair(
        self,
        ours: Command,
        baseline: Command,
        repeat: int | None = None,
        env: dict[str, str] | None = None,
    ) -> tuple[float, float]:
        """Median wall times of two whole-process commands run alternately, side by side."""
        ours_median, baseline_median = time_interleaved(
            [ours, baseline], repeat or self.repeat, env
        )
        return ours_median, baseline_median


def _fmt(value: float, unit: str) -> str:
    """A figure with its unit: seconds as ms below one second, counts with thousands separators."""
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.3f} s"
    if unit in ("MB", "MB/s"):
        return f"{value:.1f} {unit}"
    number = f"{int(value):,}" if float(value).is_integer() else f"{value:.4g}"
    return f"{number} {unit}".rstrip()


def _target(row: Row) -> str:
    if row.target is None:
        return "-"
    return f"{'>=' if row.higher_is_better else '<='} {row.target:.3g}x"


def run_once(command: Command, env: dict[str, str] | None = None) -> float:
    """Wall time of one run, stdout to /dev/null; a non-zero exit is an error, not a measurement."""
    started = time.perf_counter()
    done = subprocess.run(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=ENV if env is None else env,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines() or [""]
        first = f"{lines[0]} ... " if len(lines) > 1 else ""  # a batch reports its first failure
        raise RuntimeError(f"{' '.join(command)}: exit {done.returncode}: {first}{lines[-1]}")
    return elapsed


def time_interleaved(
    commands: Sequence[Command], repeat: int, env: dict[str, str] | None = None
) -> list[float]:
    """Median wall time of each command over ``repeat`` rounds, the order alternating per round."""
    for command in commands:  # warm-up: page cache, .pyc files
        run_once(command, env)
    times: list[list[float]] = [[] for _ in commands]
    for round_ in range(repeat):
        order = range(len(commands)) if round_ % 2 == 0 else reversed(range(len(commands)))
        for index in order:
            times[index].append(run_once(commands[index], env))
    return [statistics.median(runs) for runs in times]


def best_in_process(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of ``function()`` in this process, and what it returned."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


# Runs the command given as arguments and prints its exit status and the peak RSS of its process
# tree (children that were waited for), in KiB on Linux and bytes on macOS. A fresh helper each
# time, since RUSAGE_CHILDREN is the maximum over every child the caller ever waited for.
_RSS_HELPER = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def peak_rss(command: Command, env: dict[str, str] | None = None) -> int:
    """Peak resident set size of one run of ``command`` (in ``env``, default ``ENV``), in bytes."""
    done = subprocess.run(
        [PYTHON, "-c", _RSS_HELPER, *command],
        capture_output=True,
        text=True,
        env=ENV if env is None else env,
        check=True,
    )
    status, maxrss = (int(field) for field in done.stdout.split())
    if status != 0:
        raise RuntimeError(f"{' '.join(command)}: exit {status}")
    return maxrss if sys.platform == "darwin" else maxrss * 1024


def peak_rss_time_v(command: Command) -> int | None:
    """The same figure from GNU ``/usr/bin/time -v``, as a cross-check; None if unavailable."""
    if not os.access("/usr/bin/time", os.X_OK) or sys.platform != "linux":
        return None
    done = subprocess.run(
        ["/usr/bin/time", "-v", *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        check=False,
    )
    for line in done.stderr.splitlines():
        if "Maximum resident set size" in line:
            return int(line.rsplit(":", 1)[1]) * 1024
    return None
