"""A straightforward reference for SPEC §1, written from the spec's table, one character at a time.

The implementation counts whole quarters with byte tricks for speed; this one sums float weights
per character and per value, as the spec words it, and rounds up once at the end.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import math
import struct
from typing import Any

CJK_RANGES = [
    (0x3000, 0x303F),
    (0x3040, 0x309F),
    (0x30A0, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x2F800, 0x2FA1F),
]
ASCII_ALNUM = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


@functools.cache  # only to keep the corpus tests quick
def char_weight(char: str) -> float:
    is_cjk = any(low <= ord(char) <= high for low, high in CJK_RANGES)
    if is_cjk and char.isspace():
        return 1.5 + 0.25 - 0.5  # U+3000, as the reference scores it
    if is_cjk:
        return 1.5
    if char in ASCII_ALNUM or char.isspace():
        return 0.25
    return 0.5


def reference_text(text: str) -> float:
    return sum(char_weight(char) for char in text)


def reference_value(value: Any) -> float:
    """What SPEC §1 counts of a content value."""
    if isinstance(value, str):
        return reference_text(value)
    if value is None:
        return 0.0
    if isinstance(value, list):
        return sum(reference_value(item) for item in value)
    if isinstance(value, dict):
        return reference_block(value)
    return reference_text(json.dumps(value))  # numbers and booleans: their JSON text


def reference_input(value: Any) -> float:
    if isinstance(value, dict | list):
        return reference_text(json.dumps(value, ensure_ascii=False))
    return reference_value(value)


def reference_block(block: dict[str, Any]) -> float:
    if block.get("type") == "tool_use":
        return reference_value(block.get("name")) + reference_input(block.get("input"))
    total = reference_value(block.get("text"))
    content = block.get("content")
    if block.get("type") == "tool_result" and isinstance(content, dict):
        total += reference_text(json.dumps(content, ensure_ascii=False))  # any JSON value
    else:
        total += reference_value(content)
    total += reference_input(block.get("input"))
    if block.get("type") != "tool_result":
        total += reference_value(block.get("name")) + reference_image(block)
    return total


def reference_image(block: dict[str, Any]) -> int:
    """An image's tokens (issue 26): width x height / 750 after the API's resize (long edge 1568,
    1.15 megapixels), read from a PNG's or GIF's header; an unreadable one by its bytes, at most
    the cap; one by reference the cap; 0 for no image."""
    most = math.ceil(1_150_000 / 750)
    kind = block.get("type")
    if kind is None and isinstance(block.get("inlineData"), dict):
        mime = block["inlineData"].get("mimeType")
        if isinstance(mime, str) and not mime.startswith("image/"):
            return 0
        data = block["inlineData"].get("data")
    elif kind == "image" and isinstance(block.get("source"), dict):
        where = block["source"]
        if where.get("type") != "base64":
            return most if where.get("type") in ("url", "file") else 0
        data = where.get("data")
    elif kind == "image":
        data = block.get("data")
    elif kind in ("image_url", "input_image"):
        url = block.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        if not (isinstance(url, str) and url.startswith("data:")):
            return most if isinstance(url, str) or isinstance(block.get("file_id"), str) else 0
        data = url.split(",", 1)[1] if "," in url else ""
    else:
        return 0
    if not isinstance(data, str):
        return 0
    raw = base64.b64decode(data[: len(data) // 4 * 4] + "", validate=False) if data else b""
    size = (len(data.rstrip()) - data.rstrip()[-2:].count("=")) * 3 // 4
    width = height = 0
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
    elif raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
    if not (width and height):
        return min(math.ceil(size / 750), most)
    shrink = min(1.0, 1568 / max(width, height)) ** 2
    return max(1, math.ceil(min(width * height * shrink, 1_150_000) / 750))


def reference_estimate(messages: list[dict], system: Any = None, compat: bool = False) -> int:
    if compat:
        return bareagent_estimate(messages)
    total = 0.0
    for message in messages:
        total += reference_value(message.get("content"))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            total += reference_value(function.get("name"))
            total += reference_input(function.get("arguments"))
    total += reference_value(system)
    return math.ceil(total)  # rounded up once, at the end


# --- the BareAgent profile ------------------------------------------------------------------------
# The original implementation's behaviour, rule by rule, written independently of
# compactor_core/compaction/bareagent.py: ``--compat bareagent`` must match these on every input.


def _ba_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def bareagent_estimate(messages: list[dict]) -> int:
    """Only each message's content; a name is counted through str(), a dict input as a block."""

    def walk(value: Any) -> float:
        if value is None:
            return 0.0
        if isinstance(value, str):
            return reference_text(value)
        if isinstance(value, list):
            return sum(walk(item) for item in value)
        if not isinstance(value, dict):
            return reference_text(_ba_json(value))
        if value.get("type") == "tool_use":
            return reference_text(str(value.get("name", ""))) + walk(value.get("input"))
        total = sum(walk(value[key]) for key in ("text", "content", "input") if key in value)
        if "name" in value and value.get("type") != "tool_result":
            total += reference_text(str(value["name"]))
        return total

    return math.ceil(sum(walk(message.get("content")) for message in messages))


