"""Provider faults a real model server will not produce on demand, from a scripted server.

Every fault goes through the whole CLI (``ctxpack full --provider openai --base-url URL``) and
must end as SPEC §3 step 8 says: the input unchanged on stdout, one warning line naming the cause,
the snapshot on disk, exit 0 — or 69/75 under ``--strict`` — and the key (``sk-test-SECRET123``)
nowhere in stdout, stderr or the snapshots.

The grid runs in this process (click's CliRunner), the script answered by an
``httpx.MockTransport`` and retries slept on a fake clock, so a test takes milliseconds and the
waits themselves can be asserted. A few smoke tests run the real executable in a real process
against the real local scripted server: a real stall, a real dropped connection, a key echoed back.

Set ``CTXPACK_TEST_REPORT=FILE`` to have each case's attempts and time appended to FILE as JSON.
"""

from __future__ import annotations

import base64
import email.utils
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from provider_seam import use_client_options
from providers_support import (
    CONVERSATION,
    SECRET,
    SUMMARY,
    Run,
    assert_best_effort,
    assert_compacted,
    assert_no_secret,
    clean_env,
    report,
    run_ctxpack,
    snapshots,
)
from scripted_server import (
    Drop,
    FakeClock,
    Reply,
    ScriptedServer,
    ScriptedTransport,
    Stall,
    Step,
    free_port,
)

from compactor_core.conversation.prompts import PROMPTS
from compactor_core.errors import ProviderError, RetryableProviderError
from compactor_core.providers.base import SummaryRequest
from compactor_core.providers.http import MAX_RETRY_AFTER, JsonClient, retry_after
from compactor_core.providers.openai import OpenAISummarizer
from compactor_core.providers.registry import ProviderSettings

FAILED, RETRYABLE = 69, 75


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """The real scripted server, on a port of 127.0.0.1."""
    server = ScriptedServer()
    yield server
    server.close()


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedTransport:
    """The script answered in this process; the CLI's provider talks to it and sleeps on its
    clock."""
    scripted = ScriptedTransport()
    use_client_options(monkeypatch, transport=scripted.transport, sleep=scripted.clock.sleep)
    return scripted


Scripted = ScriptedServer | ScriptedTransport


def record(name: str, run: Run, server: Scripted) -> None:
    report(name, run.seconds, attempts=len(server.requests), status=run.returncode)


# --- replies, as the two protocols shape them ----------------------------------------------------


def chat(content: Any = SUMMARY, finish: str = "stop", **message: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 300, "completion_tokens": 30, "total_tokens": 330},
    }


def anthropic_message(text: str = SUMMARY, stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 300, "output_tokens": 30},
    }


def anthropic_error(status: int, kind: str, message: str) -> Reply:
    body = {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }
    return Reply(status, body)


def openai_error(status: int, message: str, kind: str, code: str | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})


# --- the CLI against the scripted server ---------------------------------------------------------


def ctxpack(
    tmp_path: Path,
    server: Scripted,
    provider: str = "openai",
    *extra: str,
    strict: bool = False,
    retries: int = 2,
    timeout: float = 5,
) -> Run:
    base = f"{server.url}/v1" if provider == "openai" else server.url
    args = [
        "full",
        "--provider",
        provider,
        "--base-url",
        base,
        "--model",
        "model-test",
        "--retries",
        str(retries),
        "--timeout",
        str(timeout),
        *extra,
    ]
    if strict:
        args.append("--strict")
    key = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    env = clean_env(tmp_path, **{key: SECRET})
    return run_ctxpack(tmp_path, args, env=env, in_process=isinstance(server, ScriptedTransport))


@dataclass(frozen=True)
class Fault:
    name: str
    steps: tuple[Step, ...]
    cause: str  # what the warning line must say
    status: int  # the exit status under --strict
    attempts: int  # requests the server must see
    provider: str = "openai"
    options: dict[str, Any] = field(default_factory=dict)


