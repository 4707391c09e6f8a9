"""`ctxpack serve` tells a cache-stable request from one that breaks the upstream's cache."""

from __future__ import annotations

import json
from typing import Any

import serve_bodies

from compactor_core.serve.compaction import Compactor
from compactor_core.serve.ledger import Ledger, chain
from compactor_core.serve.stats import billed
from compactor_core.serve.wire import MESSAGES, WIRES
from compactor_core.settings import Settings

HEADER = {"model": "m", "tools": [], "system": "s"}


def message(n: int) -> dict[str, Any]:
    return {"role": "user" if n % 2 else "assistant", "content": f"message {n}"}


def history(length: int) -> list[dict[str, Any]]:
    return [message(n) for n in range(length)]


def test_a_history_that_grows_is_cache_stable_when_forwarded_as_it_grows() -> None:
    ledger = Ledger()
    first = ledger.record(HEADER, history(3), history(3), now=0)
    assert not first.previous
    second = ledger.record(HEADER, history(5), history(5), now=1)
    assert (second.previous, second.stable, second.sent_prefix, second.forwarded_prefix) == (
        True,
        True,
        3,
        3,
    )


def test_a_forwarded_prefix_that_changed_breaks_the_cache_where_it_changed() -> None:
    ledger = Ledger()
    ledger.record(HEADER, history(4), history(4), now=0)
    changed = [*history(1), {"role": "user", "content": "[truncated: bash result, 9 chars]"}]
    reuse = ledger.record(HEADER, history(6), [*changed, *history(6)[2:]], now=1)
    assert (reuse.previous, reuse.stable, reuse.sent_prefix, reuse.forwarded_prefix) == (
        True,
        False,
        4,
        1,
    )


def test_a_retry_is_its_own_predecessor_and_another_header_is_another_conversation() -> None:
    ledger = Ledger()
    ledger.record(HEADER, history(4), history(4), now=0)
    assert ledger.record(HEADER, history(4), history(4), now=1).stable
    assert not ledger.record({**HEADER, "tools": ["x"]}, history(5), history(5), now=2).previous


def test_an_entry_older_than_the_cache_lifetime_reads_nothing() -> None:
    ledger = Ledger(ttl=300)
    ledger.record(HEADER, history(4), history(4), now=0)
    assert not ledger.record(HEADER, history(6), history(6), now=301).previous


def test_the_oldest_entries_go_when_the_budget_is_spent() -> None:
    per_entry = len(chain(HEADER, history(4)))
    ledger = Ledger(budget=per_entry * 2)
    for n in range(3):
        ledger.record(HEADER, [*history(3), message(100 + n)], history(4), now=n)
    assert not ledger.record(HEADER, [*history(3), message(100), message(7)], [], now=5).previous
    assert ledger.record(HEADER, [*history(3), message(102), message(7)], [], now=5).previous


def test_billed_tokens_read_the_cache_at_a_tenth_and_write_at_the_profile_price() -> None:
    assert billed(cached=800, total=1000, pricing="anthropic-5m") == 0.1 * 800 + 1.25 * 200
    assert billed(cached=0, total=1000, pricing="openai") == 1000


def test_each_request_of_a_growing_session_reports_what_its_cache_reads() -> None:
    compactor = Compactor(Settings(policy="every-turn"))
    wire = WIRES[MESSAGES]
    reports = []
    for turns in range(1, 6):
        body = serve_bodies.anthropic(turns=turns, pending_results=True)
        reports.append(compactor.compact(wire, json.dumps(body).encode()).report)
    assert not reports[0].reuse.previous
    assert all(report.reuse.previous for report in reports[1:])
    # every-turn micro (the seed's policy): the 4th-newest result turns into a marker each turn
    assert [report.reuse.stable for report in reports[1:]] == [True, True, False, False]
    for report in reports[1:]:
        assert 0 < report.cached_out <= report.tokens_out
        assert 0 < report.cached_in <= report.tokens_in


def test_a_string_content_and_the_same_text_as_one_block_are_one_prefix() -> None:
    ledger = Ledger()
    first = [{"role": "user", "content": "hello"}]
    again = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    again += [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "go on"}]
    ledger.record({}, first, first, now=0)
    reuse = ledger.record({}, again, again, now=1)
    assert reuse.previous and reuse.stable
