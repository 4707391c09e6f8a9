"""Issue 12 through the real executable: batches on object storage and on a Dask cluster.

Real parts only, all on 127.0.0.1: moto's S3 server (s3fs talks to it over HTTP), one Dask
scheduler and two workers started as separate processes for the whole module, and ``ctxpack``
processes. What is checked: a distributed run writes byte for byte what a local run writes; a
worker SIGKILLed mid-task still gives a complete, correct result; a killed run re-run does only
the rest and says how many it skipped; bad objects fail as bad local files do; the credentials
never show; ``estimate --summary`` gives the figures of the files.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_support import SECRET, Cluster, aws_environment, s3, s3_server, session
from helpers import CORPUS, CTXPACK, run, still_running

from compactor_core.compaction.pipeline import run as run_job
from compactor_core.conversation.formats import dump, parse
from compactor_core.settings import RunSettings, Settings

SUMMARY = re.compile(r"^ctxpack: (\d+) files, (\d+) changed, (\d+) failed, tokens (\d+) -> (\d+)")
MICRO = ("micro", "--keep-recent", "2")
KILLED = 160  # sessions of the batch whose worker is killed
RERUN = 100  # sessions of the batch killed and run again


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, str]]:
    with s3_server() as endpoint:
        yield aws_environment(endpoint)


@pytest.fixture(scope="module")
def cluster(aws: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("dask"), aws)
    try:
        cluster.start(workers=2)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(autouse=True)
def aws_variables(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in aws.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def fs(aws: dict[str, str]) -> Any:
    return s3(aws)


def sessions(count: int) -> dict[str, bytes]:
    """Inputs by relative key: sessions in three folders, a corpus file, and files to pass over."""
    files = {f"team{index % 3}/s{index:04}.json": session(index) for index in range(count)}
    files["team0/.hidden.json"] = session(9999)
    files["notes.txt"] = b"not a session"
    files["oai_taubench_airline_task33.json"] = (
        CORPUS / "oai_taubench_airline_task33.json"
    ).read_bytes()
    return files


def upload(fs: Any, bucket: str, prefix: str, files: dict[str, bytes]) -> None:
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    fs.pipe({f"{bucket}/{prefix}/{key}": data for key, data in files.items()})


def write_local(root: Path, files: dict[str, bytes]) -> None:
    for key, data in files.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def objects(fs: Any, prefix: str) -> dict[str, bytes]:
    keys = fs.find(prefix)
    return {key[len(prefix) + 1 :]: fs.cat_file(key) for key in keys}


def local_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()
    }


def expected_micro(files: dict[str, bytes]) -> dict[str, bytes]:
    """What ``micro --keep-recent 2`` makes of each session, worked out in this process."""
    job = RunSettings("micro", Settings(keep_recent=2))
    results = {}
    for key, data in files.items():
        if key.endswith(".json") and not key.rsplit("/", 1)[-1].startswith("."):
            results[key] = dump(run_job(job, parse(data, key)).conversation)
    return results


def summary(done: subprocess.CompletedProcess[bytes] | str) -> tuple[int, ...]:
    text = done if isinstance(done, str) else done.stderr.decode()
    match = SUMMARY.match(text.rstrip("\n").splitlines()[-1])
    assert match, text
    return tuple(int(group) for group in match.groups())


def skipped(stderr: bytes) -> int:
    match = re.search(r", (\d+) skipped \(output already current\)", stderr.decode())
    return int(match.group(1)) if match else 0


def without_prefix(report: dict[str, Any], prefix: str) -> dict[str, Any]:
    for result in report["results"]:
        result["path"] = result["path"].removeprefix(prefix)
    return report


# --- the same bytes as a local run ---------------------------------------------------------------


def test_a_run_on_the_cluster_writes_what_a_local_run_writes(
    fs: Any, cluster: Cluster, tmp_path: Path
) -> None:
    files = sessions(12)
    upload(fs, "same", "in", files)
    write_local(tmp_path / "in", files)

    local = run(*MICRO, "-r", tmp_path / "in", "-O", tmp_path / "out", "--json")
    on_dask = run(
        *MICRO,
        "-r",
        "s3://same/in/",
        "-O",
        "s3://same/out/",
        "--json",
        "--scheduler",
        cluster.address,
    )
    assert local.returncode == on_dask.returncode == 0, on_dask.stderr
    assert objects(fs, "same/out") == local_files(tmp_path / "out") == expected_micro(files)
    assert summary(on_dask) == summary(local)
    assert summary(local)[0] == 13 and summary(local)[2] == 0
    assert without_prefix(json.loads(on_dask.stdout), "s3://same/in/") == without_prefix(
        json.loads(local.stdout), f"{tmp_path / 'in'}/"
    )

    pool = run(*MICRO, "-r", "s3://same/in/", "-O", "s3://same/pool/", "-j", "2")
    assert pool.returncode == 0, pool.stderr
    assert objects(fs, "same/pool") == objects(fs, "same/out")


def test_engine_dask_starts_a_local_cluster_of_j_workers(fs: Any, tmp_path: Path) -> None:
    files = {key: data for key, data in sessions(8).items() if key.endswith(".json")}
    upload(fs, "engine", "in", files)
    write_local(tmp_path / "in", files)
    options = ("auto", "--threshold", "400", "--transcript-dir", tmp_path / "snaps")

    local = run(*options, "-r", tmp_path / "in", "-O", tmp_path / "out")
    on_dask = run(
        *options, "-r", "s3://engine/in/", "-O", "s3://engine/out/", "--engine", "dask", "-j", "2"
    )
    assert local.returncode == on_dask.returncode == 0, on_dask.stderr
    assert objects(fs, "engine/out") == local_files(tmp_path / "out")
    assert summary(on_dask) == summary(local)


# --- safe and resumable --------------------------------------------------------------------------


def test_a_worker_killed_mid_task_loses_nothing(fs: Any, cluster: Cluster) -> None:
    # Enough work that both workers are still busy well after the kill (a few seconds' worth)
    files = {f"k/s{index:04}.json": session(index, tool_calls=12) for index in range(KILLED)}
    upload(fs, "killed", "in", files)
    batch = subprocess.Popen(
        [
            CTXPACK,
            *MICRO,
            "-r",
            "s3://killed/in/",
            "-O",
            "s3://killed/out/",
            "--scheduler",
            cluster.address,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    with cluster.client() as client:
        victim = _busy_worker(client)
        pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)
    cluster.add_worker()  # for the tests after this one; it may join this batch, which is fine
    _, stderr = batch.communicate(timeout=180)
    assert batch.returncode == 0, stderr
    # A chunk the dead worker had begun is done again elsewhere: the outputs it had already
    # written whole are current and skipped, the rest are written. Every file is done once.
    files_seen, changed, failed = summary(stderr.decode())[:3]
    assert (files_seen, failed) == (KILLED, 0)
    assert changed + skipped(stderr) == KILLED, stderr
    assert objects(fs, "killed/out") == expected_micro(files)
    cluster.wait_for_workers(2)


def _busy_worker(client: Any, timeout: float = 60) -> str:
    """A worker that is running a chunk of the batch (with its first outputs written)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = [worker for worker, tasks in client.processing().items() if tasks]
        if busy and len(busy) == 2:
            return busy[0]
        time.sleep(0.02)
    raise AssertionError("no worker ever had a task")


