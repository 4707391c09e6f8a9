"""SPEC §3 and §4: full and automatic compaction, with test providers (no model, no network)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from checks_full import pair_violations
from helpers import micro_in_place
from support_full import (
    FAILING_PROVIDERS,
    PREFIX,
    SEED_ACK,
    SEED_SYSTEM,
    SEED_USER_INTRO,
    SUMMARY,
    SUMMARY_ZH,
    RecordingProvider,
    anthropic_call,
    anthropic_result,
    openai_call,
    openai_result,
    session_openai,
    session_zh,
)

from compactor_core.compaction.estimate import estimate, quarters_to_tokens, text_quarters
from compactor_core.compaction.full import full_compact
from compactor_core.compaction.pipeline import run
from compactor_core.compaction.serialize import serialize
from compactor_core.conversation.formats import Conversation
from compactor_core.errors import ProviderError, RetryableProviderError
from compactor_core.settings import RunSettings, Settings

Message = dict[str, Any]
BAREAGENT = Settings(compat=True)

# session_zh() without its system messages and its pending request, serialized by hand (SPEC §3.6).
SESSION_ZH_SERIALIZED = """[user]
登录测试失败了，请修复 src/auth.py，但不要修改数据库结构。

[assistant]
先运行测试。
[tool_use:bash] {"command": "pytest -x tests/test_login.py"}

[user]
[tool_result:bash] FAILED tests/test_login.py::test_expired - expected 401, got 200

[assistant]
[tool_use:read_file] {"file_path": "src/auth.py"}

[user]
[tool_result:read_file] [{"type": "text", "text": "def login(token):\\n    return 200"}]

[assistant]
[tool_use:edit_file] {"file_path": "src/auth.py", "old": "return 200", "new": "return check(token)"}

[user]
[tool_result:edit_file] ok

[assistant]
已修复：过期令牌现在返回 401。"""


# --- the request (SPEC §3.5) ---------------------------------------------------------------------


def test_request_pins_the_seed_prompts_and_the_budget() -> None:
    messages = session_zh()
    provider = RecordingProvider()
    result = full_compact(messages, provider)
    request = provider.request
    assert request.system == SEED_SYSTEM
    assert request.user == SEED_USER_INTRO + "\n\n" + SESSION_ZH_SERIALIZED
    assert request.max_tokens == 2000
    assert request.lang == "zh"
    source = [m for i, m in enumerate(messages) if i not in (0, 6, 10)]
    assert request.messages == source
    assert result.status == "compacted"


def test_request_in_english() -> None:
    provider = RecordingProvider()
    result = full_compact(session_zh(), provider, Settings(lang="en"))
    request = provider.request
    assert request.system.startswith("You are BareAgent's context compaction assistant.")
    for part in ("goals", "work completed", "constraints", "file paths", "tool results"):
        assert part in request.system
    assert request.user.endswith("\n\n" + SESSION_ZH_SERIALIZED)
    assert request.user.startswith("Concisely summarize")
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in request.system)
    assert request.lang == "en"
    assert result.messages[3] == {
        "role": "assistant",
        "content": "Got it. I understand the previous context and will continue working.",
    }


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_instructions_are_appended_to_the_system_prompt(lang: str) -> None:
    plain, focused = RecordingProvider(), RecordingProvider()
    full_compact(session_zh(), plain, Settings(lang=lang))
    full_compact(session_zh(), focused, Settings(lang=lang, instructions="关注 auth 的 bug"))
    assert focused.request.system.startswith(plain.request.system + "\n\n")
    assert focused.request.system.endswith("关注 auth 的 bug")
    assert focused.request.user == plain.request.user


def test_max_tokens_is_passed_on() -> None:
    provider = RecordingProvider()
    full_compact(session_zh(), provider, Settings(max_tokens=123))
    assert provider.request.max_tokens == 123


def test_prompts_golden(golden) -> None:
    parts = []
    for lang in ("zh", "en"):
        for instructions in (None, "Focus on the auth bug / 关注登录"):
            provider = RecordingProvider(SUMMARY_ZH)
            result = full_compact(
                session_zh(), provider, Settings(lang=lang, instructions=instructions)
            )
            label = f"{lang}, instructions={instructions!r}"
            parts += [f"=== {label}: system", provider.request.system]
            parts += [f"=== {label}: user", provider.request.user]
            parts += [f"=== {label}: acknowledgement", result.messages[3]["content"]]
    golden("full_prompts.txt", "\n".join(parts) + "\n")


# --- serialization (SPEC §3.6) -------------------------------------------------------------------

ANTHROPIC_ALL_RULES: list[Message] = [
    {"role": "user", "content": "读取配置"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "好的"},
            {"type": "text", "text": ""},
            {"type": "tool_use", "id": "a", "name": "read_file", "input": {"file_path": "c.toml"}},
            {"type": "tool_use", "id": "b", "name": "bash", "input": "ls -la"},
            {"type": "tool_use", "id": "c", "name": "calc", "input": {"行": [1, 2.5, None, True]}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "1: [provider]\n2: ..."},
            {"type": "tool_result", "tool_use_id": "b", "content": None, "is_error": True},
            {
                "type": "tool_result",
                "tool_use_id": "c",
                "content": [{"type": "text", "text": "中"}],
            },
            {"type": "tool_result", "tool_use_id": "zz", "content": ""},
            {"type": "text", "text": "看看这个"},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "QQ"},
            },
            {"type": "thinking", "thinking": "嗯", "signature": "s"},
            {"type": "custom", "content": "内容", "text": "not this"},
            {"type": "custom", "text": "文本"},
            {"type": "custom", "content": [{"type": "text", "text": "x"}]},
            "a plain string",
            42,
        ],
    },
    {"role": "assistant", "content": None},
    {"role": "assistant", "content": []},
    {"role": "user", "content": ""},
    {"role": "ghost", "content": "unknown roles pass through"},
]

ANTHROPIC_ALL_RULES_SERIALIZED = """[user]
读取配置

