"""A big conversation made of the bundled real transcripts: what real sessions are shaped like.

``generate.py`` writes about 5 KB per message; real sessions hold 0.6–2 KB per message (the
transcripts of ``tests/corpus``), which makes per-message work weigh more. This file is those
transcripts, one after the other and again, until it reaches the size asked for: their own
messages, tool calls and outputs, Anthropic blocks and OpenAI ``tool_calls`` alike. Each copy's
tool-call ids get a suffix of their own, so every result still answers its own call.

    python bench/real_shaped.py --size-mb 52     # prints the path (cached in bench/data/)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
DATA_DIR = Path(__file__).resolve().parent / "data"
VERSION = 1


def transcripts() -> list[list[dict[str, Any]]]:
    """The real transcripts of tests/corpus, in name order."""
    paths = sorted(path for path in CORPUS.glob("*.json") if path.name != "manifest.json")
    return [orjson.loads(path.read_bytes()) for path in paths]


def _renamed(messages: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    """The messages with every tool-call id (and the ids that answer them) given ``suffix``."""
    data = orjson.dumps(messages)
    for key in (b'"id":"', b'"tool_use_id":"', b'"tool_call_id":"'):
        data = data.replace(key, key + suffix.encode())
    return orjson.loads(data)


def build(size: int) -> bytes:
    sessions = transcripts()
    messages: list[dict[str, Any]] = []
    written, copy = 2, 0
    while written < size:
        for session in sessions:
            for message in _renamed(session, f"c{copy}-"):
                messages.append(message)
                written += len(orjson.dumps(message)) + 1
        copy += 1
    return orjson.dumps(messages)


def ensure(size: int, log: Any = None) -> Path:
    """The path of the file of about ``size`` bytes, built now unless it is there already."""
    path = DATA_DIR / f"real-shaped-v{VERSION}-{size}.json"
    if path.exists():
        return path
    data = build(size)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)
    if log:
        messages = len(orjson.loads(data))
        log(f"built {path.name}: {len(data) / 1e6:.1f} MB, {len(data) // messages} B a message")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=52.0)
    args = parser.parse_args(argv)
    print(ensure(int(args.size_mb * 1e6), log=lambda line: print(line, file=sys.stderr)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