def _ba_names(messages: list[dict]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            is_call = isinstance(block, dict) and block.get("type") == "tool_use"
            if is_call and str(block.get("id", "")):
                names[str(block.get("id", ""))] = str(block.get("name", "unknown"))
    return names


def _ba_result_blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def bareagent_micro(messages: list[dict], keep_recent: int = 3) -> list[dict]:
    """A micro-compacted deep copy: only tool_result blocks, all but the newest keep_recent
    messages holding them; the marker counts the result's str or JSON text ("" when missing)."""
    messages = copy.deepcopy(messages)
    names = _ba_names(messages)
    holding = [index for index, message in enumerate(messages) if _ba_result_blocks(message)]
    old = holding[:-keep_recent] if keep_recent > 0 else holding
    for index in old:
        for block in _ba_result_blocks(messages[index]):
            text = _ba_json(block.get("content", ""))
            if text.startswith("[truncated:"):
                continue
            tool = names.get(str(block.get("tool_use_id", "")), "unknown")
            block["content"] = f"[truncated: {tool} result, {len(text)} chars]"
    return messages


def bareagent_serialize(messages: list[dict]) -> str:
    names = _ba_names(messages)

    def content_text(content: Any) -> str:
        if content is None:
            return ""
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(filter(None, (block_text(block) for block in content)))
        return _ba_json(content)

    def block_text(block: Any) -> str:
        if isinstance(block, str):
            return block
        if not isinstance(block, dict):
            return _ba_json(block)
        if block.get("type") == "text":
            return str(block.get("text", ""))
        if block.get("type") == "tool_use":
            return f"[tool_use:{block.get('name', 'unknown')}] {_ba_json(block.get('input', {}))}"
        if block.get("type") == "tool_result":
            tool = names.get(str(block.get("tool_use_id", "")), "unknown")
            return f"[tool_result:{tool}] {_ba_json(block.get('content', ''))}"
        if "content" in block:
            return content_text(block["content"])
        if "text" in block:
            return str(block["text"])
        return _ba_json(block)

    parts = []
    for message in messages:
        parts += [f"[{message.get('role', 'unknown')}]", content_text(message.get("content")), ""]
    return "\n".join(parts).strip()


BAREAGENT_SYSTEM = (
    "你是 BareAgent 的上下文压缩助手。请用中文总结对话中的目标、已完成工作、关键约束、"
    "重要文件路径、工具执行结果要点，以及接下来继续工作所需的上下文。输出简洁但不能遗漏事实。"
)
BAREAGENT_INTRO = "请简洁总结以下对话的关键信息和已完成的工作，供后续继续工作使用：\n\n"


def bareagent_full(messages: list[dict], summarize: Any) -> tuple[list[dict], Any]:
    """A forced compaction: ``(result, prompt)``; ``prompt`` is None when nothing was sent.

    ``summarize(system, user)`` returns the summary text or raises (then the input comes back).
    """
    compacted = bareagent_micro(messages)
    pending = None
    history = compacted
    if compacted and compacted[-1].get("role") == "user":
        history, pending = compacted[:-1], copy.deepcopy(compacted[-1])
    source = [message for message in history if message.get("role") != "system"]
    if not source:
        return copy.deepcopy(messages), None
    prompt = (BAREAGENT_SYSTEM, BAREAGENT_INTRO + bareagent_serialize(source))
    try:
        summary = summarize(*prompt)
    except Exception:
        return copy.deepcopy(messages), prompt
    result = [copy.deepcopy(m) for m in compacted if m.get("role") == "system"]
    result.append({"role": "user", "content": f"[Context Compressed]\n{summary}"})
    result.append({"role": "assistant", "content": "收到，我已理解之前的上下文，继续工作。"})
    if pending is not None:
        result.append(pending)
    return result, prompt