[assistant]
好的
[tool_use:read_file] {"file_path": "c.toml"}
[tool_use:bash] "ls -la"
[tool_use:calc] {"行": [1, 2.5, null, true]}

[user]
[tool_result:read_file] 1: [provider]
2: ...
[tool_result:bash] null
[tool_result:calc] [{"type": "text", "text": "中"}]
[tool_result:unknown] {SPACE}
看看这个

[user]
{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QQ"}}
{"type": "thinking", "thinking": "嗯", "signature": "s"}
内容
文本
[{"type": "text", "text": "x"}]
a plain string
42

[assistant]


[assistant]


[user]


[ghost]
unknown roles pass through""".replace(" {SPACE}", " ")

OPENAI_ALL_RULES: list[Message] = [
    {"role": "user", "content": "Find flights 查询航班"},
    openai_call(
        [("c1", "search", '{"from":"SFO"}'), ("c2", "lookup", "{}")], "Let me check. 我查一下。"
    ),
    openai_result("c1", "UA200 15:00"),
    openai_result("c2", [{"type": "text", "text": "结果"}]),
    openai_result("nope", None),
    openai_call([("c3", "finish", '{"ok": true}')]),
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "block text"}],
        "tool_calls": [
            {"id": "c4", "type": "function", "function": {"name": "f", "arguments": ""}}
        ],
    },
    openai_result("c3", "done"),
]

OPENAI_ALL_RULES_SERIALIZED = """[user]
Find flights 查询航班

[assistant]
Let me check. 我查一下。
[tool_use:search] {"from":"SFO"}
[tool_use:lookup] {}

[tool]
[tool_result:search] UA200 15:00

[tool]
[tool_result:lookup] [{"type": "text", "text": "结果"}]

[tool]
[tool_result:unknown] null

[assistant]
[tool_use:finish] {"ok": true}

[assistant]
block text
[tool_use:f] {SPACE}

[tool]
[tool_result:finish] done""".replace(" {SPACE}", " ")


def test_serialization_anthropic_byte_for_byte(golden) -> None:
    text = serialize(ANTHROPIC_ALL_RULES)
    assert text == ANTHROPIC_ALL_RULES_SERIALIZED
    golden("full_serialize_anthropic.txt", text + "\n")


def test_serialization_openai_byte_for_byte(golden) -> None:
    text = serialize(OPENAI_ALL_RULES)
    assert text == OPENAI_ALL_RULES_SERIALIZED
    golden("full_serialize_openai.txt", text + "\n")


def test_serialization_is_what_the_provider_reads() -> None:
    messages = [*OPENAI_ALL_RULES, {"role": "user", "content": "next"}]
    provider = RecordingProvider()
    full_compact(messages, provider)
    assert provider.request.user == SEED_USER_INTRO + "\n\n" + OPENAI_ALL_RULES_SERIALIZED


def test_serialization_strips_both_ends() -> None:
    assert serialize([{"role": "user", "content": "\n\n  hi  \n\n"}]) == "[user]\n\n\n  hi"
    assert serialize([]) == ""


def test_tool_names_come_from_the_whole_conversation() -> None:
    """A result in the source whose call is in the pending turn still gets its tool's name."""
    messages = [
        {"role": "user", "content": "go"},
        anthropic_call("t1", "bash", {"command": "ls"}),
        anthropic_result("t1", "a.txt"),
        {"role": "user", "content": "next"},
    ]
    provider = RecordingProvider()
    full_compact(messages, provider)
    assert "[tool_result:bash] a.txt" in provider.request.user


# --- the rebuild (SPEC §3.7) ---------------------------------------------------------------------


def test_rebuild_layout() -> None:
    messages = session_zh()
    result = full_compact(messages, RecordingProvider()).messages
    assert result == [
        {"role": "system", "content": "你是一个编程助手，工作目录 /srv/app。"},
        {"role": "system", "content": "提醒：保持公开 API 不变。"},
        {"role": "user", "content": PREFIX + SUMMARY},
        {"role": "assistant", "content": SEED_ACK},
        {"role": "user", "content": "很好，现在请更新 CHANGELOG.md。"},
    ]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_rebuild_golden(golden, lang: str) -> None:
    provider = RecordingProvider(SUMMARY_ZH)
    result = full_compact(session_zh(), provider, Settings(lang=lang)).messages
    golden(f"full_rebuild_{lang}.json", json.dumps(result, ensure_ascii=False, indent=1) + "\n")


def test_rebuild_golden_openai_pending_tool_run(golden) -> None:
    messages = session_openai()[:5]  # ends with the parallel calls' results: a pending turn
    result = full_compact(messages, RecordingProvider("Summary.")).messages
    golden("full_rebuild_openai.json", json.dumps(result, ensure_ascii=False, indent=1) + "\n")


def test_systems_are_deep_copies_in_their_order() -> None:
    messages = session_zh()
    messages[0]["content"] = [{"type": "text", "text": "系统", "cache_control": {"x": 1}}]
    messages[6]["extra"] = {"keep": ["me"]}
    result = full_compact(messages, RecordingProvider()).messages
    assert result[:2] == [messages[0], messages[6]]
    assert result[0] is not messages[0] and result[1] is not messages[6]
    result[0]["content"][0]["cache_control"]["x"] = 2
    result[1]["extra"]["keep"].append("changed")
    assert messages[0]["content"][0]["cache_control"] == {"x": 1}
    assert messages[6]["extra"] == {"keep": ["me"]}


def test_no_system_messages() -> None:
    messages = [*session_zh()[1:6], {"role": "user", "content": "继续"}]
    result = full_compact(messages, RecordingProvider()).messages
    assert result == [
        {"role": "user", "content": PREFIX + SUMMARY},
        {"role": "assistant", "content": SEED_ACK},
        {"role": "user", "content": "继续"},
    ]


def test_no_pending_turn_when_the_assistant_spoke_last() -> None:
    messages = session_zh()[:10]
    provider = RecordingProvider()
    result = full_compact(messages, provider).messages
    assert result[-2:] == [
        {"role": "user", "content": PREFIX + SUMMARY},
        {"role": "assistant", "content": SEED_ACK},
    ]
    assert provider.request.user.endswith("已修复：过期令牌现在返回 401。")


def test_the_pending_turn_comes_back_unchanged_even_when_micro_would_truncate_it() -> None:
    """Micro runs over the pending turn too (it counts as a kept turn), but what comes back is
    the turn as it came in."""
    messages = [
        {"role": "user", "content": "go"},
        anthropic_call("t1", "bash", {"command": "ls"}),
        anthropic_result("t1", "x" * 500),
    ]
    provider = RecordingProvider()
    settings = Settings(keep_recent=0)
    result = full_compact(messages, provider, settings).messages
    assert result[-2:] == messages[1:]
    assert result[-1]["content"][0]["content"] == "x" * 500


def test_pending_turn_counts_among_the_kept_tool_result_turns() -> None:
    turns = []
    for n in range(1, 5):
        output = f"out{n} " + "." * 40
        turns += [anthropic_call(f"t{n}", "bash", {"n": n}), anthropic_result(f"t{n}", output)]
    messages = [{"role": "user", "content": "go"}, *turns]
    provider = RecordingProvider()
    full_compact(messages, provider)
    sent = provider.request.user
    # the pending turn is t4; kept with it are t3 and t2; t1 is a marker
    assert "[tool_result:bash] [truncated: bash result, 45 chars]" in sent
    assert "[tool_result:bash] out2" in sent and "[tool_result:bash] out3" in sent
    assert "out4" not in sent


# --- the pending turn and pair safety (SPEC §3.1) -----------------------------------------------


def test_pending_tool_result_takes_its_call_along_anthropic() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "list files"},
        anthropic_call("t1", "bash", {"command": "ls"}, "Listing."),
        anthropic_result("t1", "a.txt"),
    ]
    provider = RecordingProvider()
    result = full_compact(messages, provider).messages
    assert result == [messages[0], {"role": "user", "content": PREFIX + SUMMARY}, *messages[2:]]
    assert "[tool_use:bash]" not in provider.request.user
    assert pair_violations(result) == []


