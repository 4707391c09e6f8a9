"""Issue 24: the bill of a whole real session sent through ``ctxpack serve``.

A caller that re-sends its raw history on every request (what a proxy always sees) sends each
request of a real transcript, oldest first, through the real ``ctxpack serve``, whose default is
``auto``'s cache-aware policy; what the upstream received is billed with prompt caching (the
replay's arithmetic, ``compactor_core.replay.pricing``) beside the untouched requests.
"""

from __future__ import annotations

import json

import httpx
from helpers import CORPUS
from serve_support import Serving, Upstream

from compactor_core.compaction.cache_plan import request_points
from compactor_core.replay.pricing import DEFAULT_PROFILE, PROFILES, Meter

TRANSCRIPT = CORPUS / "cc_kimi_516b7270.json"  # a real Claude Code session (tests/corpus)
THRESHOLD = "20000"
MOST_BILLED = 0.8  # of the untouched requests' bill


def test_a_real_session_through_the_proxy_is_billed_at_most_four_fifths() -> None:
    messages = json.loads(TRANSCRIPT.read_bytes())
    points = request_points(messages)
    untouched, through = Meter(PROFILES[DEFAULT_PROFILE]), Meter(PROFILES[DEFAULT_PROFILE])
    with Upstream() as upstream, Serving(upstream.url, "--threshold", THRESHOLD) as proxy:
        with httpx.Client(timeout=60) as client:
            for point in points:
                body = {"model": "m", "max_tokens": 64, "messages": messages[:point]}
                reply = client.post(proxy.url + "/v1/messages", json=body)
                assert reply.status_code == 200, reply.text
                untouched.send(messages[:point])
        assert proxy.stop() == 0
    forwarded = [json.loads(received.body)["messages"] for received in upstream.received]
    assert len(forwarded) == len(points)
    for request, point in zip(forwarded, points, strict=True):
        assert request[-1] == messages[point - 1]  # the turn being answered, as it was
    for request in forwarded:
        through.send(request)
    ratio = through.bill().billed / untouched.bill().billed
    print(f"billed {ratio:.3f}x the untouched requests")
    assert ratio <= MOST_BILLED, f"billed {ratio:.2f}x the untouched requests"
    assert through.bill().sent < untouched.bill().sent