FAULTS = [
    Fault(
        "500 every time",
        (Reply(500, {"error": {"message": "The server had an error", "type": "server_error"}}),),
        "HTTP 500: The server had an error (server_error) (after 2 attempts)",
        RETRYABLE,
        2,
        options={"retries": 1},
    ),
    Fault(
        "429 with retry-after-ms, every time",
        (
            Reply(
                429, openai_error(429, "Rate limit reached", "requests").body, {"retry-after": "1"}
            ),
        ),
        "HTTP 429: Rate limit reached (requests) (after 2 attempts)",
        RETRYABLE,
        2,
        options={"retries": 1},
    ),
    Fault(
        "429 asking for an hour",
        (Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "3600"}),),
        "the server asks to retry after 3600 s",
        RETRYABLE,
        1,
    ),
    Fault(
        "429 for an exhausted quota",
        (
            openai_error(
                429,
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                "insufficient_quota",
            ),
        ),
        "HTTP 429: You exceeded your current quota",
        FAILED,
        1,
    ),
    Fault(
        "a stalled response",
        (Stall(10),),
        "no reply within 0.5 s (read timeout)",
        RETRYABLE,
        1,  # retryable later, but a model too slow once is not asked again in the same run
        options={"retries": 2, "timeout": 0.5},
    ),
    Fault(
        "a dropped connection",
        (Drop(),),
        "connection failed: Server disconnected without sending a response",
        RETRYABLE,
        2,
        options={"retries": 1},
    ),
    Fault(
        "malformed JSON",
        (
            Reply(
                200,
                '{"choices": [{"message": {"content": "half',
                {"content-type": "application/json"},
            ),
        ),
        "the reply is not JSON (application/json)",
        FAILED,
        1,
    ),
    Fault(
        "an HTML error page",
        (Reply(502, "<html>Bad Gateway</html>"),),
        "HTTP 502: <html>Bad Gateway</html>",
        RETRYABLE,
        1,
        options={"retries": 0},
    ),
    Fault("empty content", (Reply(200, chat("")),), "the reply is empty", FAILED, 1),
    Fault("null content", (Reply(200, chat(None)),), "the reply is empty", FAILED, 1),
    Fault(
        "no choices",
        (Reply(200, {"id": "x", "choices": []}),),
        "the reply has no choices",
        FAILED,
        1,
    ),
    Fault(
        "a refusal",
        (Reply(200, chat(None, refusal="I can't help with that.")),),
        "the model refused: I can't help with that.",
        FAILED,
        1,
    ),
    Fault(
        "the content filter",
        (Reply(200, chat("", finish="content_filter")),),
        "withheld by the content filter",
        FAILED,
        1,
    ),
    Fault(
        "an error object in a 200",
        (Reply(200, {"error": {"message": "upstream provider failed", "code": 502}}),),
        "the reply is an error: upstream provider failed",
        FAILED,
        1,
    ),
    Fault(
        "a wrong key (401), echoed back",
        (
            openai_error(
                401,
                f"Incorrect API key provided: {SECRET}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            ),
        ),
        "HTTP 401: Incorrect API key provided: [redacted].",
        FAILED,
        1,
    ),
    Fault(
        "Anthropic 401 authentication_error",
        (anthropic_error(401, "authentication_error", "invalid x-api-key"),),
        "anthropic (127.0.0.1:",
        FAILED,
        1,
        provider="anthropic",
    ),
    Fault(
        "Anthropic 400 invalid_request_error",
        (
            anthropic_error(
                400, "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum"
            ),
        ),
        "HTTP 400: prompt is too long: 215000 tokens > 200000 maximum (invalid_request_error)",
        FAILED,
        1,
        provider="anthropic",
    ),
    Fault(
        "Anthropic 529 overloaded_error, every time",
        (anthropic_error(529, "overloaded_error", "Overloaded"),),
        "HTTP 529: Overloaded (overloaded_error) (after 2 attempts)",
        RETRYABLE,
        2,
        provider="anthropic",
        options={"retries": 1},
    ),
    Fault(
        "Anthropic 429 rate_limit_error",
        (
            Reply(
                429,
                anthropic_error(
                    429,
                    "rate_limit_error",
                    "Number of request tokens has exceeded your per-minute rate limit",
                ).body,
                {"retry-after": "0"},
            ),
        ),
        "HTTP 429: Number of request tokens has exceeded your per-minute rate limit "
        "(rate_limit_error) (after 3 attempts)",
        RETRYABLE,
        3,
        provider="anthropic",
    ),
    Fault(
        "Anthropic stop_reason refusal",
        (Reply(200, anthropic_message("", stop="refusal")),),
        "the model refused to summarize",
        FAILED,
        1,
        provider="anthropic",
    ),
    Fault(
        "Anthropic content without text",
        (Reply(200, {**anthropic_message(), "content": [{"type": "thinking", "thinking": "…"}]}),),
        "the reply is empty",
        FAILED,
        1,
        provider="anthropic",
    ),
]