def test_pending_parallel_results_anthropic() -> None:
    call = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "p1", "name": "read", "input": {"path": "a"}},
            {"type": "tool_use", "id": "p2", "name": "read", "input": {"path": "b"}},
        ],
    }
    answer = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "p1", "content": "A"},
            {"type": "tool_result", "tool_use_id": "p2", "content": "B"},
            {"type": "text", "text": "and hurry"},
        ],
    }
    messages = [{"role": "user", "content": "read both"}, call, answer]
    result = full_compact(messages, RecordingProvider()).messages
    assert result == [{"role": "user", "content": PREFIX + SUMMARY}, call, answer]


def test_pending_parallel_results_openai() -> None:
    messages = session_openai()[:5]
    result = full_compact(messages, RecordingProvider()).messages
    assert result == [messages[0], {"role": "user", "content": PREFIX + SUMMARY}, *messages[2:]]
    assert pair_violations(result) == []


def test_trailing_tool_run_openai_is_pending_even_without_a_user_message() -> None:
    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "checking"},
        openai_call([("w1", "weather", '{"city": "北京"}')]),
        openai_result("w1", "晴"),
    ]
    provider = RecordingProvider()
    result = full_compact(messages, provider).messages
    assert result == [{"role": "user", "content": PREFIX + SUMMARY}, *messages[2:]]
    assert "[tool_use:weather]" not in provider.request.user


