"""Memory a large request took goes back to the system once it is done.

CPython frees a request's objects (those in reference cycles when its collector next runs), but
glibc's allocator keeps the freed pages of its heaps (and
raises its mmap threshold after a large free, so the next large body lands on the heap too): a
proxy that once read a 32 MB body, or parsed one, would hold that memory for ever.
``malloc_trim(0)`` hands the free pages back. Elsewhere than glibc it is not there: nothing to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import cache


def give_back_memory() -> None:
    # What a request leaves in reference cycles (an exchange's tasks, their frames, the body
    # they saw) waits for the collector, which counts objects, not bytes: collect it now.
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim():  # -> the C function, or None
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
