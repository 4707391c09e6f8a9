"""Paths and helpers shared by the tests (importable: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).parent
REPO = TESTS.parent
GOLDEN = TESTS / "golden"
# The public corpus lives beside the repository (CI runs in a clone with shared/ next to it).
SHARED = Path(__file__).parents[2] / "shared"
CORPUS = SHARED / "corpus"
CTXPACK = Path(sys.executable).parent / "ctxpack"


def corpus_files() -> list[Path]:
    """The real transcripts: every corpus/*.json except the manifest."""
    return sorted(path for path in CORPUS.glob("*.json") if path.name != "manifest.json")


def load_json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def run(
    *args: Any, stdin: bytes | None = b"", cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``ctxpack`` executable with the (isolated) environment of the test."""
    return subprocess.run(
        [str(CTXPACK), *(str(arg) for arg in args)],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        env=dict(os.environ),
    )


def fingerprint(path: Path) -> tuple[bytes, int, int]:
    """What must not change when a file is left alone: its bytes, mtime and mode."""
    status = path.stat()
    return path.read_bytes(), status.st_mtime_ns, status.st_mode


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()