def test_local_dask_workers_die_with_their_client(tmp_path: Path) -> None:
    """Issue 22.5: the client of a local cluster killed alone must not leave its workers."""
    import psutil
    from test_batch import write_session

    root = tmp_path / "d"
    paths = [write_session(root / f"s{n:03}.json", turns=8, size=1500, seed=n) for n in range(300)]
    sizes = {path: path.stat().st_size for path in paths}
    command = [CTXPACK, "micro", "-i", "-r", root, "--engine", "dask", "-j", "2", "--no-snapshot"]
    client = subprocess.Popen(command, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and client.poll() is None:
            changed = sum(path.stat().st_size != size for path, size in sizes.items())
            if changed >= 10:
                break
            time.sleep(0.01)
        workers = psutil.Process(client.pid).children(recursive=True)
        assert len(workers) >= 2 and client.poll() is None
    finally:
        client.kill()
        client.wait()
    survivors = still_running(workers, timeout=5)
    for worker in survivors:
        worker.kill()
    assert survivors == []


def test_a_killed_run_re_run_does_only_the_rest(fs: Any, tmp_path: Path) -> None:
    # The kill comes once 20 outputs are there: the rest take a second or more to write
    files = {f"r/s{index:04}.json": session(index, tool_calls=12) for index in range(RERUN)}
    upload(fs, "rerun", "in", files)
    command = [CTXPACK, *MICRO, "-r", "s3://rerun/in/", "-O", "s3://rerun/out/", "-j", "2"]
    batch = subprocess.Popen(command, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(fs.find("rerun/out")) < 20 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(batch.pid, signal.SIGKILL)  # the client and its worker processes
    batch.wait()
    time.sleep(0.3)
    written = len(fs.find("rerun/out"))
    assert 20 <= written < RERUN

    again = run(*command[1:])
    assert again.returncode == 0, again.stderr
    assert skipped(again.stderr) == written
    assert summary(again)[:3] == (RERUN, RERUN - written, 0)
    assert objects(fs, "rerun/out") == expected_micro(files)

    # A new version of one input, then other settings: each re-run on ten of the inputs is enough
    ten = ("--glob", "s000?.json")
    fs.pipe_file("rerun/in/r/s0000.json", session(5000))
    third = run(*command[1:], *ten)
    assert skipped(third.stderr) == 9 and summary(third)[:2] == (10, 1)
    assert (
        fs.cat_file("rerun/out/r/s0000.json") == expected_micro({"x.json": session(5000)})["x.json"]
    )
    other_settings = run("micro", "--keep-recent", "1", *command[4:], *ten)
    assert skipped(other_settings.stderr) == 0 and summary(other_settings)[:2] == (10, 10)


def test_in_place_on_object_storage_keeps_the_original(fs: Any, cluster: Cluster) -> None:
    files = {f"s{index}.json": session(index) for index in range(4)}
    upload(fs, "inplace", "in", files)
    done = run(
        *MICRO,
        "-i",
        "-r",
        "s3://inplace/in/",
        "--backup",
        ".orig",
        "--transcript-dir",
        "s3://inplace/snapshots/",
        "--scheduler",
        cluster.address,
    )
    assert done.returncode == 0, done.stderr
    assert objects(fs, "inplace/in") == {
        **expected_micro(files),
        **{f"{key}.orig": data for key, data in files.items()},
    }
    snapshots = objects(fs, "inplace/snapshots")
    assert len(snapshots) == 8  # each original and its .meta, as in a local folder
    stamp = r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{6}"
    for name, data in snapshots.items():
        if name.endswith(".meta"):
            continue
        key = re.fullmatch(rf"(s\d)-[0-9a-f]{{8}}_{stamp}\.original\.json", name)
        assert key, name
        assert data == files[f"{key.group(1)}.json"]  # the original, byte for byte
        meta = json.loads(snapshots[name + ".meta"])
        assert (meta["kind"], meta["size"]) == ("original", len(data))

    again = run(
        *MICRO,
        "-i",
        "s3://inplace/in/s0.json",
        "s3://inplace/in/s1.json",
        "--transcript-dir",
        "s3://inplace/snapshots/",
    )
    assert again.returncode == 0, again.stderr
    assert skipped(again.stderr) == 2
    assert len(fs.find("inplace/snapshots")) == 8


# --- failures as for local files -----------------------------------------------------------------


BAD = {"good.json": session(1), "bad.json": b'[{"role": "user", "content": "x"', "empty.json": b""}


def test_bad_objects_fail_as_bad_local_files_do(fs: Any, cluster: Cluster, tmp_path: Path) -> None:
    upload(fs, "bad", "in", BAD)
    write_local(tmp_path / "in", BAD)
    local = run(*MICRO, "-r", tmp_path / "in", "-O", tmp_path / "out")
    remote = run(
        *MICRO, "-r", "s3://bad/in/", "-O", "s3://bad/out/", "--scheduler", cluster.address
    )
    assert local.returncode == remote.returncode == 65
    local_lines = local.stderr.decode().replace(f"{tmp_path / 'in'}/", "PREFIX/").splitlines()
    remote_lines = remote.stderr.decode().replace("s3://bad/in/", "PREFIX/").splitlines()
    # a file's line comes when its worker is done, in either order; the batch's line is last
    assert remote_lines[-1] == local_lines[-1]
    assert sorted(remote_lines[:-1]) == sorted(local_lines[:-1])
    for name in ("bad.json", "empty.json"):
        single_local = run("estimate", tmp_path / "in" / name)
        single = run("estimate", f"s3://bad/in/{name}")
        assert single.returncode == single_local.returncode == 65
        assert single.stderr.decode().replace("s3://bad/in/", "PREFIX/") == (
            single_local.stderr.decode().replace(f"{tmp_path / 'in'}/", "PREFIX/")
        )


def test_a_missing_bucket_is_a_missing_file(tmp_path: Path) -> None:
    for name in ("s3://no-such-bucket/in/", "s3://no-such-bucket/x.json"):
        done = run(*MICRO, "-r", name, "-O", tmp_path / "out")
        assert done.returncode == 66
        assert done.stderr.decode().splitlines()[0] == f"ctxpack: {name}: no such file"
    local = run(*MICRO, "-r", tmp_path / "missing.json", "-O", tmp_path / "out")
    assert local.returncode == 66
    assert local.stderr.decode().splitlines()[0].endswith("missing.json: no such file")
    estimate = run("estimate", "s3://no-such-bucket/x.json")
    assert (estimate.returncode, estimate.stderr) == (
        66,
        b"ctxpack: s3://no-such-bucket/x.json: no such file\n",
    )


def test_no_credentials_is_an_unreadable_input(
    fs: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    upload(fs, "creds", "in", {"good.json": session(1)})
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    for command in (
        ("estimate", "s3://creds/in/good.json"),
        (*MICRO, "-r", "s3://creds/in/", "-O", tmp_path / "out"),
    ):
        done = run(*command)
        assert done.returncode == 66
        assert done.stderr.decode().splitlines() == [
            "ctxpack: s3://creds/in/"
            + ("good.json" if command[0] == "estimate" else "")
            + ": cannot read: no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,"
            " or AWS_PROFILE)"
        ]


def test_the_secret_key_never_shows(fs: Any, cluster: Cluster, tmp_path: Path) -> None:
    upload(fs, "secret", "in", {**BAD, "deep/s.json": session(2)})
    runs = [
        run(
            *MICRO,
            "-r",
            "s3://secret/in/",
            "-O",
            "s3://secret/out/",
            "--json",
            "--stats",
            "--scheduler",
            cluster.address,
        ),
        run(*MICRO, "-r", "s3://secret/in/", "-O", "s3://no-such-bucket/out/", "--json"),
        run("estimate", "-r", "s3://secret/in/", "--summary", "--json"),
    ]
    assert all(done.returncode != 0 for done in runs)
    for done in runs:
        assert SECRET.encode() not in done.stdout + done.stderr
        assert b"Traceback" not in done.stderr


# --- corpus statistics ---------------------------------------------------------------------------


def test_estimate_summary_is_computed_on_the_workers(
    fs: Any, cluster: Cluster, tmp_path: Path
) -> None:
    files = sessions(40)
    upload(fs, "stats", "in", files)
    write_local(tmp_path / "in", files)
    per_file = run("estimate", "-r", tmp_path / "in")
    tokens = sorted(int(line.split("\t")[0]) for line in per_file.stdout.decode().splitlines())
    assert len(tokens) == 41

    done = run(
        "estimate", "-r", "s3://stats/in/", "--summary", "--json", "--scheduler", cluster.address
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["files"] == 41 and figures["failed"] == 0
    assert figures["total"] == sum(tokens) and figures["max"] == tokens[-1]
    assert figures["p50"] == tokens[20] and figures["p90"] == tokens[36]
    assert figures["p99"] == tokens[40]
    assert [item["tokens"] for item in figures["largest"]] == tokens[::-1][:10]
    assert figures["largest"][0]["path"] == "s3://stats/in/oai_taubench_airline_task33.json"

    text = run("estimate", "-r", "s3://stats/in/", "--summary", "-j", "2")
    assert text.stdout.decode().splitlines()[:3] == [
        "files   41",
        f"total   {sum(tokens)}",
        f"mean    {round(sum(tokens) / 41, 1)}",
    ]


def test_the_plain_cli_imports_no_extra_at_start_up() -> None:
    code = (
        "import sys, cli.main, cli.run\n"
        "import compactor_core.batch.engines, compactor_core.batch.targets\n"
        "extras = ('fsspec', 's3fs', 'botocore', 'aiobotocore', 'dask', 'distributed')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(extras)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