def test_results_answering_calls_of_two_messages_are_summarized() -> None:
    """No single message made every call the pending results answer: keeping them would orphan
    one, so they go into the summary and there is no pending turn."""
    messages = [
        {"role": "user", "content": "go"},
        anthropic_call("a1", "bash", {"command": "one"}),
        anthropic_call("a2", "bash", {"command": "two"}),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a1", "content": "1"},
                {"type": "tool_result", "tool_use_id": "a2", "content": "2"},
            ],
        },
    ]
    provider = RecordingProvider()
    result = full_compact(messages, provider, Settings(lang="zh")).messages
    assert result == [
        {"role": "user", "content": PREFIX + SUMMARY},
        {"role": "assistant", "content": SEED_ACK},
    ]
    assert "[tool_result:bash] 2" in provider.request.user


def test_pending_result_without_any_call_is_summarized() -> None:
    messages = [{"role": "user", "content": "开始"}, anthropic_result("ghost", "boo")]
    result = full_compact(messages, RecordingProvider()).messages
    assert pair_violations(result) == []
    assert result[-1] == {"role": "assistant", "content": SEED_ACK}


def test_trailing_system_messages_are_skipped_when_finding_the_pending_turn() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "the real request 真正的请求"},
        {"role": "system", "content": "reminder 1"},
        {"role": "system", "content": "reminder 2"},
    ]
    provider = RecordingProvider()
    result = full_compact(messages, provider).messages
    assert result == [
        messages[0],
        messages[4],
        messages[5],
        {"role": "user", "content": PREFIX + SUMMARY},
        {"role": "assistant", "content": SEED_ACK},
        messages[3],
    ]
    assert "真正的请求" not in provider.request.user