FAULT = {fault.name: fault for fault in FAULTS}


def check_fault(tmp_path: Path, server: Scripted, fault: Fault, strict: bool) -> None:
    server.script(*fault.steps)
    run = ctxpack(tmp_path, server, fault.provider, strict=strict, **fault.options)
    record(fault.name, run, server)
    assert_best_effort(run, fault.cause, fault.status if strict else 0)
    assert len(server.requests) == fault.attempts
    prefix = "ctxpack: <stdin>: summary failed, input left as it was: "
    assert run.warnings()[0].startswith(prefix)


@pytest.mark.parametrize("fault", FAULTS, ids=[fault.name for fault in FAULTS])
def test_fault(tmp_path: Path, scripted: ScriptedTransport, fault: Fault) -> None:
    """Each fault twice: best effort (exit 0), then --strict (69 or 75)."""
    check_fault(tmp_path / "best-effort", scripted, fault, strict=False)
    check_fault(tmp_path / "strict", scripted, fault, strict=True)


@pytest.mark.parametrize(
    "name, strict", [("a stalled response", True), ("a wrong key (401), echoed back", False)]
)
def test_fault_in_a_real_process(
    tmp_path: Path, server: ScriptedServer, name: str, strict: bool
) -> None:
    """Smoke tests of the grid through the real executable and a real socket: a reply that
    never comes (a real read timeout), and a key the server echoes (scrubbed from the output
    and the snapshot files)."""
    check_fault(tmp_path, server, FAULT[name], strict)


