"""Codex rollouts made by tests in the shapes Codex 0.169 writes, and commands run on them.

``Rollout`` writes lines the way the real Codex does (see tests/fixtures/codex, which it wrote):
``{timestamp, ordinal, type, payload}``, the session_meta first, tool calls as ``response_item``
``function_call`` items answered by ``function_call_output`` with the same ``call_id``, and the UI
copy of each output in an ``event_msg`` (``item_completed`` with a ``CommandExecution``, or the
older ``exec_command_end``).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from helpers import session_result

from compactor_core.agents.codex import Codex
from compactor_core.compaction.outcome import Outcome
from compactor_core.providers.base import Summarizer
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.session_files import compact
from compactor_core.session_files import index as session
from compactor_core.settings import RunSettings

SESSION_ID = "01a23819-475a-7650-98d2-6561a1ff0a95"
NOW = datetime(2026, 12, 2, 12, 0, 0, 123456, tzinfo=UTC)


@dataclass
class Rollout:
    ordinals: bool = True
    records: list[dict[str, Any]] = field(default_factory=list)
    _calls: int = 0

    def __post_init__(self) -> None:
        meta = {
            "id": SESSION_ID,
            "cwd": "/work/project",
            "cli_version": "0.169.0",
            "base_instructions": {"text": "You are a coding agent running in the Codex CLI."},
        }
        self.add("session_meta", meta)

    def add(self, kind: str, payload: Any) -> dict[str, Any]:
        record: dict[str, Any] = {"timestamp": "2026-12-02T10:00:00.000Z"}
        if self.ordinals:
            record["ordinal"] = len(self.records)
        record.update(type=kind, payload=payload)
        self.records.append(record)
        return record

    def item(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self.add("response_item", payload)

    def message(self, role: str, text: str) -> None:
        kind = "output_text" if role == "assistant" else "input_text"
        self.item({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    def user(self, text: str) -> None:
        self.add("turn_context", {"cwd": "/work/project", "model": "gpt-test"})
        self.message("user", text)

    def reasoning(self, summary: str) -> None:
        self.item(
            {
                "type": "reasoning",
                "id": f"rs_{len(self.records)}",
                "summary": [{"type": "summary_text", "text": summary}],
                "content": None,
                "encrypted_content": "gAAAAB" + "x" * 40,
            }
        )

    def tools(
        self, outputs: list[str], ui: str = "item_completed", commands: list[str] | None = None
    ) -> list[str]:
        """Parallel exec_command calls (of ``commands``; by default ``seq N``, N the call's
        number in the rollout: none repeats another, none goes stale), then their outputs, each
        with its UI copy."""
        ids = []
        for _ in outputs:
            self._calls += 1
            ids.append(f"call_{self._calls}")
        for number, call_id in enumerate(ids):
            command = commands[number] if commands else f"seq {call_id.removeprefix('call_')}"
            arguments = json.dumps({"cmd": command})
            self.item(
                {"type": "function_call", "id": f"fc_{call_id}", "name": "exec_command",
                 "arguments": arguments, "call_id": call_id}
            )  # fmt: skip
        for call_id, output in zip(ids, outputs, strict=True):
            self.ui_copy(call_id, output, ui)
            self.item({"type": "function_call_output", "call_id": call_id, "output": output})
        return ids

    def ui_copy(self, call_id: str, output: str, ui: str) -> None:
        if ui == "item_completed":
            item = {"type": "CommandExecution", "id": call_id, "command": ["bash", "-lc", "seq"],
                    "status": "completed", "aggregated_output": output, "exit_code": 0}  # fmt: skip
            self.add("event_msg", {"type": "item_completed", "turn_id": "t1", "item": item})
        elif ui == "exec_command_end":
            payload = {"type": "exec_command_end", "call_id": call_id, "stdout": output,
                       "stderr": "", "aggregated_output": output, "formatted_output": output,
                       "exit_code": 0}  # fmt: skip
            self.add("event_msg", payload)

    def compacted(self, history: list[dict[str, Any]] | None, message: str = "summary") -> None:
        payload: dict[str, Any] = {"message": message}
        if history is not None:
            payload["replacement_history"] = history
        self.add("compacted", payload)
        self.add("event_msg", {"type": "context_compacted"})

    def data(self) -> bytes:
        return b"".join(
            json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            for record in self.records
        )


def user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


@dataclass
class Result:
    before: session.SessionIndex
    outcome: Outcome
    data: bytes  # the file after the command

    @property
    def after(self) -> session.SessionIndex:
        return index(self.data)


def index(data: bytes) -> session.SessionIndex:
    return session.index_session(io.BytesIO(data), Codex(), "<rollout>")


def run(data: bytes, job: RunSettings, provider: Summarizer | None = None) -> Result:
    """``job`` on a rollout given as bytes; the summary by the offline extractive summarizer."""
    around = compact.Surroundings(now=NOW)
    summarizer = provider or ExtractiveSummarizer()
    after, outcome, indexed = session_result(data, Codex(), job, summarizer, around)
    return Result(indexed, outcome, after)


def view_messages(data: bytes) -> list[dict[str, Any]]:
    handle = io.BytesIO(data)
    return session.load_view(handle, session.index_session(handle, Codex(), "<rollout>"))


def records(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines()]