def test_trailing_system_after_a_pending_tool_turn() -> None:
    messages = [
        {"role": "user", "content": "list the files and print the directory"},
        openai_call([("c1", "ls", "{}"), ("c2", "pwd", "{}")]),
        openai_result("c1", "a"),
        openai_result("c2", "/"),
        {"role": "system", "content": "note"},
    ]
    result = full_compact(messages, RecordingProvider()).messages
    assert result == [messages[4], {"role": "user", "content": PREFIX + SUMMARY}, *messages[1:4]]
    assert pair_violations(result) == []


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "system", "content": "only a system prompt"}],
        [{"role": "user", "content": "just one request"}],
        [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
        [{"role": "user", "content": "hi"}, {"role": "system", "content": "trailing"}],
        [openai_call([("c1", "ls", "{}")]), openai_result("c1", "a")],
        [anthropic_call("t1", "ls", {}), anthropic_result("t1", "a")],
    ],
    ids=["empty", "system only", "pending only", "system+pending", "pending+system", "oai", "ant"],
)
def test_nothing_to_summarize_changes_nothing(messages: list[Message]) -> None:
    before = copy.deepcopy(messages)
    provider = RecordingProvider()
    result = full_compact(messages, provider)
    assert result.status == "nothing"
    assert result.messages is messages and messages == before
    assert provider.requests == []


# --- the BareAgent reference (--compat bareagent) ------------------------------------------------


def test_bareagent_orphans_a_pending_tool_result_after_the_acknowledgement() -> None:
    messages = [
        {"role": "user", "content": "list files"},
        anthropic_call("t1", "bash", {"command": "ls"}),
        anthropic_result("t1", "a.txt"),
    ]
    provider = RecordingProvider()
    result = full_compact(messages, provider, BAREAGENT).messages
    assert result == [
        {"role": "user", "content": PREFIX + SUMMARY},
        {"role": "assistant", "content": SEED_ACK},
        messages[2],
    ]
    assert pair_violations(result) == ["messages[2]: 't1'"]
    assert "[tool_use:bash]" in provider.request.user


def test_bareagent_summarizes_the_request_before_a_trailing_system_message() -> None:
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "the real request"},
        {"role": "system", "content": "reminder"},
    ]
    provider = RecordingProvider()
    result = full_compact(messages, provider, BAREAGENT).messages
    assert result == [
        messages[3],
        {"role": "user", "content": PREFIX + SUMMARY},
        {"role": "assistant", "content": SEED_ACK},
    ]
    assert provider.request.user.endswith("[user]\nthe real request")


def test_bareagent_summarizes_a_trailing_openai_tool_run() -> None:
    messages = [
        {"role": "user", "content": "go"},
        openai_call([("c1", "ls", "{}")]),
        openai_result("c1", "a"),
    ]
    provider = RecordingProvider()
    result = full_compact(messages, provider, BAREAGENT).messages
    assert result == [
        {"role": "user", "content": PREFIX + SUMMARY},
        {"role": "assistant", "content": SEED_ACK},
    ]
    # the reference shows neither the call nor the result's tool (issue 11.2)
    assert provider.request.user.endswith("[assistant]\n\n\n[tool]\na")


@pytest.mark.parametrize("reply", ["", "   ", "x" * 10_000])
def test_bareagent_has_no_guards(reply: str) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    result = full_compact(messages, RecordingProvider(reply), BAREAGENT)
    assert result.status == "compacted"
    assert result.messages == [
        {"role": "user", "content": PREFIX + reply},
        {"role": "assistant", "content": SEED_ACK},
    ]


def test_bareagent_does_not_shrink_the_prompt() -> None:
    messages = long_session(40)
    provider = RecordingProvider()
    settings = Settings(compat=True, max_prompt_tokens=100)
    full_compact(messages, provider, settings)
    source = copy.deepcopy(messages[:-1])
    micro_in_place(source, 3)
    assert provider.request.user == SEED_USER_INTRO + "\n\n" + serialize(source)
    assert provider.request.messages == source


