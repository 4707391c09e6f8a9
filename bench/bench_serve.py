"""serve's added time per request (issue 31): what the policy costs a body on its way upstream.

A Claude Code request body made of the corpus's largest real transcript (about 1 MB of messages,
and 1.4 MB with the transcript's first half again in front, as a long session's body is), sent to
one ``Compactor`` as a proxy's caller sends it again and again (the same history, as serve sees it
on every turn): the time of ``compact`` against an orjson round trip of the body, the least a
proxy that reads the body can do. Target: at most 10 ms plus twice the round trip, growing
linearly with the history (the quarter, half and whole bodies are shown beside it). Beside it
too, the whole body as a caller's next request sends it: after the same history without its
last turn (what the proxy kept of that one is taken up).

    python bench/run.py serve
"""

from __future__ import annotations

import orjson
from harness import ROOT, Report, best_in_process

from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.serve.compaction import Compactor
from compactor_core.serve.summaries import KeptSummarizer, SummaryStore
from compactor_core.serve.wire import MESSAGES, WIRES
from compactor_core.settings import Settings

TRANSCRIPT = ROOT / "tests" / "corpus" / "cc_entire_1284c080.json"
FIXED_MS = 10.0
ROUND_TRIPS = 2.0
BODY_BYTES = 1_400_000


def run(report: Report) -> None:
    report.case("serve.added_time", lambda: _added_time(report))


def _added_time(report: Report) -> None:
    messages = orjson.loads(TRANSCRIPT.read_bytes())
    whole = _grown(messages)
    for share in (4, 2, 1):
        _measure(report, _body(whole[: len(whole) // share]), share)
    _measure_new_turn(report, whole)


def _measure(report: Report, data: bytes, share: int) -> None:
    compactor = _compactor()
    compactor.compact(WIRES[MESSAGES], data)  # as serve sees a history the second time on
    added, _ = best_in_process(lambda: compactor.compact(WIRES[MESSAGES], data), 5)
    trip, _ = best_in_process(lambda: orjson.dumps(orjson.loads(data)), 20)
    note = f"{len(data):,} B body; round trip {trip * 1000:.1f} ms"
    if share == 1:
        target = (FIXED_MS / 1000 + ROUND_TRIPS * trip) / trip
        report.ratio("serve.added_time", added, trip, target, note=note)
    else:
        report.info(f"serve.added_time_1_{share}", added, trip, "s", note=note)


def _measure_new_turn(report: Report, whole: list) -> None:
    last_turn = max(i for i, message in enumerate(whole) if message.get("role") == "assistant")
    before, data = _body(whole[:last_turn]), _body(whole)
    best = float("inf")
    for _ in range(5):  # a proxy that has seen the request before this one, each time
        compactor = _compactor()
        compactor.compact(WIRES[MESSAGES], before)
        added, _ = best_in_process(lambda: compactor.compact(WIRES[MESSAGES], data), 1)  # noqa: B023
        best = min(best, added)
    trip, _ = best_in_process(lambda: orjson.dumps(orjson.loads(data)), 20)
    note = f"{len(data):,} B body after one without its last turn; round trip {trip * 1000:.1f} ms"
    report.info("serve.added_time_new_turn", best, trip, "s", note=note)


def _grown(messages: list) -> list:
    """The transcript with its first messages again in front until the body is 1.4 MB."""
    grown = list(messages)
    while len(_body(grown)) < BODY_BYTES:
        grown = messages[: len(messages) // 2] + grown
    return grown


def _body(messages: list) -> bytes:
    system = [{"type": "text", "text": "You are Claude Code."}]
    return orjson.dumps(
        {"model": "claude-x", "max_tokens": 32000, "system": system, "messages": messages}
    )


def _compactor() -> Compactor:
    """serve's, with the built-in summarizer kept by prefix as ``ctxpack serve`` keeps it."""
    kept = KeptSummarizer(ExtractiveSummarizer(), SummaryStore(None), "extractive")
    return Compactor(Settings(), kept)
