"""Damage a real agent's session file the ways sessions are found broken in the agents' trackers.

Each function changes the session file in place, in the agent's own format, and returns a line
saying what it did:

- ``big_image``: the session's image (one the agent itself stored, from its own read tool)
  becomes one the API refuses: over 5 MB (``wide_image``: over 8000 pixels on a side);
- ``removed_result``: the oldest tool result is gone, as when the agent was killed between the
  call and its result (where records are chained, its children now follow its parent);
- ``cut_chain``: a record in the middle names a parent no record has, so a resume follows the
  chain back only that far;
- ``huge_record``: one tool output is 20 MB, every copy of it;
- ``line_separator``: a raw U+2028 in the first request (Copilot CLI's reader splits on it);
- ``long_history``: every turn's shell output is 600 KB longer: each record is within every limit,
  the history is not (over a 200,000-token window).

Written independently of ctxpack: plain JSON, line by line.
"""

from __future__ import annotations

import base64
import json
import random
import re
import struct
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

Record = dict[str, Any]
# The key that chains each agent's records, if any.
PARENT_KEYS = {
    "claude-code": ("uuid", "parentUuid"),
    "qwen-code": ("uuid", "parentUuid"),
    "pi": ("id", "parentId"),
    "copilot-cli": ("id", "parentId"),
}
HUGE = 20_000_000


def png(width: int, height: int, noise: bool = False, seed: int = 0) -> bytes:
    """A PNG of this size: one colour (small), or noise (about 3 bytes a pixel, incompressible)."""
    if noise:
        rows = random.Random(seed)
        raw = b"".join(b"\x00" + rows.randbytes(width * 3) for _ in range(height))
    else:
        raw = (b"\x00" + bytes([200, 30, 30]) * width) * height

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 1))
        + chunk(b"IEND", b"")
    )


SMALL_PNG = png(64, 48)  # the screenshot the agents read when their session is made
TOO_WIDE = png(9000, 40)  # 9000 px: over 8000
TOO_HEAVY = png(1400, 1300, noise=True)  # 5.5 MB: over 5 MB


def big_image(path: Path, agent: str, image: bytes = TOO_HEAVY) -> str:
    """Every copy of the session's small screenshot becomes ``image``."""
    small = base64.b64encode(SMALL_PNG)
    data = path.read_bytes()
    copies = data.count(small)
    assert copies, f"{path}: the agent stored no copy of the screenshot"
    path.write_bytes(data.replace(small, base64.b64encode(image)))
    return f"{copies} copies of the screenshot replaced by {len(image)} bytes"


def wide_image(path: Path, agent: str) -> str:
    """``big_image`` with an image of 9000 px by 40: small in bytes, over 8000 px."""
    return big_image(path, agent, TOO_WIDE)