def test_bareagent_still_rejects_a_non_text_reply() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    result = full_compact(messages, RecordingProvider(None), BAREAGENT)
    assert result.status == "failed" and result.messages is messages


# --- failure (SPEC §3.8, §3.10) ------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(FAILING_PROVIDERS))
@pytest.mark.parametrize("session", [session_zh, session_openai])
def test_failure_gives_the_input_back(kind: str, session: Any) -> None:
    messages = session()
    messages += long_session(6)[1:]  # enough tool turns for micro to truncate some
    before = copy.deepcopy(messages)
    provider = FAILING_PROVIDERS[kind]()
    result = full_compact(messages, provider)
    assert result.status == "failed"
    assert result.messages is messages
    assert messages == before  # not even micro compaction touched it
    assert isinstance(result.error, ProviderError)
    assert result.error.args[0]  # a cause to name in the warning
    assert "\n" not in str(result.error)
    assert result.summary is None


def test_failure_keeps_the_retryable_kind() -> None:
    result = full_compact(session_zh(), FAILING_PROVIDERS["retryable"]())
    assert type(result.error) is RetryableProviderError
    result = full_compact(session_zh(), FAILING_PROVIDERS["provider error"]())
    assert type(result.error) is ProviderError


def test_failure_names_the_cause() -> None:
    causes = {
        "arbitrary exception": "KeyError",
        "non-str reply": "not text",
        "empty reply": "empty",
        "not smaller": "not smaller",
        "provider error": "HTTP 400",
    }
    for kind, cause in causes.items():
        error = full_compact(session_zh(), FAILING_PROVIDERS[kind]()).error
        assert error is not None and cause in str(error), (kind, str(error))


def test_a_summary_just_smaller_than_the_source_is_accepted() -> None:
    messages = [{"role": "user", "content": "aaaa bbbb"}, {"role": "assistant", "content": "c"}]
    source_tokens = estimate(messages)  # 9 letters, 1 space, 1 letter: 11 quarters -> 3
    assert source_tokens == 3
    assert full_compact(messages, RecordingProvider("abcdefgh")).status == "compacted"  # 2
    assert full_compact(messages, RecordingProvider("abcdefghi")).status == "failed"  # 3


def test_success_does_not_modify_the_input() -> None:
    messages = session_zh() + long_session(8)[1:]
    before = copy.deepcopy(messages)
    result = full_compact(messages, RecordingProvider())
    assert result.status == "compacted"
    assert messages == before


# --- shrinking what is sent (SPEC §3.10) ---------------------------------------------------------


