"""The replay's arithmetic on hand-made conversations: a cache hit, a miss, a gap over the TTL."""

from __future__ import annotations

import json

import pytest
from helpers import CORPUS, TESTS

from compactor_core.compaction.cache_apply import Heads, compact_stably
from compactor_core.compaction.estimate import estimate
from compactor_core.errors import ConfigError
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.replay import recordings
from compactor_core.replay.pricing import PROFILES, Meter, Pricing, pricing
from compactor_core.replay.report import as_json, figures
from compactor_core.replay.run import (
    BAREAGENT,
    CHOSEN,
    KEEPS,
    RESENDS,
    UNTOUCHED,
    Recording,
    replay,
)
from compactor_core.session_files.index import index_session
from compactor_core.session_files.registry import detect
from compactor_core.settings import Settings

PRICES = Pricing("test", read=0.1, write=1.25, ttl=300)
# 40 ASCII letters are 10 tokens (SPEC §1); each message below is a whole number of tokens. U1
# alone is over Anthropic's minimum cacheable prefix (1,024 tokens).
U1 = {"role": "user", "content": "a" * 4400}  # 1,100 tokens
A1 = {"role": "assistant", "content": "b" * 80}  # 20
U2 = {"role": "user", "content": "c" * 120}  # 30


def test_a_hit_reads_the_last_breakpoint_of_the_previous_request_and_writes_the_rest() -> None:
    meter = Meter(PRICES)
    meter.send([U1])
    meter.send([U1, A1, U2])
    first, second = meter.bill().requests
    assert (first.tokens, first.cached, first.written) == (1100, 0, 1100)
    assert (second.tokens, second.cached, second.written) == (1150, 1100, 50)
    assert meter.bill().billed == pytest.approx(1.25 * 1100 + 0.1 * 1100 + 1.25 * 50)
    assert meter.bill().hit_rate == pytest.approx(1100 / 2250)


def test_a_changed_message_is_paid_from_the_newest_entry_before_it() -> None:
    """Claude Code marks only the last block: no entry ends at U1, so a change after it is a
    miss from the start (a longest-common-prefix cache would read U1)."""
    meter = Meter(PRICES)
    meter.send([U1, A1])
    meter.send([U1, {"role": "assistant", "content": "B" * 80}, U2])  # same size, other text
    assert meter.bill().requests[1].cached == 0


def test_a_gap_longer_than_the_ttl_is_a_miss() -> None:
    meter = Meter(PRICES)
    meter.send([U1], time=1000.0)
    meter.send([U1, A1, U2], time=1300.0)  # 300 s: still alive
    meter.send([U1, A1, U2, A1], time=1600.5)  # 300.5 s later: expired
    assert [request.cached for request in meter.bill().requests] == [0, 1100, 0]
    assert meter.bill().billed == pytest.approx(
        1.25 * 1100 + (0.1 * 1100 + 1.25 * 50) + 1.25 * 1170
    )


def test_an_envelope_system_is_marked_where_claude_code_marks_its_own() -> None:
    meter = Meter(PRICES)
    meter.send([A1], system="s" * 4400)
    meter.send([A1, U2], system="s" * 4400)
    assert [(r.tokens, r.cached, r.written) for r in meter.bill().requests] == [
        (1120, 0, 1120),
        (1150, 1120, 30),
    ]


def test_one_hour_writes_are_priced_at_their_own_rate() -> None:
    meter = Meter(PROFILES["anthropic-1h"])
    meter.send([U1], time=0.0)
    meter.send([U1, A1, U2], time=3000.0)  # 50 minutes: an hour's entry is still there
    assert meter.bill().billed == pytest.approx(2.0 * 1100 + 0.1 * 1100 + 2.0 * 50)


def test_pricing_profiles_and_explicit_multipliers() -> None:
    assert (PROFILES["anthropic-5m"].read, PROFILES["anthropic-5m"].write) == (0.1, 1.25)
    assert (PROFILES["anthropic-1h"].write, PROFILES["anthropic-1h"].ttl) == (2.0, 3600)
    assert (PROFILES["openai"].read, PROFILES["openai"].write) == (0.1, 1.0)
    custom = pricing("openai", read=0.5, ttl=60)
    assert (custom.read, custom.write, custom.ttl, custom.rules) == (0.5, 1.0, 60, "openai")
    with pytest.raises(ConfigError, match="unknown pricing 'azure'"):
        pricing("azure")


