"""Batches on a Dask cluster from S3 (issue 12): two workers against one, and the listing's memory.

Cases (each measured side by side in this run, everything on 127.0.0.1):

- ``dask.workers``: ``ctxpack micro -r s3://bench/in/ -O s3://bench/out-…/ --scheduler tcp://…``
  over 2,000 generated sessions (23 to 59 KB, 16 to 32 tool calls each) on moto's S3 server, a
  cluster of one ``dask worker`` against one of two (``--nthreads 1``, no nanny, each cluster
  with its own ``dask scheduler``): 1-worker time / 2-worker time (target: at least 1.6x). moto,
  the scheduler and the ``ctxpack`` client share the machine's cores with the workers, so on a
  2-core machine the target is out of reach; the note gives the number of CPUs.
- ``dask.throughput`` (info): files/s with two workers and with one.
- ``dask.vs_local`` (info): the 1-worker run against the same batch (same S3 input and output)
  on the local process pool, ``-j 1`` without ``--scheduler``.
- ``dask.overhead`` (info): what Dask adds per file, (T_dask_1_worker - T_local_j1) / N, against
  the local run's time per file.
- ``dask.listing_rss``: peak RSS of enumerating 200,000 keys the way the batch does
  (``cli.scale.targets_of`` -> ``remote.iter_targets`` -> ``storage.walk`` -> s3fs's paging
  ``_iterdir``, cut up by ``distributed.chunks``) against the same for 100,000 keys (target: at
  most 1.2x, i.e. flat). Not 1,000,000 by default: the client lists only 5,000 to 11,000 keys/s
  here (one hop to fsspec's event-loop thread per key), so a million take up to 3 minutes
  (``--keys 1000000``).
  moto cannot hold that many objects in reasonable time either, so the keys come from a
  stand-in for the request itself: ``S3FileSystem._call_s3`` answers ``ListObjectsV2`` with
  synthetic pages of 1,000 entries shaped as botocore returns them; everything above it is the
  real code. ``dask.listing_held`` (info) keeps the targets of the 100,000 keys in a list
  instead, to show the measure would see a listing held in memory.

The clusters (``tests/cluster_support.py``, shared with ``tests/test_distributed.py``) start
before the timed runs; every run writes to a fresh output prefix (a re-run would skip every file
as current), removed afterwards, untimed. Each configuration first runs once, untimed, over 64
other sessions (workers import ctxpack then); rounds alternate the order of the three.

    python bench/run.py dask
    python bench/bench_dask.py --files 500 --keys 1000000
    python bench/bench_dask.py --quick                      # smoke run: 200 files, 20,000 keys
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import CTXPACK, DATA_DIR, ENV, PYTHON, ROOT, Report, peak_rss, run_once

sys.path.insert(0, str(ROOT / "tests"))  # the S3 server and cluster the tests start

from cluster_support import Cluster, aws_environment, s3, s3_server, session

WORK = DATA_DIR / "dask"
WORKERS_TARGET = 1.6
LISTING_TARGET = 1.2
WARM_UP_FILES = 64
BUCKET = "bench"
MB = 2**20


@dataclass
class Sizes:
    files: int = int(os.environ.get("CTXPACK_BENCH_DASK_FILES", "2000"))
    keys: int = int(os.environ.get("CTXPACK_BENCH_DASK_KEYS", "200000"))
    rounds: int | None = None  # None: min(report.repeat, 2)


SIZES = Sizes()
QUICK = Sizes(files=200, keys=20_000, rounds=1)


CASES = (
    (("workers", "throughput", "vs_local", "overhead"), lambda report: workers(report)),
    (("listing_rss", "listing_held"), lambda report: listing(report)),
)


def run(report: Report) -> None:
    for names, function in CASES:
        if any(report.wants(f"dask.{name}") for name in names):
            try:  # a crash in one group must not hide the other's results
                function(report)
            except Exception as error:
                report.error(f"dask.{names[0]}", error)


# --- one worker, two workers, the local pool -----------------------------------------------------


def workers(report: Report) -> None:
    files = SIZES.files
    rounds = SIZES.rounds or max(1, min(report.repeat, 2))  # a round is three full batches
    WORK.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        aws = aws_environment(stack.enter_context(s3_server()))
        env = {**ENV, **aws}
        fs = s3(aws)
        fs.mkdir(BUCKET)
        upload(fs, "in", range(files))
        upload(fs, "warm", range(files, files + WARM_UP_FILES))
        one = stack.enter_context(cluster(WORK / f"one-{os.getpid()}", env, 1))
        two = stack.enter_context(cluster(WORK / f"two-{os.getpid()}", env, 2))
        where = {"local": ["-j", "1"], "one": ["--scheduler", one], "two": ["--scheduler", two]}
        for name, options in where.items():  # untimed: workers import ctxpack, moto warms up
            timed(fs, env, "warm", name, options)
        best = dict.fromkeys(where, float("inf"))
        for round_ in range(rounds):
            order = list(where) if round_ % 2 == 0 else list(reversed(where))
            for name in order:
                best[name] = min(best[name], timed(fs, env, "in", name, where[name]))

    cpus = os.cpu_count()
    report.ratio(
        "dask.workers",
        best["one"],
        best["two"],
        WORKERS_TARGET,
        higher_is_better=True,
        note=(
            f"{files} files, micro -O on moto S3: 1-worker time / 2-worker time, --nthreads 1; "
            f"{cpus} CPUs shared with moto, the schedulers and the client"
        ),
    )
    report.info(
        "dask.throughput",
        files / best["two"],
        files / best["one"],
        "files/s",
        note=f"2 workers {files / best['two']:.1f} files/s, 1 worker {files / best['one']:.1f}",
    )
    report.info(
        "dask.vs_local",
        best["one"],
        best["local"],
        "s",
        note=f"1 Dask worker / local pool -j 1 ({files / best['local']:.1f} files/s), same batch",
    )
    report.info(
        "dask.overhead",
        (best["one"] - best["local"]) / files,
        best["local"] / files,
        "s",
        note="per file: (1-worker time - local -j 1 time) / files, against local time per file",
    )


def upload(fs: Any, prefix: str, indexes: range) -> None:
    """Sessions of 23 to 59 KB (16 to 32 tool calls), different for every index."""
    files = {
        f"{BUCKET}/{prefix}/t{i % 20:02}/s{i:05}.json": session(i, 16 + i % 17) for i in indexes
    }
    fs.pipe(files)


@contextmanager
def cluster(directory: Path, env: dict[str, str], count: int) -> Iterator[str]:
    """A scheduler and ``count`` workers of one thread each; yields the scheduler's address."""
    directory.mkdir(parents=True, exist_ok=True)
    started = Cluster(directory, env)
    try:
        started.start(workers=count)
        yield started.address
    finally:
        started.stop()


