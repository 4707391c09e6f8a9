"""Run the benchmarks and print one table of ratios with PASS/FAIL against each target.

Every ``bench/bench_<name>.py`` is a benchmark module exposing ``run(report) -> None`` (see
``harness.py``); adding one is enough for it to run here. Targets are ratios measured side by side
in this one run, never absolute times, so the table means the same on a laptop and on CI.

    python bench/run.py                    # everything (what `make bench` does)
    python bench/run.py core               # one module
    python bench/run.py core.startup       # one case (or just: startup)
    python bench/run.py --rev HEAD         # the last commit, not the working tree
    python bench/run.py --list

Exit status: 0 whenever the benchmarks ran, whatever they measured (a FAIL is a finding, reported
in the table and the last line); 1 if a benchmark crashed; 2 for a name that matches nothing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time

from harness import BENCH_DIR, Report, use_revision


def modules() -> list[str]:
    """Names of the benchmark modules, without the ``bench_`` prefix, in order."""
    return sorted(path.stem.removeprefix("bench_") for path in BENCH_DIR.glob("bench_*.py"))


def selected_modules(selection: tuple[str, ...]) -> list[str]:
    names = modules()
    if not selection:
        return names
    chosen = set()
    for item in selection:
        module = item.removeprefix("bench_").split(".", 1)[0]
        if module in names:
            chosen.add(module)
        elif "." not in item:  # a bare case name: any module may have it
            chosen.update(names)
    return [name for name in names if name in chosen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help="module (core) or case (core.startup, startup)"
    )
    parser.add_argument(
        "-n",
        "--repeat",
        type=int,
        default=5,
        help="timed rounds per side (whole-process times: median of N; default 5)",
    )
    parser.add_argument(
        "--rev", metavar="COMMIT", help="measure this commit's code instead of the working tree"
    )
    parser.add_argument("--list", action="store_true", help="list the benchmark modules")
    args = parser.parse_args(argv)
    if args.rev:
        print(f"measuring commit {use_revision(args.rev)} (bench/data/src-*)", flush=True)

    if args.list:
        for name in modules():
            module = importlib.import_module(f"bench_{name}")
            print(f"{name:12} {(module.__doc__ or '').strip().splitlines()[0]}")
        return 0

    selection = tuple(name.removeprefix("bench_") for name in args.names)
    report = Report(repeat=max(args.repeat, 1), selection=selection)
    started = time.perf_counter()
    for name in selected_modules(selection):
        print(f"[{name}]", flush=True)
        try:
            module = importlib.import_module(f"bench_{name}")
            if not callable(getattr(module, "run", None)):
                raise TypeError(f"bench/bench_{name}.py has no run(report) function")
            module.run(report)
        except Exception as error:  # one broken benchmark must not hide the others' results
            report.error(name, error)

    if selection and not report.rows and not report.errors:
        print(f"run.py: no benchmark named {', '.join(selection)} (see --list)", file=sys.stderr)
        return 2
    print()
    print(report.table())
    print()
    print(
        f"{report.summary()} ({time.perf_counter() - started:.0f} s, "
        f"whole-process times: median of {report.repeat})"
    )
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
