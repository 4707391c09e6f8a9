"""Telling a URL (``s3://bucket/key``) from a local path, and naming what lies below one."""

from __future__ import annotations

import re
from os import PathLike

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(name: str | PathLike[str]) -> bool:
    """Whether ``name`` names an object at a URL (``s3://b/k``) rather than a local path."""
    return isinstance(name, str) and _URL.match(name) is not None


def join(base: str, relative: str) -> str:
    """``base`` (a URL or a local folder) and a relative key below it."""
    return base.rstrip("/") + "/" + relative if relative else base
