"""`ctxpack full` and `ctxpack auto` through click's CliRunner: stdout and stderr asserted apart."""

from __future__ import annotations

import json
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from checks_full import pair_violations
from click.testing import Result
from helpers import CORPUS, corpus_files, invoke, micro_in_place
from provider_seam import use_provider
from support_full import (
    FAILING_PROVIDERS,
    PREFIX,
    SEED_ACK,
    SEED_SYSTEM,
    SEED_USER_INTRO,
    RaisingProvider,
    RecordingProvider,
    anthropic_call,
    anthropic_result,
    session_zh,
)

from compactor_core.compaction import pipeline
from compactor_core.compaction.estimate import estimate, quarters_to_tokens, text_quarters
from compactor_core.conversation.formats import parse
from compactor_core.errors import ProviderError, RetryableProviderError
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.settings import Settings

Message = dict[str, Any]
TINY = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
    {"role": "user", "content": "bye"},
]


def output(result: Result) -> Any:
    return json.loads(result.stdout)


def warnings(result: Result) -> list[str]:
    return result.stderr.splitlines()


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch):
    """Make the CLI use the given provider, whatever the options say."""

    def install(provider: Any) -> Any:
        return use_provider(monkeypatch, provider)

    return install


def snapshots(transcripts: Path) -> list[Path]:
    """The snapshots' data files (not their .meta), oldest first."""
    if not transcripts.is_dir():
        return []
    return sorted(path for path in transcripts.iterdir() if not path.name.endswith(".meta"))


def big_session() -> list[Message]:
    messages = session_zh()[:-1]
    for n in range(6):
        messages += [
            anthropic_call(f"b{n}", "read_file", {"file_path": f"src/part{n}.py"}),
            anthropic_result(f"b{n}", f"def part{n}():\n" + "    pass  # 代码\n" * 200),
        ]
    messages.append({"role": "user", "content": "请继续，别忘了更新测试。"})
    return messages


# --- full ----------------------------------------------------------------------------------------


def test_full_with_the_built_in_summarizer(transcripts: Path) -> None:
    messages = big_session()
    result = invoke("full", messages=messages)
    assert result.exit_code == 0
    assert result.stderr == ""
    out = output(result)
    assert out[:2] == [messages[0], messages[6]]
    assert out[2]["role"] == "user" and out[2]["content"].startswith(PREFIX + "## 目标\n- 最初请求")
    assert out[3:] == [{"role": "assistant", "content": SEED_ACK}, messages[-1]]
    assert len(snapshots(transcripts)) == 2


def test_full_snapshots_the_input_then_the_result(transcripts: Path) -> None:
    messages = big_session()
    result = invoke("full", "--session-id", "s1", messages=messages)
    first, second = snapshots(transcripts)  # names sort by time
    assert first.read_bytes() == json.dumps(messages, ensure_ascii=False).encode()  # as it came
    assert first.name.endswith(".original.json") and second.name.endswith(".result.json")
    assert json.loads(second.read_text()) == output(result)  # in the input's shape
    for path in (first, second):
        assert path.name.startswith("s1_")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_envelopes_result_snapshot_is_the_envelope_it_wrote(transcripts: Path) -> None:
    envelope = {
        "model": "claude-x",
        "system": "Be brief.",
        "max_tokens": 9,
        "messages": big_session(),
    }
    result = invoke("full", "--session-id", "s2", stdin=json.dumps(envelope).encode())
    assert result.exit_code == 0, result.stderr
    kept = snapshots(transcripts)[-1]
    assert kept.name.endswith(".result.json")
    assert json.loads(kept.read_text()) == json.loads(result.stdout)
    assert {
        key: value for key, value in json.loads(kept.read_text()).items() if key != "messages"
    } == {
        "model": "claude-x",
        "system": "Be brief.",
        "max_tokens": 9,
    }


def test_full_request_through_the_cli(use: Any) -> None:
    provider = use(RecordingProvider())
    assert invoke("full", messages=session_zh()).exit_code == 0
    request = provider.request
    assert request.system == SEED_SYSTEM
    assert request.user.startswith(SEED_USER_INTRO + "\n\n[user]\n登录测试失败了")
    assert request.max_tokens == 2000


def test_full_options_reach_the_provider(use: Any) -> None:
    provider = use(RecordingProvider())
    args = ["--lang", "en", "--instructions", "focus on auth", "--max-tokens", "777"]
    result = invoke("full", *args, messages=session_zh())
    assert result.exit_code == 0
    request = provider.request
    assert request.system.startswith("You are BareAgent's context compaction assistant.")
    assert request.system.endswith("focus on auth")
    assert request.user.startswith("Concisely summarize")
    assert request.max_tokens == 777
    assert output(result)[3] == {
        "role": "assistant",
        "content": "Got it. I understand the previous context and will continue working.",
    }


