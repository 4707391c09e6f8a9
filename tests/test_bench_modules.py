"""The benchmarks stay runnable: every module of bench/ imports (the suite's helpers they share
move with the tests), and ``make bench`` would find each one."""

from __future__ import annotations

import subprocess
import sys

from helpers import TESTS

ROOT = TESTS.parent


def test_every_benchmark_module_imports() -> None:
    modules = sorted(
        path.stem.removeprefix("bench_") for path in (ROOT / "bench").glob("bench_*.py")
    )
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--list"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == modules
