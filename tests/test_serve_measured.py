"""``ctxpack serve`` measures what the upstream bills (issue 31, item 4): the usage of every
reply — a stream's ``message_start`` and ``message_delta``, a JSON body, Chat Completions' and
Responses' cached tokens — summed per conversation and in all, beside its estimate of the same
requests untouched, against a model server that bills like the providers."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from agents.billing import Billing
from agents.script import Script
from agents.server import ModelServer
from helpers import CORPUS
from serve_support import Serving
from test_billing_servers import messages_body

from compactor_core.compaction.cache_plan import request_points
from compactor_core.replay.cache_rules import ANTHROPIC, OPENAI
from compactor_core.serve.usage import UsageReader


def measured_after(proxy: Serving, requests: int) -> dict:
    """serve's measured figures once all ``requests`` are in them: a request is counted just
    after its reply has gone, so a caller may ask a moment before (bounded: 10 s)."""
    deadline = time.monotonic() + 10
    while True:
        measured = httpx.get(proxy.url + "/ctxpack/stats").json()["measured"]
        if measured["requests"] >= requests or time.monotonic() > deadline:
            return measured
        time.sleep(0.05)


@pytest.mark.parametrize("stream", [False, True])
def test_the_bill_serve_measures_is_the_one_the_upstream_billed(stream: bool) -> None:
    with ModelServer(Script(), billing=Billing()) as server, Serving(server.url) as proxy:
        for turns in (1, 2, 3):
            answer = httpx.post(proxy.url + "/v1/messages", json=messages_body(turns, stream))
            assert answer.status_code == 200
        measured = measured_after(proxy, 3)
        billed = sum(usage.billed(ANTHROPIC.prices) for _, usage in server.billing.bills)
    assert measured["requests"] == 3
    assert measured["billed"] == round(billed)
    assert "billed " in proxy.log and "(untouched ~" in proxy.log


def test_openai_s_cached_tokens_are_read_from_both_of_its_apis() -> None:
    history = [{"role": "user", "content": "read the logs " * 600}]
    items = [{"type": "message", "role": "user", "content": "read the logs " * 600}]
    with ModelServer(Script(), billing=Billing()) as server, Serving(server.url) as proxy:
        for _ in range(2):
            httpx.post(proxy.url + "/v1/chat/completions", json={"model": "m", "messages": history})
            httpx.post(proxy.url + "/v1/responses", json={"model": "m", "input": items})
        measured = measured_after(proxy, 4)
        billed = sum(usage.billed(OPENAI.prices) for _, usage in server.billing.bills)
    assert measured["requests"] == 4
    assert measured["billed"] == round(billed) < 4 * 600 * 3  # the cache read the repeats


def test_a_stream_is_read_as_it_passes_even_cut_in_odd_places() -> None:
    stream = (
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":'
        b'{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":900,'
        b'"cache_creation":{"ephemeral_5m_input_tokens":40,"ephemeral_1h_input_tokens":60}}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":7}}\n\n'
    )
    reader = UsageReader(streamed=True)
    for start in range(0, len(stream), 7):
        reader.feed(stream[start : start + 7])
    usage = reader.usage()
    assert (usage.read, usage.written_5m, usage.written_1h, usage.plain) == (900, 40, 60, 3)


def test_a_reply_without_usage_measures_nothing() -> None:
    reader = UsageReader(streamed=False)
    reader.feed(b'{"id": "x", "content": []}')
    assert reader.usage() is None


def marked_at_the_tail(messages: list[dict]) -> list[dict]:
    """The history as Claude Code sends it: a breakpoint on the last block of the last message."""
    last = messages[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    return [*messages[:-1], {**last, "content": blocks}]


def breakpoints(body: dict) -> int:
    return json.dumps(body).count('"cache_control"')


def test_a_real_session_through_serve_bills_no_more_than_sent_direct() -> None:
    """The corpus's real Claude Code session, each request marked as Claude Code marks it, sent
    straight to a server that bills like Anthropic and through serve to another: serve's batches
    and summary, with the breakpoint it adds at the end of the unchanged prefix, bill less."""
    messages = json.loads((CORPUS / "cc_kimi_516b7270.json").read_bytes())
    bodies = [
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "messages": marked_at_the_tail(messages[:point]),
        }
        for point in request_points(messages)
    ]
    with (
        ModelServer(Script(), billing=Billing()) as direct,
        ModelServer(Script(), billing=Billing()) as upstream,
        Serving(upstream.url, "--threshold", "20000") as proxy,
        httpx.Client(timeout=60) as client,
    ):
        for body in bodies:
            assert client.post(direct.url + "/v1/messages", json=body).status_code == 200
            assert client.post(proxy.url + "/v1/messages", json=body).status_code == 200
        measured = measured_after(proxy, len(bodies))
        sent = [request.body for request in upstream.model_requests]  # JSON, as received
    paid = sum(usage.billed(ANTHROPIC.prices) for _, usage in upstream.billing.bills)
    straight = sum(usage.billed(ANTHROPIC.prices) for _, usage in direct.billing.bills)
    print(f"through serve {paid / straight:.3f}x direct; serve measured {measured}")
    assert paid <= straight
    assert measured["billed"] == round(paid)
    assert all(breakpoints(body) <= 4 for body in sent)
