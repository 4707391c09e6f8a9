"""Worker processes die with the process that started them: no orphan goes on rewriting files.

A batch's worker that outlived a killed parent (``kill -9``, the OOM killer) went on rewriting
files nobody would report, then slept forever under PID 1. Each worker asks, as it starts, to
be killed when its parent dies: on Linux the kernel does it (``prctl(PR_SET_PDEATHSIG)``, through
ctypes); elsewhere a thread of the worker looks at its parent once a second. Either way, a
parent that died before the worker asked is caught by comparing the worker's parent with the
one that started it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
LOOK_EVERY = 1.0  # seconds between looks where the kernel cannot be asked


def die_with_parent(parent: int) -> None:
    """Make this process die when ``parent`` (the pid that started it) does."""
    if not _kernel_kills_on_parent_death():
        threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watch").start()
    if os.getppid() != parent:  # it died before the kernel was asked: nobody will ever look
        os._exit(1)


def _kernel_kills_on_parent_death() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(LOOK_EVERY)
    os._exit(1)