def test_untouched_replay_is_one_request_before_each_assistant_message() -> None:
    messages = [U1, A1, U2, A1, U1]
    result = replay(Recording(messages), Settings(), PRICES)
    bill = result.find(KEEPS, UNTOUCHED).bill
    assert result.requests == 2  # before each assistant message: the trailing user waits
    assert [(r.tokens, r.cached) for r in bill.requests] == [(1100, 0), (1150, 1100)]
    # nothing to compact: the policies send what untouched sends
    for use in (KEEPS, RESENDS):
        assert result.find(use, CHOSEN).bill.requests == bill.requests


def test_the_seed_marks_every_turn_and_pays_for_it() -> None:
    """Micro on every call moves the marker each turn: the cache breaks at every request."""
    messages = [{"role": "user", "content": "go"}]
    for number in range(8):
        call = f"t{number}"
        messages += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "bash"}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": "x" * 4000}],
            },
        ]
    result = replay(Recording(messages), Settings(min_gain=3000), PRICES)
    rows = {(row["use"], row["policy"]): row for row in figures([result])}
    assert rows[(KEEPS, BAREAGENT)]["vs_untouched"] > 1  # the seed's bill is higher than untouched
    assert rows[(KEEPS, CHOSEN)]["vs_untouched"] < rows[(KEEPS, BAREAGENT)]["vs_untouched"]
    assert rows[(KEEPS, CHOSEN)]["hit_rate"] > rows[(KEEPS, BAREAGENT)]["hit_rate"]


def test_both_ways_of_use_send_the_same_requests_on_a_real_transcript() -> None:
    """Stateless: a proxy re-sending the raw history gets what an agent keeping the output gets."""
    messages = json.loads((CORPUS / "cc_kimi_516b7270.json").read_bytes())
    result = replay(Recording(messages), Settings(threshold=8000), PROFILES["anthropic-5m"])
    keeps, resends = result.find(KEEPS, CHOSEN).bill, result.find(RESENDS, CHOSEN).bill
    assert max(request.tokens for request in keeps.requests) <= 8000 * 1.5
    assert [r.tokens for r in keeps.requests] == [r.tokens for r in resends.requests]
    assert keeps.billed < result.find(KEEPS, UNTOUCHED).bill.billed


def test_heads_written_once_give_the_same_requests() -> None:
    messages = json.loads((CORPUS / "cc_kimi_516b7270.json").read_bytes())
    chosen, summarizer, heads = Settings(threshold=6000), ExtractiveSummarizer(), Heads()
    for point in (60, 75, 95):
        history = messages[:point]
        remembered = compact_stably(history, chosen, summarizer, heads=heads)
        assert remembered.messages == compact_stably(history, chosen, summarizer).messages
        assert estimate(remembered.messages) <= remembered.plan.tokens


def test_a_session_file_brings_its_times() -> None:
    path = TESTS / "fixtures" / "claude_code" / "session.jsonl"
    with path.open("rb") as handle:
        session = index_session(handle, detect(handle, "auto", str(path)), str(path))
        recording = recordings.from_session(handle, session)
    assert len(recording.times) == len(recording.messages) > 0
    assert all(time is not None and time > 1.7e9 for time in recording.times)
    assert recordings.parse_time("2025-01-02T03:04:05.500Z") == pytest.approx(1735787045.5)
    assert recordings.parse_time(1735787045500) == pytest.approx(1735787045.5)
    assert recordings.parse_time("yesterday") is None


def test_the_json_report_holds_every_request() -> None:
    result = replay(Recording([U1, A1, U2, A1]), Settings(), PRICES)
    report = as_json(result, "x.json")
    assert report["per_request"]["any/untouched"] == [[1100, 0, 1100], [1150, 1100, 50]]
    assert report["rows"][0]["vs_untouched"] == 1.0
    assert report["recorded"] is None  # a conversation records no usage: a simulation


def test_the_requests_that_carry_a_new_summary_are_known_for_the_picture() -> None:
    messages = json.loads((CORPUS / "cc_kimi_516b7270.json").read_bytes())
    result = replay(Recording(messages), Settings(threshold=8000), PROFILES["anthropic-5m"])
    run = result.find(KEEPS, CHOSEN)
    assert run.new_summaries and len(run.new_summaries) <= run.summaries
    assert all(0 <= number < result.requests for number in run.new_summaries)