def long_session(turns: int, size: int = 3000, first: str = "请重构整个项目 refactor") -> list:
    messages: list[Message] = [{"role": "user", "content": first}]
    for n in range(turns):
        messages += [
            {"role": "assistant", "content": f"step {n}: " + "计划 plan " * (size // 8)},
            anthropic_call(f"L{n}", "read_file", {"file_path": f"src/m{n}.py"}),
            anthropic_result(f"L{n}", f"line {n}\n" * (size // 7)),
            {"role": "user", "content": f"request {n} " + "x" * size},
        ]
    return messages


def prompt_tokens(provider: RecordingProvider) -> int:
    request = provider.request
    return quarters_to_tokens(text_quarters([request.system, request.user]))


def test_a_conversation_far_bigger_than_the_budget_is_still_summarized() -> None:
    messages = long_session(60)
    assert estimate(messages) > 20 * 4000
    provider = RecordingProvider()
    result = full_compact(messages, provider, Settings(lang="zh", max_prompt_tokens=4000))
    assert result.status == "compacted"
    assert prompt_tokens(provider) <= 4000
    sent = provider.request.messages
    assert sent[0] == messages[0]  # the first request stays
    assert sent[-1]["content"][0]["tool_use_id"] == "L59"  # the newest stay ...
    assert len(sent) < len(messages) // 2  # ... and the oldest went
    assert provider.request.user == SEED_USER_INTRO + "\n\n" + serialize(sent, names_of(messages))


def names_of(messages: list[Message]) -> dict:
    from compactor_core.conversation.tools import tool_names

    return tool_names(messages)


def test_markers_first_when_they_are_enough() -> None:
    messages = long_session(6, size=3000)
    provider = RecordingProvider()
    unshrunk = RecordingProvider()
    full_compact(messages, unshrunk)
    budget = prompt_tokens(unshrunk) - 100
    full_compact(messages, provider, Settings(max_prompt_tokens=budget))
    sent = provider.request.messages
    assert len(sent) == len(messages) - 1
    results = [
        block["content"]
        for message in sent
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 6 and all(r.startswith("[truncated:") for r in results)
    assert prompt_tokens(provider) <= budget
    plans = [
        m["content"] for m in sent if m["role"] == "assistant" and isinstance(m["content"], str)
    ]
    assert len(plans) == 6 and all(len(plan) > 3000 for plan in plans)  # not cut


def test_long_texts_are_cut_in_the_middle_before_anything_is_dropped() -> None:
    messages = long_session(4, size=20_000)
    provider = RecordingProvider()
    full_compact(messages, provider, Settings(max_prompt_tokens=12_000))
    sent = provider.request.messages
    assert len(sent) == len(messages) - 1
    assert prompt_tokens(provider) <= 12_000
    texts = [m["content"] for m in sent if isinstance(m["content"], str)]
    assert sum("chars cut ...]" in text for text in texts) == 7  # 4 plans, 3 requests
    assert all(len(text) < 2100 for text in texts)


def test_long_tool_inputs_keep_their_keys_when_cut() -> None:
    messages = [{"role": "user", "content": "write it"}]
    for n in range(30):
        messages += [
            anthropic_call(f"w{n}", "Write", {"file_path": f"src/f{n}.py", "content": "y" * 9000}),
            anthropic_result(f"w{n}", "ok"),
            openai_call(
                [(f"o{n}", "edit", json.dumps({"path": f"lib/g{n}.c", "new": "z" * 9000}))]
            ),
            openai_result(f"o{n}", "ok"),
        ]
    messages.append({"role": "user", "content": "done?"})
    provider = RecordingProvider()
    full_compact(messages, provider, Settings(max_prompt_tokens=100_000))
    assert prompt_tokens(provider) <= 100_000
    sent = provider.request.messages
    inputs = [
        b["input"]
        for m in sent
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]
    assert [i["file_path"] for i in inputs] == [f"src/f{n}.py" for n in range(30)]
    assert all(len(i["content"]) < 2000 for i in inputs)
    arguments = [
        json.loads(c["function"]["arguments"]) for m in sent for c in m.get("tool_calls") or ()
    ]
    assert [a["path"] for a in arguments] == [f"lib/g{n}.c" for n in range(30)]


def test_thinking_signatures_are_cut() -> None:
    messages = [{"role": "user", "content": "think"}]
    for n in range(20):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hm", "signature": "S" * 20_000}],
            }
        )
        messages.append({"role": "user", "content": f"more {n}"})
    provider = RecordingProvider()
    full_compact(messages, provider, Settings(max_prompt_tokens=30_000))
    assert len(provider.request.messages) == len(messages) - 1
    assert prompt_tokens(provider) <= 30_000


def test_a_previous_summary_stays_first_when_the_oldest_are_dropped() -> None:
    previous = {"role": "user", "content": PREFIX + "## Goal\n- the earlier work"}
    messages = [previous, {"role": "assistant", "content": SEED_ACK}, *long_session(40)]
    provider = RecordingProvider()
    full_compact(messages, provider, Settings(max_prompt_tokens=5000))
    sent = provider.request.messages
    assert sent[0] == previous
    assert sent[1] == messages[2]  # then the first request
    assert len(sent) < len(messages) // 2
    assert prompt_tokens(provider) <= 5000


def test_the_budget_is_not_used_when_the_prompt_fits() -> None:
    messages = long_session(3)
    a, b = RecordingProvider(), RecordingProvider()
    full_compact(messages, a)
    full_compact(messages, b, Settings(max_prompt_tokens=prompt_tokens(a)))
    assert a.request == b.request


# --- rolling summaries (SPEC §3.11) --------------------------------------------------------------


def test_a_model_sees_the_previous_summary_first() -> None:
    first = full_compact(session_zh(), RecordingProvider("第一次摘要 src/auth.py"))
    messages = [
        *first.messages,
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "go on"},
    ]
    provider = RecordingProvider("第二次")
    full_compact(messages, provider)
    assert provider.request.user.startswith(
        SEED_USER_INTRO
        + "\n\n[user]\n[Context Compressed]\n第一次摘要 src/auth.py\n\n[assistant]\n"
    )


# --- auto (SPEC §4) ------------------------------------------------------------------------------


def auto(messages: list[Message], threshold: int, provider: Any, **job: Any) -> Any:
    """SPEC §4's auto: micro on every call (the cache-aware default: test_core_cache_policy)."""
    job = RunSettings("auto", Settings(threshold=threshold, policy="every-turn"), **job)
    return run(job, Conversation(messages), provider)


def micro_only(messages: list[Message]) -> list[Message]:
    copied = copy.deepcopy(messages)
    micro_in_place(copied, 3)
    return copied


def test_auto_micro_every_call_and_no_summary_at_or_below_the_threshold() -> None:
    messages = session_zh() + long_session(5)[1:]
    micro = micro_only(messages)
    assert micro != messages
    provider = RecordingProvider()
    outcome = auto(messages, estimate(micro), provider)
    assert provider.requests == []
    assert outcome.conversation.messages == micro
    assert outcome.full == "not run" and not outcome.over_threshold


def test_auto_summarizes_above_the_threshold_measured_after_micro() -> None:
    messages = session_zh() + long_session(5)[1:]
    micro = micro_only(messages)
    assert estimate(messages) > estimate(micro) + 1000
    provider = RecordingProvider()
    outcome = auto(messages, estimate(micro) - 1, provider)
    assert outcome.full == "compacted"
    assert outcome.conversation.messages == full_compact(messages, RecordingProvider()).messages
    assert outcome.truncated > 0


def test_auto_keeps_the_micro_result_when_the_summary_fails() -> None:
    messages = session_zh() + long_session(5)[1:]
    before = copy.deepcopy(messages)
    outcome = auto(messages, 100, FAILING_PROVIDERS["runtime error"]())
    assert outcome.full == "failed"
    assert isinstance(outcome.error, ProviderError)
    assert outcome.conversation.messages == micro_only(before)
    assert messages == before


def test_auto_says_when_the_result_is_still_over_the_threshold() -> None:
    messages = [
        {"role": "system", "content": "规则 " * 3000},
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": "done " * 500},
        {"role": "user", "content": "next"},
    ]
    outcome = auto(messages, 1000, RecordingProvider())
    assert outcome.full == "compacted" and outcome.over_threshold
    small = auto(messages[1:], 100, RecordingProvider())
    assert small.full == "compacted" and not small.over_threshold


def test_auto_with_nothing_to_summarize() -> None:
    messages = [{"role": "system", "content": "规则 " * 3000}, {"role": "user", "content": "hi"}]
    provider = RecordingProvider()
    outcome = auto(messages, 10, provider)
    assert outcome.full == "nothing" and outcome.over_threshold
    assert outcome.conversation.messages == messages and provider.requests == []


# --- a summary cut off at max_tokens (issue 11.4) ------------------------------------------------


class CutOffProvider:
    name = "cut"

    def summarize(self, request: Any) -> str:
        from compactor_core.errors import SummaryCutOff

        raise SummaryCutOff("cut: the summary was cut off at max_tokens (5)", "目标：修复")


def test_a_cut_off_summary_is_kept_and_reported() -> None:
    result = full_compact(session_zh(), CutOffProvider())
    assert result.status == "compacted"
    assert result.summary == "目标：修复"
    assert result.cut_off is not None and "max_tokens (5)" in str(result.cut_off)
    outcome = run(RunSettings("full"), Conversation(session_zh()), CutOffProvider())
    assert outcome.changed and outcome.error is None
    assert str(outcome.cut_off) == str(result.cut_off)


def test_a_cut_off_summary_fails_when_whole_summaries_are_required() -> None:
    messages = session_zh()
    result = full_compact(messages, CutOffProvider(), Settings(keep_cut_off=False))
    assert result.status == "failed" and result.messages is messages
    assert "cut off at max_tokens" in str(result.error)
