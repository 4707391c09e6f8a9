"""OpenCode's messages and parts as the core's messages: what ``toModelMessages`` sends.

A user message is its text parts (not ``ignored``, not empty), its files, and a ``compaction``
part read as "What did we do so far?". An assistant message is left out when it failed (unless
it was aborted after saying something); otherwise each of its steps (``step-start`` parts
divide them) is one assistant message (its text, reasoning and calls) followed by one of its
calls' results: a completed tool's ``state.output`` ("[Old tool result content cleared]" once
OpenCode pruned it, unless ctxpack's marker is there), an error's text, "[Tool execution was
interrupted]" for one that never ended. Every call so has its result. An assistant message's
``tokens`` are its request's usage (``recorded_usage``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...compaction.micro import is_marker
from ...conversation.formats import Message
from ...session_files.base import COMPACTED, Record, RecordedCall
from ...session_files.usage import calls_of, token_count

COMPACTION_TEXT = "What did we do so far?"
CLEARED = "[Old tool result content cleared]"
INTERRUPTED = "[Tool execution was interrupted]"
SUBTASK_TEXT = "The following tool was executed by the user"
Part = dict[str, Any]


def as_messages(info: dict[str, Any], parts: list[Part]) -> list[Message]:
    """One OpenCode message (its ``info`` and ``parts``) as the messages it is sent as."""
    if not parts:
        return []
    if info.get("role") == "user":
        content = [block for part in parts for block in _user_blocks(part)]
        return [{"role": "user", "content": content}] if content else []
    if info.get("role") != "assistant" or not _sent_assistant(info, parts):
        return []
    messages: list[Message] = []
    for step in _steps(parts):
        said = [block for part in step for block in _assistant_blocks(part)]
        results = [_result(part) for part in step if part.get("type") == "tool"]
        if said:
            messages.append({"role": "assistant", "content": said})
        if results:
            messages.append({"role": "user", "content": results})
    return messages


def _steps(parts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    steps: list[list[dict[str, Any]]] = [[]]
    for part in parts:
        if part.get("type") == "step-start" and steps[-1]:
            steps.append([])
        steps[-1].append(part)
    return steps


def _sent_assistant(meta: dict[str, Any], parts: list[dict[str, Any]]) -> bool:
    """OpenCode leaves out a failed reply, unless it was aborted after saying something."""
    error = meta.get("error")
    if not error:
        return True
    aborted = isinstance(error, dict) and error.get("name") == "MessageAbortedError"
    return aborted and any(p.get("type") not in ("step-start", "reasoning") for p in parts)


def _user_blocks(part: dict[str, Any]) -> list[dict[str, Any]]:
    kind = part.get("type")
    if kind == "text" and not part.get("ignored") and part.get("text"):
        return [{"type": "text", "text": part["text"]}]
    if kind == "file" and part.get("mime") not in ("text/plain", "application/x-directory"):
        return [{"type": "file", "mime": part.get("mime"), "filename": part.get("filename")}]
    if kind == "compaction":
        return [{"type": "text", "text": COMPACTION_TEXT}]
    if kind == "subtask":
        return [{"type": "text", "text": SUBTASK_TEXT}]
    return []


def _assistant_blocks(part: dict[str, Any]) -> list[dict[str, Any]]:
    kind = part.get("type")
    if kind in ("text", "reasoning") and part.get("text"):
        return [{"type": "text", "text": part["text"]}]
    if kind == "tool":
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        return [
            {
                "type": "tool_use",
                "id": part.get("callID"),
                "name": part.get("tool"),
                "input": state.get("input"),
            }
        ]
    return []


def _result(part: dict[str, Any]) -> dict[str, Any]:
    """A tool part's result as OpenCode sends it (what it never stored is not changed)."""
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    status = state.get("status")
    if status == "completed":
        output = state.get("output")
        compacted = (state.get("time") or {}).get("compacted")
        if compacted and not is_marker(output):
            output = CLEARED
    elif status == "error":
        metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        interrupted = metadata.get("interrupted") is True and isinstance(
            metadata.get("output"), str
        )
        output = metadata["output"] if interrupted else state.get("error")
    else:
        output = INTERRUPTED
    return {"type": "tool_result", "tool_use_id": part.get("callID"), "content": output}


def recorded_usage(records: Iterable[tuple[int, Record]]) -> list[RecordedCall]:
    """Each assistant message's ``tokens`` (the AI SDK's counting: ``input`` is plain, the
    cache's reads and writes apart); a ``compaction`` part changed what the next request sent."""
    return calls_of(records, _usage, _change)


def _usage(record: Record) -> dict[str, Any] | None:
    info = record.get("info")
    if not isinstance(info, dict) or info.get("role") != "assistant":
        return None
    tokens, time = info.get("tokens"), info.get("time")
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    return {
        "time": time.get("created") if isinstance(time, dict) else None,
        "model": info.get("modelID"),
        "plain": tokens.get("input"),
        "read": cache.get("read"),
        "written": cache.get("write"),
        "output": token_count(tokens.get("output")) + token_count(tokens.get("reasoning")),
    }


def _change(record: Record) -> str | None:
    parts = record.get("parts")
    compacted = isinstance(parts, list) and any(_is_compaction(part) for part in parts)
    return COMPACTED if compacted else None


def _is_compaction(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "compaction"
