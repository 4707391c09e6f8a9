"""Test providers and fixed conversations for the full and auto compaction tests."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compactor_core.errors import ProviderError, RetryableProviderError
from compactor_core.providers.base import SummaryRequest

Message = dict[str, Any]

# The reference's wording, typed here from SPEC §3.5 and §3.7, not imported from the code.
SEED_SYSTEM = (
    "你是 BareAgent 的上下文压缩助手。请用中文总结对话中的目标、已完成工作、关键约束、"
    "重要文件路径、工具执行结果要点，以及接下来继续工作所需的上下文。输出简洁但不能遗漏事实。"
)
SEED_USER_INTRO = "请简洁总结以下对话的关键信息和已完成的工作，供后续继续工作使用："
SEED_ACK = "收到，我已理解之前的上下文，继续工作。"
PREFIX = "[Context Compressed]\n"
SUMMARY = "ok"  # what the fixed-text provider says: 1 token, so smaller than any real history
SUMMARY_ZH = "目标：修复登录。已完成：src/auth.py。"


@dataclass
class RecordingProvider:
    """Records every request and answers with fixed text (or whatever ``reply`` returns)."""

    reply: Any = SUMMARY
    name: str = "recording"
    requests: list[SummaryRequest] = field(default_factory=list)
    copies: list[list[Message]] = field(default_factory=list)  # the messages as they were sent

    def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        self.copies.append(copy.deepcopy(request.messages))
        return self.reply(request) if callable(self.reply) else self.reply

    @property
    def request(self) -> SummaryRequest:
        assert len(self.requests) == 1, f"{len(self.requests)} requests"
        return self.requests[0]


@dataclass
class RaisingProvider:
    """Fails with the exception ``make()`` builds; counts its calls."""

    make: Callable[[], BaseException]
    name: str = "raising"
    calls: int = 0

    def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        raise self.make()


FAILING_PROVIDERS: dict[str, Any] = {
    "provider error": lambda: RaisingProvider(lambda: ProviderError("bad reply: HTTP 400")),
    "retryable": lambda: RaisingProvider(lambda: RetryableProviderError("HTTP 503")),
    "arbitrary exception": lambda: RaisingProvider(lambda: KeyError("choices")),
    "runtime error": lambda: RaisingProvider(lambda: RuntimeError("boom")),
    "non-str reply": lambda: RecordingProvider(reply={"summary": "x"}),
    "None reply": lambda: RecordingProvider(reply=None),
    "bytes reply": lambda: RecordingProvider(reply=b"summary"),
    "empty reply": lambda: RecordingProvider(reply=""),
    "blank reply": lambda: RecordingProvider(reply=" \n\t "),
    "not smaller": lambda: RecordingProvider(reply=lambda request: request.user * 2),
}


# --- fixed conversations -------------------------------------------------------------------------


def anthropic_call(call_id: str, name: str, tool_input: Any, text: str | None = None) -> Message:
    content: list[Any] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
    return {"role": "assistant", "content": content}


def anthropic_result(call_id: str, content: Any, **extra: Any) -> Message:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}
    return {"role": "user", "content": [block]}


def openai_call(calls: list[tuple[str, str, str]], content: str | None = None) -> Message:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in calls
        ],
    }


def openai_result(call_id: str, content: Any) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def session_zh() -> list[Message]:
    """A small Anthropic-style session in Chinese and English, with a pending request."""
    return [
        {"role": "system", "content": "你是一个编程助手，工作目录 /srv/app。"},
        {"role": "user", "content": "登录测试失败了，请修复 src/auth.py，但不要修改数据库结构。"},
        anthropic_call("t1", "bash", {"command": "pytest -x tests/test_login.py"}, "先运行测试。"),
        anthropic_result("t1", "FAILED tests/test_login.py::test_expired - expected 401, got 200"),
        anthropic_call("t2", "read_file", {"file_path": "src/auth.py"}),
        anthropic_result("t2", [{"type": "text", "text": "def login(token):\n    return 200"}]),
        {"role": "system", "content": "提醒：保持公开 API 不变。"},
        anthropic_call(
            "t3",
            "edit_file",
            {"file_path": "src/auth.py", "old": "return 200", "new": "return check(token)"},
        ),
        anthropic_result("t3", "ok", is_error=False),
        {"role": "assistant", "content": "已修复：过期令牌现在返回 401。"},
        {"role": "user", "content": "很好，现在请更新 CHANGELOG.md。"},
    ]


def session_openai() -> list[Message]:
    """A small OpenAI-style session with parallel calls and a pending request."""
    return [
        {"role": "system", "content": "You are a helpful airline agent."},
        {"role": "user", "content": "Change reservation ABC123 to the 3 pm flight."},
        openai_call(
            [
                ("c1", "get_reservation", '{"reservation_id": "ABC123"}'),
                ("c2", "search_flights", '{"origin": "SFO", "destination": "JFK"}'),
            ],
            "Looking it up.",
        ),
        openai_result("c1", '{"id": "ABC123", "flight": "UA100"}'),
        openai_result("c2", [{"type": "text", "text": "UA200 15:00"}]),
        {"role": "assistant", "content": "UA200 leaves at 3 pm. Shall I switch?"},
        {"role": "user", "content": "Yes please."},
    ]


def user_turn(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant_turn(text: str) -> Message:
    return {"role": "assistant", "content": text}


def extractive_summary(messages: list[Message], lang: str = "en", max_tokens: int = 2000) -> str:
    """The built-in summarizer's summary of ``messages`` (also the conversation as it came)."""
    from compactor_core.providers.extractive import ExtractiveSummarizer

    request = SummaryRequest("system", "user", max_tokens, messages, lang, messages)
    return ExtractiveSummarizer().summarize(request)


def summary_part(summary: str, heading: str) -> list[str]:
    """The lines of one part of a summary: its ``- `` items under ``## heading``."""
    lines, inside = [], False
    for line in summary.splitlines():
        if line.startswith("## "):
            inside = line[3:] == heading
        elif inside and line.startswith("- "):
            lines.append(line[2:])
    return lines