def test_max_prompt_tokens_through_the_cli(use: Any) -> None:
    provider = use(RecordingProvider())
    messages = big_session()
    result = invoke("full", "--max-prompt-tokens", "1500", messages=messages)
    assert result.exit_code == 0
    sent = quarters_to_tokens(text_quarters([provider.request.system, provider.request.user]))
    assert sent <= 1500 < estimate(messages)


def test_full_keeps_the_envelope_and_jsonl_shapes() -> None:
    envelope = {
        "model": "m",
        "system": "top-level 系统",
        "messages": big_session(),
        "max_tokens": 9,
    }
    result = invoke("full", messages=envelope)
    out = output(result)
    assert list(out) == list(envelope)
    assert {key: out[key] for key in ("model", "system", "max_tokens")} == {
        "model": "m",
        "system": "top-level 系统",
        "max_tokens": 9,
    }
    assert out["messages"][-1] == envelope["messages"][-1]
    jsonl = b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\n" for m in big_session())
    lines = invoke("full", stdin=jsonl).stdout.splitlines()
    assert len(lines) == 5 and json.loads(lines[-1]) == big_session()[-1]


def test_full_with_nothing_to_summarize_writes_the_input_and_no_snapshot(
    transcripts: Path, use: Any
) -> None:
    provider = use(RecordingProvider())
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    result = invoke("full", messages=messages)
    assert (result.exit_code, output(result), result.stderr) == (0, messages, "")
    assert provider.requests == [] and snapshots(transcripts) == []


def test_no_transcript(transcripts: Path) -> None:
    assert invoke("full", "--no-transcript", messages=big_session()).exit_code == 0
    assert not transcripts.exists()


# --- failure -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(FAILING_PROVIDERS))
def test_a_failed_summary_gives_the_input_back_with_one_warning(
    kind: str, use: Any, transcripts: Path
) -> None:
    use(FAILING_PROVIDERS[kind]())
    messages = big_session()
    result = invoke("full", messages=messages)
    assert result.exit_code == 0
    assert output(result) == messages
    (line,) = warnings(result)
    assert line.startswith("ctxpack: <stdin>: summary failed, input left as it was: ")
    (snapshot,) = snapshots(transcripts)
    assert json.loads(snapshot.read_bytes()) == messages


@pytest.mark.parametrize(
    ("error", "cause", "status"),
    [
        (ProviderError("openai: HTTP 400: bad model"), "HTTP 400: bad model", 69),
        (RetryableProviderError("openai: HTTP 503"), "HTTP 503", 75),
        (RuntimeError("boom"), "RuntimeError: boom", 69),
    ],
)
def test_strict_exit_statuses(use: Any, error: Exception, cause: str, status: int) -> None:
    use(RaisingProvider(lambda: error))
    messages = big_session()
    relaxed = invoke("full", messages=messages)
    assert relaxed.exit_code == 0 and cause in relaxed.stderr
    strict = invoke("full", "--strict", messages=messages)
    assert strict.exit_code == status
    assert output(strict) == messages
    (line,) = warnings(strict)
    assert cause in line


def test_the_extractive_no_gain_guard_on_a_tiny_conversation() -> None:
    result = invoke("full", messages=TINY)
    assert (result.exit_code, output(result)) == (0, TINY)
    (line,) = warnings(result)
    assert "summary failed" in line and "not smaller" in line
    assert invoke("full", "--strict", messages=TINY).exit_code == 69


def command(code: str) -> str:
    return shlex.join([sys.executable, "-c", code])


def test_command_provider_failures(transcripts: Path) -> None:
    messages = big_session()
    failing = ["--provider", "command", "--command", command("import sys; sys.exit(3)")]
    result = invoke("full", *failing, messages=messages)
    assert (result.exit_code, output(result)) == (0, messages)
    (line,) = warnings(result)
    assert "exited with status 3" in line
    assert invoke("full", "--strict", *failing, messages=messages).exit_code == 69
    slow = [
        "--provider",
        "command",
        "--timeout",
        "0.2",
        "--command",
        command("import time; time.sleep(5)"),
    ]
    result = invoke("full", "--strict", *slow, messages=messages)
    assert (result.exit_code, output(result)) == (75, messages)


def test_command_provider_summary() -> None:
    prompt = "os.environ['CTXPACK_SYSTEM_PROMPT'][:2]"
    code = f"import os, sys; sys.stdin.read(); print('摘要：' + {prompt})"
    result = invoke(
        "full", "--provider", "command", "--command", command(code), messages=session_zh()
    )
    assert result.exit_code == 0, result.stderr
    assert output(result)[2] == {"role": "user", "content": PREFIX + "摘要：你是\n"}


