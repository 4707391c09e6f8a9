"""Claude Code session files made up for property tests: the shapes the real agent writes.

Each conversation turn is a user prompt, then replies of one or more assistant records sharing a
``message.id`` (thinking with a signature, text, parallel ``tool_use``) each followed by one user
record per result (child of the record that made the call, with a ``toolUseResult`` UI copy),
and records that are not conversation (progress, file-history-snapshot, an unknown type) between.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import strategies as st

SESSION = "11111111-2222-3333-4444-555555555555"
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
OUTPUT = st.one_of(TEXT, st.integers(0, 3000).map(lambda n: "out\n" * n))


class Builder:
    def __init__(self, draw: Any, calls: Any = None) -> None:
        self.draw = draw
        self.calls = calls  # a strategy of (tool name, input) for the calls; None: made up
        self.records: list[dict[str, Any]] = []
        self.last: str | None = None
        self.counter = 0

    def new_id(self) -> str:
        self.counter += 1
        return str(uuid.UUID(int=self.counter))

    def add(self, record: dict[str, Any], chained: bool = True) -> dict[str, Any]:
        base = {"type": record.pop("type"), "sessionId": SESSION, "cwd": "/p", "version": "2.1.0"}
        if chained:
            base.update({"parentUuid": self.last, "isSidechain": False, "uuid": self.new_id()})
            self.last = base["uuid"]
        full = {**base, **record}
        self.records.append(full)
        return full

    def noise(self) -> None:
        kind = self.draw(st.sampled_from(["none", "progress", "snapshot", "unknown"]))
        if kind == "progress":
            self.add({"type": "progress", "data": {"type": "hook_progress"}})
        elif kind == "snapshot":
            self.add({"type": "file-history-snapshot", "snapshot": {}}, chained=False)
        elif kind == "unknown":
            self.add({"type": "brand-new-type", "value": self.draw(TEXT)}, chained=False)

    def turn(self) -> None:
        self.add({"type": "user", "message": {"role": "user", "content": self.draw(TEXT)}})
        for _ in range(self.draw(st.integers(0, 3))):
            self.reply()
        self.add(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_{self.new_id()}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": self.draw(TEXT)}],
                },
            }
        )
        self.noise()

    def reply(self) -> None:
        message_id = f"msg_{self.new_id()}"
        thinking = {"type": "thinking", "thinking": self.draw(TEXT), "signature": "c2lnbmF0dXJl"}
        self.add(
            {
                "type": "assistant",
                "message": {"id": message_id, "role": "assistant", "content": [thinking]},
            }
        )
        makers = []
        for number in range(self.draw(st.integers(1, 3))):
            call_id = f"toolu_{self.new_id()}"
            name, arguments = (
                self.draw(self.calls)
                if self.calls is not None
                else (f"Tool{number}", {"command": self.draw(TEXT)})
            )
            call = {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
            maker = self.add(
                {
                    "type": "assistant",
                    "message": {"id": message_id, "role": "assistant", "content": [call]},
                }
            )
            makers.append((maker["uuid"], call_id))
        self.noise()
        for maker, call_id in makers:
            output = self.draw(OUTPUT)
            content: Any = output
            if self.draw(st.booleans()):
                content = [{"type": "text", "text": output}]
            self.last = maker  # each result is the child of the record that made its call
            self.add(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": call_id, "content": content}
                        ],
                    },
                    "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
                }
            )


@st.composite
def claude_code_sessions(draw: Any, calls: Any = None) -> bytes:
    """Sessions; ``calls``: a strategy of the calls' (tool name, input), for stale results."""
    builder = Builder(draw, calls)
    for _ in range(draw(st.integers(1, 6))):
        builder.turn()
    lines = [json.dumps(record, ensure_ascii=draw(st.booleans())) for record in builder.records]
    data = "\n".join(lines).encode()
    return data + b"\n" if draw(st.booleans()) else data