def huge_record(path: Path, agent: str, size: int = HUGE) -> str:
    """One line of the first shell output, in every copy, becomes ``size`` characters long."""
    data = path.read_bytes()
    line = re.search(rb"turn 0: build step 7 compiled", data)
    assert line, f"{path}: no shell output to blow up"
    filler = b"x" * (size // 16) + b" " + b"y" * (size - size // 16 - 1)
    path.write_bytes(data.replace(line[0], line[0] + b" " + filler))
    return f"a shell output grew by {size} bytes"


def long_history(path: Path, agent: str, size: int = 600_000) -> str:
    """The first line of each turn's first shell output, in every copy, grows by ``size``."""
    data = path.read_bytes()
    lines = sorted(set(re.findall(rb"turn \d+: build step 7 compiled", data)))
    assert lines, f"{path}: no shell output to blow up"
    for line in lines:
        data = data.replace(line, line + b" " + b"z" * size)
    path.write_bytes(data)
    return f"{len(lines)} shell outputs grew by {size} bytes each"


def line_separator(path: Path, agent: str) -> str:
    """The first request's text gains a raw U+2028 (valid JSON, one line to a JSON reader)."""
    data = path.read_bytes()
    assert b"Request 0:" in data, f"{path}: no first request"
    path.write_bytes(data.replace(b"Request 0:", "Request 0:\u2028".encode(), 1))
    return "a raw U+2028 in the first request"


def removed_result(path: Path, agent: str, newest: bool = False) -> str:
    """The oldest (or the newest) tool result is removed from the file; its call stays."""
    records = _records(path)
    call_id = _first_result(records[::-1] if newest else records, agent)
    assert call_id is not None, f"{path}: no tool result"
    kept: list[Record] = []
    for record in records:
        if _holds_only(record, agent, call_id):
            _bypass(records, record, agent)
            continue
        kept.append(_without_result(record, call_id) if agent == "gemini-cli" else record)
    _write(path, kept)
    return f"the result of {call_id} removed"


def removed_call(path: Path, agent: str) -> str:
    """The record of the oldest tool call is removed as a lost line is: its results stay, and
    the records that followed it name a parent that no record has."""
    records = _records(path)
    call_id = _first_result(records, agent)
    assert call_id is not None, f"{path}: no tool result"
    call = next(r for r in records if call_id in json.dumps(r) and not _results(r, agent))
    _write(path, [record for record in records if record is not call])
    return f"the record of call {call_id} removed"


def cut_chain(path: Path, agent: str) -> str:
    """The second user request names a parent that no record has."""
    own, parent = PARENT_KEYS[agent]
    records = _records(path)
    requests = [r for r in records if _is_request(r, agent)]
    assert len(requests) >= 2, f"{path}: fewer than two requests"
    requests[1][parent] = str(uuid.uuid4())
    _write(path, records)
    return f"the parent of {requests[1][own]} is now a record that does not exist"


DAMAGES: dict[str, Callable[[Path, str], str]] = {
    "big_image": big_image,
    "wide_image": wide_image,
    "removed_result": removed_result,
    "removed_call": removed_call,
    "cut_chain": cut_chain,
    "huge_record": huge_record,
    "long_history": long_history,
    "line_separator": line_separator,
}


# --- records -------------------------------------------------------------------------------------


def _records(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _write(path: Path, records: list[Record]) -> None:
    lines = (json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _results(record: Record, agent: str) -> list[Any]:
    """The call ids of the tool results a record holds (not its UI copies)."""
    if agent == "claude-code":
        content = (record.get("message") or {}).get("content")
        return [
            block.get("tool_use_id")
            for block in (content if isinstance(content, list) else ())
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
    if agent == "codex":
        payload = record.get("payload") or {}
        is_output = record.get("type") == "response_item" and payload.get("type", "").endswith(
            "_call_output"
        )
        return [payload.get("call_id")] if is_output else []
    if agent in ("gemini-cli", "qwen-code"):
        parts = (record.get("message") or {}).get("parts") or record.get("content")
        return [
            part["functionResponse"].get("id")
            for part in (parts if isinstance(parts, list) else ())
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)
        ]
    if agent == "pi":
        message = record.get("message") or {}
        return [message.get("toolCallId")] if message.get("role") == "toolResult" else []
    data = record.get("data") or {}
    return [data.get("toolCallId")] if record.get("type") == "tool.execution_complete" else []


def _first_result(records: list[Record], agent: str) -> Any:
    for record in records:
        found = _results(record, agent)
        if found:
            return found[0]
    return None


def _holds_only(record: Record, agent: str, call_id: Any) -> bool:
    return _results(record, agent) == [call_id]


def _bypass(records: list[Record], removed: Record, agent: str) -> None:
    """Records that followed the removed one follow its parent, as if it was never written."""
    if agent not in PARENT_KEYS:
        return
    own, parent = PARENT_KEYS[agent]
    for record in records:
        if record is not removed and record.get(parent) == removed.get(own):
            record[parent] = removed.get(parent)


def _without_result(value: Any, call_id: Any) -> Any:
    """Gemini CLI keeps a result in its call (``toolCalls[].result``) and again in a user
    message: both go, in every checkpoint too."""
    if isinstance(value, list):
        return [
            _without_result(item, call_id)
            for item in value
            if not (isinstance(item, dict) and _answers(item, call_id))
        ]
    if not isinstance(value, dict):
        return value
    changed = {key: _without_result(item, call_id) for key, item in value.items()}
    if changed.get("id") == call_id and "result" in changed:
        del changed["result"]
    return changed


def _answers(part: dict[str, Any], call_id: Any) -> bool:
    response = part.get("functionResponse")
    return isinstance(response, dict) and response.get("id") == call_id


def _is_request(record: Record, agent: str) -> bool:
    """A user's own request (not a tool result), whose text the session's runs wrote."""
    text = json.dumps(record)
    if "Request 1" not in text and "Request 0" not in text:
        return False
    if agent == "claude-code":
        return record.get("type") == "user" and not _results(record, agent)
    if agent == "qwen-code":
        return record.get("type") == "user"
    if agent == "pi":
        return (record.get("message") or {}).get("role") == "user"
    return record.get("type") == "user.message"