def test_connection_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real refused connection (nothing listens on the port), retried without waiting."""
    clock = FakeClock()
    use_client_options(monkeypatch, sleep=clock.sleep)
    args = ["full", "--provider", "openai", "--base-url", f"http://127.0.0.1:{free_port()}/v1"]
    run = run_ctxpack(tmp_path, [*args, "--retries", "1", "--strict"], in_process=True)
    assert_best_effort(run, "connection failed: ", RETRYABLE)
    assert "(after 2 attempts)" in run.stderr
    assert len(clock.slept) == 1


# --- recoveries: a retry that succeeds is no failure ---------------------------------------------


def test_500_then_200_is_retried(tmp_path: Path, scripted: ScriptedTransport) -> None:
    scripted.script(Reply(500, {"error": {"message": "boom"}}), Reply(200, chat()))
    run = ctxpack(tmp_path, scripted, strict=True)
    record("500 then 200", run, scripted)
    assert_compacted(run, SUMMARY)
    assert len(scripted.requests) == 2
    assert scripted.requests[0].body == scripted.requests[1].body
    [wait] = scripted.clock.slept
    assert 0.25 <= wait <= 0.5  # the first backoff, with equal jitter


def test_429_retry_after_is_honoured(tmp_path: Path, scripted: ScriptedTransport) -> None:
    scripted.script(
        Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "1"}), Reply(200, chat())
    )
    run = ctxpack(tmp_path, scripted, strict=True)
    record("429 Retry-After 1 then 200", run, scripted)
    assert_compacted(run, SUMMARY)
    first, second = scripted.requests
    assert scripted.clock.slept == [1.0]
    assert second.at - first.at == 1.0


def test_anthropic_529_then_200(tmp_path: Path, scripted: ScriptedTransport) -> None:
    scripted.script(
        anthropic_error(529, "overloaded_error", "Overloaded"), Reply(200, anthropic_message())
    )
    run = ctxpack(tmp_path, scripted, "anthropic", strict=True)
    record("Anthropic 529 then 200", run, scripted)
    assert_compacted(run, SUMMARY)
    assert len(scripted.requests) == 2


def test_dropped_connection_then_200(tmp_path: Path, scripted: ScriptedTransport) -> None:
    scripted.script(Drop(), Reply(200, chat()))
    run = ctxpack(tmp_path, scripted, strict=True)
    assert_compacted(run, SUMMARY)
    assert len(scripted.requests) == 2


def test_dropped_connection_then_200_in_a_real_process(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """Smoke test: a real server closing a real connection, the retry, the summary."""
    server.script(Drop(), Reply(200, chat()))
    run = ctxpack(tmp_path, server, strict=True)
    assert_compacted(run, SUMMARY)
    assert len(server.requests) == 2


# --- what is sent --------------------------------------------------------------------------------


def test_openai_request_shape(tmp_path: Path, scripted: ScriptedTransport) -> None:
    scripted.script(Reply(200, chat()))
    run = ctxpack(tmp_path, scripted)
    assert_compacted(run, SUMMARY)
    (request,) = scripted.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["content-type"] == "application/json"
    assert set(request.body) == {"model", "messages", "max_tokens"}
    assert request.body["model"] == "model-test"
    assert request.body["max_tokens"] == 2000
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": PROMPTS["zh"].system}
    assert user["role"] == "user"
    assert_user_prompt(user["content"])


def test_anthropic_request_shape(tmp_path: Path, scripted: ScriptedTransport) -> None:
    scripted.script(Reply(200, anthropic_message()))
    run = ctxpack(tmp_path, scripted, "anthropic")
    assert_compacted(run, SUMMARY)
    (request,) = scripted.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == SECRET
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert set(request.body) == {"model", "system", "messages", "max_tokens"}
    assert request.body["model"] == "model-test"
    assert request.body["max_tokens"] == 2000
    assert request.body["system"] == PROMPTS["zh"].system
    (user,) = request.body["messages"]
    assert user["role"] == "user"
    assert_user_prompt(user["content"])


def assert_user_prompt(prompt: str) -> None:
    assert prompt.startswith(PROMPTS["zh"].user_intro + "\n\n[user]\n登录测试")
    assert "[tool_use:bash]" in prompt and "AssertionError" in prompt
    assert "CHANGELOG" not in prompt  # the pending turn is not summarized


def test_no_key_no_authorization_header(tmp_path: Path, scripted: ScriptedTransport) -> None:
    """A local server needs no key; none is invented."""
    scripted.script(Reply(200, chat()))
    args = ["full", "--provider", "openai", "--base-url", f"{scripted.url}/v1"]
    run = run_ctxpack(tmp_path, args, env=clean_env(tmp_path), in_process=True)
    assert_compacted(run, SUMMARY)
    assert "authorization" not in scripted.requests[0].headers


def test_options_model_and_max_tokens_reach_the_request(
    tmp_path: Path, scripted: ScriptedTransport
) -> None:
    scripted.script(Reply(200, chat()))
    ctxpack(tmp_path, scripted, "openai", "--max-tokens", "123", "--lang", "en")
    body = scripted.requests[0].body
    assert body["max_tokens"] == 123
    assert body["messages"][0]["content"] == PROMPTS["en"].system


def test_summary_is_kept_exactly_but_for_the_key(
    tmp_path: Path, scripted: ScriptedTransport
) -> None:
    """Whitespace and all; a key the server echoes into the summary is scrubbed (--stats too)."""
    summary = "  Goal: fix the login test.\n\n- src/auth.py changed\n\n"
    scripted.script(Reply(200, chat(f"{summary}key={SECRET}\n")))
    run = ctxpack(tmp_path, scripted, "openai", "--stats")
    assert run.returncode == 0 and "tokens" in run.stderr
    assert run.output[1]["content"] == f"[Context Compressed]\n{summary}key=[redacted]\n"
    assert_no_secret(run)


def test_bad_key_characters_are_a_config_error(tmp_path: Path, scripted: ScriptedTransport) -> None:
    args = ["full", "--provider", "openai", "--base-url", f"{scripted.url}/v1"]
    env = clean_env(tmp_path, OPENAI_API_KEY="sk-test-SECRET123\u201d")
    run = run_ctxpack(tmp_path, args, env=env, in_process=True)
    assert run.returncode == 78
    assert run.stdout == ""
    assert "OPENAI_API_KEY" in run.stderr and "SECRET123" not in run.stderr
    assert scripted.requests == []


def test_missing_key_for_the_hosted_service(tmp_path: Path) -> None:
    run = run_ctxpack(
        tmp_path, ["full", "--provider", "anthropic"], env=clean_env(tmp_path), in_process=True
    )
    assert run.returncode == 78
    assert run.stderr == "ctxpack: no API key for provider 'anthropic': set ANTHROPIC_API_KEY\n"
    assert run.stdout == "" and snapshots(run) == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_auto_needs_no_key_when_no_summary_is_needed(tmp_path: Path, provider: str) -> None:
    """Under the threshold auto only micro-compacts: no model is asked, so no key is needed."""
    args = ["auto", "--provider", provider, "--threshold", "1000000", "--stats"]
    run = run_ctxpack(tmp_path, args, env=clean_env(tmp_path), in_process=True)
    assert run.returncode == 0, run.stderr
    assert run.output[0] == CONVERSATION[0]
    assert "summary" not in run.stderr and snapshots(run) == []


@pytest.mark.parametrize("command", [["auto", "--threshold", "0"], ["full"]])
def test_a_missing_key_is_78_once_a_summary_is_needed(
    tmp_path: Path, scripted: ScriptedTransport, command: list[str]
) -> None:
    """Over the threshold (or ``full``) the key is checked before any request or snapshot.

    The config file names the key variable, so the scripted server counts as a service that
    needs one: it must see no request at all.
    """
    config = tmp_path / "config.toml"
    config.write_text(f'[openai]\nbase_url = "{scripted.url}/v1"\napi_key_env = "MY_KEY"\n')
    env = clean_env(tmp_path, CTXPACK_CONFIG=str(config))
    run = run_ctxpack(tmp_path, [*command, "--provider", "openai"], env=env, in_process=True)
    assert run.returncode == 78
    assert run.stderr == "ctxpack: no API key for provider 'openai': set MY_KEY\n"
    assert run.stdout == "" and snapshots(run) == []
    assert scripted.requests == []


def test_a_base_url_without_a_scheme_is_a_config_error(tmp_path: Path) -> None:
    args = ["full", "--provider", "openai", "--base-url", "localhost:11434/v1"]
    run = run_ctxpack(tmp_path, args, env=clean_env(tmp_path), in_process=True)
    assert run.returncode == 78
    assert run.stderr == (
        "ctxpack: base URL 'localhost:11434/v1' for provider 'openai' must start with http:// "
        "or https://\n"
    )


# --- the retry logic itself, against the same real server, without waiting ----------------------


def client(server: ScriptedServer, retries: int = 3, now: float = 1e9) -> tuple[JsonClient, list]:
    slept: list[float] = []
    settings = ProviderSettings(
        "openai", "m", f"{server.url}/v1", SECRET, "OPENAI_API_KEY", 5, retries
    )
    return JsonClient(
        "openai", settings, {}, sleep=slept.append, now=lambda: now, jitter=lambda: 1.0
    ), slept


def test_backoff_grows_exponentially(server: ScriptedServer) -> None:
    server.script(Reply(503, "busy"))
    http, slept = client(server, retries=4)
    with pytest.raises(RetryableProviderError, match=r"HTTP 503: busy \(after 5 attempts\)"):
        http.post_json("/chat/completions", {})
    assert slept == [0.5, 1.0, 2.0, 4.0]


def test_backoff_jitter_is_equal_jitter(server: ScriptedServer) -> None:
    server.script(Reply(503, "busy"))
    http, slept = client(server, retries=5)
    http._jitter = lambda: 0.0
    with pytest.raises(RetryableProviderError):
        http.post_json("/chat/completions", {})
    assert slept == [0.25, 0.5, 1.0, 2.0, 4.0]  # half the backoff, never less


@pytest.mark.parametrize(
    "headers, wait",
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": email.utils.formatdate(1e9 + 30, usegmt=True)}, 30.0),
        ({"retry-after": email.utils.formatdate(1e9 - 30, usegmt=True)}, 0.0),
        ({"retry-after": "soon"}, 0.5),  # unreadable: the backoff
    ],
)
def test_retry_after_forms(server: ScriptedServer, headers: dict[str, str], wait: float) -> None:
    server.script(Reply(429, "slow down", headers), Reply(200, chat()))
    http, slept = client(server)
    assert http.post_json("/chat/completions", {})["choices"]
    assert slept == [pytest.approx(wait)]


def test_retry_after_beyond_the_cap_is_not_waited_for(server: ScriptedServer) -> None:
    server.script(Reply(503, "maintenance", {"retry-after": str(int(MAX_RETRY_AFTER) + 1)}))
    http, slept = client(server)
    with pytest.raises(RetryableProviderError, match="retry after 61 s"):
        http.post_json("/chat/completions", {})
    assert slept == [] and len(server.requests) == 1


def test_retry_after_parsing_edge_cases() -> None:
    assert retry_after({}) is None
    assert retry_after({"retry-after": "-3"}) is None
    assert retry_after({"retry-after": "nan"}) is None
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00"}) is None  # no zone: not HTTP


def test_other_4xx_are_not_retried(server: ScriptedServer) -> None:
    server.script(Reply(404, {"error": {"message": "model 'x' not found", "type": "not_found"}}))
    http, slept = client(server)
    with pytest.raises(ProviderError) as raised:
        http.post_json("/chat/completions", {})
    assert not isinstance(raised.value, RetryableProviderError)
    assert str(raised.value) == (
        f"openai ({server.url.removeprefix('http://')}): HTTP 404: model 'x' not found (not_found)"
    )
    assert slept == []


def test_one_client_serves_many_requests(server: ScriptedServer) -> None:
    server.script(Reply(200, chat()))
    settings = ProviderSettings("openai", "m", f"{server.url}/v1/", None, None, 5, 0)
    summarizer = OpenAISummarizer(settings)
    request = SummaryRequest("system", "user", 50, [])
    assert [summarizer.summarize(request) for _ in range(3)] == [SUMMARY] * 3
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 3
    assert summarizer.client._client is not None


def test_long_server_messages_are_clipped_to_one_line(server: ScriptedServer) -> None:
    message = "line one\nline two " + "x" * 5000 + SECRET
    server.script(Reply(400, {"error": {"message": message}}))
    http, _ = client(server)
    with pytest.raises(ProviderError) as raised:
        http.post_json("/chat/completions", {})
    text = str(raised.value)
    assert "\n" not in text and len(text) < 400
    assert "line one line two" in text and "SECRET" not in text


def test_building_a_network_provider_does_not_import_httpx() -> None:
    """Building a network provider does not import httpx; the first request does."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from compactor_core.providers.registry import ProviderSettings, build_provider\n"
        "build_provider(ProviderSettings('openai', 'm', 'http://127.0.0.1:9/v1'))\n"
        "print('httpx' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout == "False\n", result.stderr