# --- --compat bareagent --------------------------------------------------------------------------


def test_bareagent_quirks_through_the_cli(use: Any) -> None:
    use(RecordingProvider(""))
    messages = [
        {"role": "user", "content": "list the files"},
        anthropic_call("t1", "bash", {"command": "ls"}),
        anthropic_result("t1", "a.txt"),
    ]
    out = output(invoke("full", "--compat", "bareagent", messages=messages))
    assert out == [
        {"role": "user", "content": PREFIX},
        {"role": "assistant", "content": SEED_ACK},
        messages[2],
    ]
    assert pair_violations(out) == ["messages[2]: 't1'"]
    default = output(invoke("full", messages=messages))
    assert default == messages  # the empty summary is refused
    use(RecordingProvider("ok"))
    assert output(invoke("full", messages=messages)) == [
        {"role": "user", "content": PREFIX + "ok"},
        *messages[1:],
    ]


# --- auto ----------------------------------------------------------------------------------------


def micro_only(messages: list[Message]) -> list[Message]:
    copied = json.loads(json.dumps(messages))
    micro_in_place(copied, 3)
    return copied


def test_auto_below_the_threshold_is_micro_only(use: Any, transcripts: Path) -> None:
    provider = use(RecordingProvider())
    messages = big_session()
    micro = micro_only(messages)
    every_turn = ("--policy", "every-turn")  # SPEC §4: micro on every call
    result = invoke("auto", *every_turn, "--threshold", str(estimate(micro)), messages=messages)
    assert (result.exit_code, output(result), result.stderr) == (0, micro, "")
    assert provider.requests == [] and snapshots(transcripts) == []


def test_auto_above_the_threshold_summarizes(use: Any) -> None:
    provider = use(RecordingProvider())
    messages = big_session()
    micro = micro_only(messages)
    result = invoke("auto", "--threshold", str(estimate(micro) - 1), messages=messages)
    assert result.exit_code == 0 and result.stderr == ""
    assert output(result)[2] == {"role": "user", "content": PREFIX + "ok"}
    assert len(provider.requests) == 1


def test_auto_default_threshold_is_50000(use: Any) -> None:
    provider = use(RecordingProvider())
    assert invoke("auto", messages=big_session()).exit_code == 0
    assert provider.requests == []


def test_auto_keeps_the_micro_result_when_the_summary_fails(use: Any) -> None:
    use(FAILING_PROVIDERS["provider error"]())
    messages = big_session()
    for policy, kept in (("every-turn", micro_only(messages)), ("cache-aware", messages)):
        result = invoke("auto", "--policy", policy, "--threshold", "10", messages=messages)
        assert result.exit_code == 0
        assert output(result) == kept  # cache-aware: its batches are not there yet
        assert warnings(result) == [
            "ctxpack: <stdin>: summary failed, micro-compacted result kept: bad reply: HTTP 400"
        ]
    assert invoke("auto", "--threshold", "10", "--strict", messages=messages).exit_code == 69


def test_auto_summary_failure_is_one_warning_and_the_providers_status(use: Any) -> None:
    use(FAILING_PROVIDERS["retryable"]())
    messages = big_session()
    result = invoke("auto", "--threshold", "10", "--strict", messages=messages)
    assert len(warnings(result)) == 1
    assert result.exit_code == 75


def test_auto_still_over_the_threshold(use: Any) -> None:
    use(RecordingProvider())
    messages = [{"role": "system", "content": "规则。" * 2000}, *big_session()[1:]]
    result = invoke("auto", "--threshold", "1000", messages=messages)
    assert result.exit_code == 0
    assert output(result)[0] == messages[0]
    (line,) = warnings(result)
    assert "after compaction, over the threshold of 1000" in line
    assert invoke("auto", "--threshold", "1000", "--strict", messages=messages).exit_code == 69


def test_restore_gives_the_input_back_after_a_failed_full(use: Any) -> None:
    use(FAILING_PROVIDERS["provider error"]())
    messages = big_session()
    invoke("full", "--session-id", "work-1", messages=messages)
    result = invoke("restore", "--session-id", "work-1")
    assert (result.exit_code, output(result)) == (0, messages)


# --- the corpus ----------------------------------------------------------------------------------


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
@pytest.mark.parametrize("path", corpus_files(), ids=lambda path: path.stem)
def test_corpus_auto_through_the_cli(path: Path) -> None:
    result = invoke("auto", "--threshold", "1000", str(path))
    assert result.exit_code == 0, result.stderr
    out = output(result)
    assert pair_violations(out) == []
    conversation = parse(path.read_bytes(), str(path))
    job = pipeline.RunSettings("auto", Settings(threshold=1000))
    expected = pipeline.run(job, conversation, ExtractiveSummarizer())
    assert out == expected.conversation.messages