def timed(fs: Any, env: dict[str, str], prefix: str, name: str, options: list[str]) -> float:
    out = f"{BUCKET}/out-{name}-{time.monotonic_ns()}"
    command = [CTXPACK, "micro", "--keep-recent", "2", "-r", f"s3://{BUCKET}/{prefix}/"]
    try:
        return run_once([*command, "-O", f"s3://{out}/", *options], env)
    finally:
        if fs.exists(out):
            fs.rm(out, recursive=True)


# --- listing a million keys ----------------------------------------------------------------------

# Lists argv[1] keys as a batch does (argv[2]: "stream", or "hold" to keep every target). The
# keys come from s3fs's own paging listing, with only the ListObjectsV2 request answered here.
LISTER = """
import sys
from datetime import datetime, timezone

import fsspec
import s3fs

KEYS, HOLD = int(sys.argv[1]), sys.argv[2] == "hold"
MODIFIED = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Listed(s3fs.S3FileSystem):
    protocol = ("benchs3",)

    async def _call_s3(self, method, *args, **kwargs):
        if method == "head_object":  # the prefix given is not an object itself
            raise FileNotFoundError(kwargs.get("Key"))
        if method != "list_objects_v2":
            raise NotImplementedError(method)
        start = int(kwargs.get("ContinuationToken") or 0)
        end = min(start + min(int(kwargs.get("MaxKeys", 1000)), 1000), KEYS)
        prefix = kwargs.get("Prefix", "")
        contents = [
            {
                "Key": f"{prefix}t{i % 20:02}/s{i:07}.json",
                "LastModified": MODIFIED,
                "ETag": f'"{i:032x}"',
                "Size": 40000 + i % 20000,
                "StorageClass": "STANDARD",
            }
            for i in range(start, end)
        ]
        page = {"Contents": contents, "KeyCount": len(contents), "IsTruncated": end < KEYS}
        if end < KEYS:
            page["NextContinuationToken"] = str(end)
        return page


fsspec.register_implementation("benchs3", Listed, clobber=True)

from compactor_core.batch.engines import cluster_chunks
from compactor_core.batch.targets import Listing, find_targets

listed = find_targets(Listing(["benchs3://bench/in/"], True, output_dir="benchs3://bench/out/"))
held, count = [], 0
for chunk in cluster_chunks(listed):
    count += len(chunk)
    if HOLD:
        held.append(chunk)
if count != KEYS:
    sys.exit(f"listed {count} keys, not {KEYS}")
"""


def listing(report: Report) -> None:
    keys, half = SIZES.keys, SIZES.keys // 2
    started = time.perf_counter()
    ours = peak_rss([PYTHON, "-c", LISTER, str(keys), "stream"]) / MB
    rate = keys / (time.perf_counter() - started)
    base = peak_rss([PYTHON, "-c", LISTER, str(half), "stream"]) / MB
    report.ratio(
        "dask.listing_rss",
        ours,
        base,
        LISTING_TARGET,
        unit="MB",
        note=(
            f"peak RSS listing {keys:,} keys / listing {half:,}, through find_targets and the "
            "engine's chunks "
            f"({rate:,.0f} keys/s, no network)"
        ),
    )
    held = peak_rss([PYTHON, "-c", LISTER, str(half), "hold"]) / MB
    report.info(
        "dask.listing_held",
        held,
        base,
        "MB",
        note=f"the targets of {half:,} keys kept in a list / streamed: what the bound would catch",
    )


# --- on its own, with sizes ----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="cases (dask.workers, ...)")
    parser.add_argument("--files", type=int, help=f"sessions in the batch (default {SIZES.files})")
    parser.add_argument("--keys", type=int, help=f"keys to list (default {SIZES.keys:,})")
    parser.add_argument(
        "-n", "--repeat", type=int, default=2, help="timed rounds (best of N; default 2)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: {QUICK.files} files, {QUICK.keys:,} keys, one round",
    )
    args = parser.parse_args(argv)
    if args.quick:
        SIZES.files, SIZES.keys, SIZES.rounds = QUICK.files, QUICK.keys, QUICK.rounds
    SIZES.files = args.files or SIZES.files
    SIZES.keys = args.keys or SIZES.keys
    report = Report(repeat=max(args.repeat, 1), selection=tuple(args.names))
    started = time.perf_counter()
    print("[dask]", flush=True)
    run(report)
    print()
    print(report.table())
    print()
    print(f"{report.summary()} ({time.perf_counter() - started:.0f} s)")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