def test_conversation_fixture_is_big_enough_for_the_summary_guard() -> None:
    from compactor_core.compaction.estimate import estimate, text_quarters

    assert estimate(CONVERSATION[1:-1]) > -(-text_quarters([SUMMARY]) // 4) * 3


# --- the key in any form (issue 22.10) -----------------------------------------------------------


def basic(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


ALTERED = {
    "upper-cased": SECRET.upper(),
    "one character short": SECRET[:-1],
    "its first character gone": SECRET[1:],
    "in a Basic authorization": basic(f"user:{SECRET}"),
    "base64, URL-safe": base64.urlsafe_b64encode(SECRET.encode()).decode(),
}


@pytest.mark.parametrize("form", ALTERED)
def test_the_key_echoed_in_another_form_is_redacted(
    tmp_path: Path, scripted: ScriptedTransport, form: str
) -> None:
    """An upstream echoed the key upper-cased, base64-encoded, one character short: printed."""
    echoed = ALTERED[form]
    scripted.script(openai_error(401, f"Incorrect API key provided: {echoed}.", "x", "y"))
    run = ctxpack(tmp_path, scripted)
    [warning] = run.warnings()
    assert "Incorrect API key provided: " in warning and "[redacted]" in warning
    assert echoed not in warning
    for key in ALTERED.values():
        assert all(key[n : n + 10] not in run.stderr for n in range(len(key) - 9))
    assert_no_secret(run)


def test_a_summary_that_quotes_the_key_in_any_form_keeps_the_rest_exactly(
    tmp_path: Path, scripted: ScriptedTransport
) -> None:
    lines = [f"{form}: {key}" for form, key in ALTERED.items()]
    summary = "Goal: fix the login test.\n" + "\n".join(lines) + "\n"
    scripted.script(Reply(200, chat(summary)))
    run = ctxpack(tmp_path, scripted, "openai")
    text = run.output[1]["content"]
    assert text.startswith(
        "[Context Compressed]\nGoal: fix the login test.\nupper-cased: [redacted]"
    )
    for form in ALTERED:
        assert f"\n{form}: " in text
    for key in ALTERED.values():
        assert all(key[n : n + 10] not in text for n in range(len(key) - 9))
