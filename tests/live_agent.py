"""A stand-in for a live agent, run as its own process: it appends lines to a session file the
way Claude Code does (open, append one line, close), at the moment the kernel says ctxpack has
reached a step.

    python live_agent.py FILE --watch DIR --on EVENT --name SUFFIX --lines N [--delay-us D]
                         [--hold] [--seed S]

It watches DIR with inotify and prints ``ready``; at the first EVENT (``create``, ``attrib``,
``close``, ``moved``, ``delete``) on a name ending in SUFFIX it waits a random 0..D microseconds
(spread over the window being aimed at) and appends N records numbered 1..N, each opened and
closed on its own. With ``--hold`` it opens FILE once when ready and writes every line through
that one descriptor, as a process that keeps the file open would. It prints ``done`` and how
long its slowest open took, in microseconds (an open held back by a lease takes long), and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from inotify import (
    IN_ATTRIB,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_MOVED_TO,
    Watch,
)

EVENTS = {
    "create": IN_CREATE,
    "attrib": IN_ATTRIB,
    "close": IN_CLOSE_WRITE,
    "moved": IN_MOVED_TO,
    "delete": IN_DELETE,
}


def record(number: int) -> bytes:
    """A Claude Code user record, its parent left out (a dangling parent is no ctxpack concern)."""
    body = {
        "type": "user",
        "uuid": f"live-agent-{number:04d}",
        "message": {"role": "user", "content": f"appended line {number}"},
    }
    return json.dumps(body).encode() + b"\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", type=Path)
    parser.add_argument("--watch", type=Path, required=True)
    parser.add_argument("--on", choices=EVENTS, required=True)
    parser.add_argument("--name", default="")
    parser.add_argument("--lines", type=int, default=5)
    parser.add_argument("--delay-us", type=int, default=0)
    parser.add_argument("--hold", action="store_true")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    delay = random.Random(args.seed).uniform(0, args.delay_us) / 1e6
    watch = Watch(args.watch, EVENTS[args.on])
    held = os.open(args.file, os.O_WRONLY | os.O_APPEND) if args.hold else None
    print("ready", flush=True)
    for _, name in watch.events(timeout=60):
        if name.endswith(args.name):
            break
    else:
        print("never woken", flush=True)
        return
    deadline = time.perf_counter() + delay
    while time.perf_counter() < deadline:  # a sleep would be far coarser than microseconds
        pass
    slowest = 0.0
    for number in range(1, args.lines + 1):
        started = time.perf_counter()
        fd = held if held is not None else os.open(args.file, os.O_WRONLY | os.O_APPEND)
        slowest = max(slowest, time.perf_counter() - started)
        os.write(fd, record(number))
        if held is None:
            os.close(fd)
    print(f"done {slowest * 1e6:.0f}", flush=True)


if __name__ == "__main__":
    main()
