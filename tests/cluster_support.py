"""Real parts for the object-storage and cluster tests, all on 127.0.0.1.

- ``s3_server``: moto's S3 API in server mode (``ThreadedMotoServer``), reached over HTTP by
  s3fs in this process, in the ``ctxpack`` processes and in the Dask workers alike, through the
  standard variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...).
- ``Cluster``: a real ``dask scheduler`` and ``dask worker`` processes, started as separate
  processes with that environment.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
SECRET = "wJalrXUtnFEMI-test-secret-never-printed"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def aws_environment(endpoint: str) -> dict[str, str]:
    """The standard AWS variables pointing at the local server (and nowhere else)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_CONFIG_FILE": os.devnull,
    }


@contextmanager
def s3_server() -> Iterator[str]:
    """A moto S3 server on a free port of 127.0.0.1; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def s3(environment: dict[str, str]) -> Any:
    """An s3fs filesystem for the test itself, without caches, on the local server."""
    import s3fs

    return s3fs.S3FileSystem(
        key=environment["AWS_ACCESS_KEY_ID"],
        secret=environment["AWS_SECRET_ACCESS_KEY"],
        endpoint_url=environment["AWS_ENDPOINT_URL"],
        skip_instance_cache=True,
        use_listings_cache=False,
    )


@dataclass
class Cluster:
    """A Dask scheduler and its workers, each a process of its own."""

    directory: Path
    environment: dict[str, str]
    scheduler: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    address: str = ""

    def start(self, workers: int) -> None:
        scheduler_file = self.directory / "scheduler.json"
        self.scheduler = self._spawn(
            "dask",
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(scheduler_file),
        )
        self.address = _wait_for_address(scheduler_file)
        for _ in range(workers):
            self.add_worker()
        self.wait_for_workers(workers)

    def add_worker(self) -> None:
        worker = self._spawn(
            "dask",
            "worker",
            self.address,
            "--host",
            "127.0.0.1",
            "--nthreads",
            "1",
            "--no-nanny",
            "--no-dashboard",
            "--local-directory",
            str(self.directory),
        )
        self.workers.append(worker)

    def _spawn(self, *command: str) -> subprocess.Popen[bytes]:
        log = open(self.directory / f"{command[1]}-{len(self.workers)}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(
            [str(BIN / command[0]), *command[1:]],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.environment},
            cwd=self.directory,
        )

    def client(self) -> Any:
        from distributed import Client

        return Client(self.address, timeout="20s")

    def wait_for_workers(self, count: int) -> None:
        with self.client() as client:
            client.wait_for_workers(count, timeout=60)

    def stop(self, grace: float = 0.5) -> None:
        """SIGTERM to every process, SIGKILL to any still there ``grace`` seconds later: a
        ``--no-nanny`` worker sometimes logs its end and then does not exit (one of two, even
        idle, was still there after 5 s when the other had gone in 0.12 s)."""
        processes = [process for process in [*self.workers, self.scheduler] if process]
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_for_address(scheduler_file: Path, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return json.loads(scheduler_file.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.1)
    raise TimeoutError("the Dask scheduler did not start")


def session(index: int, tool_calls: int = 6) -> bytes:
    """A small saved session with tool results to truncate, different for every index."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"task {index}: fix the build"}]
    for call in range(tool_calls):
        call_id = f"call_{index}_{call}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": call_id, "name": "bash", "input": {"cmd": "make"}}
                ],
            }
        )
        output = f"line {call} of session {index}: error in src/file_{call}.c\n" * (20 + call)
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
            }
        )
    messages.append({"role": "assistant", "content": f"done with {index}"})
    return json.dumps(messages, ensure_ascii=False).encode()
