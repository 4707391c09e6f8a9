"""``ctxpack serve`` measures what the upstream bills (issue 31, item 4): the usage of every
reply — a stream's ``message_start`` and ``message_delta``, a JSON body, Chat Completions' and
Responses' cached tokens — summed per conversation and in all, beside its estimate of the same
requests untouched, against a model server that bills like the providers."""

from __future__ import annotations

import httpx
import pytest
from agents.billing import Billing
from agents.script import Script
from agents.server import ModelServer
from serve_support import Serving
from test_billing_servers import messages_body

from compactor_core.replay.cache_rules import ANTHROPIC, OPENAI
from compactor_core.serve.usage import UsageReader


@pytest.mark.parametrize("stream", [False, True])
def test_the_bill_serve_measures_is_the_one_the_upstream_billed(stream: bool) -> None:
    with ModelServer(Script(), billing=Billing()) as server, Serving(server.url) as proxy:
        for turns in (1, 2, 3):
            answer = httpx.post(proxy.url + "/v1/messages", json=messages_body(turns, stream))
            assert answer.status_code == 200
        measured = httpx.get(proxy.url + "/ctxpack/stats").json()["measured"]
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
        measured = httpx.get(proxy.url + "/ctxpack/stats").json()["measured"]
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
