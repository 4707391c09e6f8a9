"""``ctxpack report`` in the core: each agent's recorded usage, the causes of cache writes, the
prices, and the bills added up (issue 33)."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from helpers import CORPUS, TESTS

from compactor_core.errors import ConfigError
from compactor_core.report.bill import SessionBill
from compactor_core.report.causes import (
    CTXPACK,
    EXPIRED,
    FIRST,
    FLOOR,
    MODEL_SWITCH,
    UNEXPLAINED,
    attribute,
)
from compactor_core.report.collect import SessionPlace, bills_of
from compactor_core.report.groups import add_up
from compactor_core.report.ledger import Ledger
from compactor_core.report.prices import bundled, parse
from compactor_core.session_files.base import COMPACTED, PROMPT_CHANGED, RecordedCall
from compactor_core.settings import Settings

CLAUDE = CORPUS / "originals" / "cc_entire_1284c080__full.jsonl"
KIMI = CORPUS / "originals" / "cc_kimi_516b7270__full.jsonl"
MORE = TESTS / "fixtures" / "more_agents"


def call(time: float, read: int, written: int, plain: int = 10, **more) -> RecordedCall:
    return RecordedCall(0, time, plain, read, cache_write_5m=written, **more)


# --- why the cache was written -------------------------------------------------------------------


def test_a_conversation_that_only_grows_writes_new_turns_and_misses_nothing() -> None:
    calls = [call(0, 0, 5000), call(10, 5000, 800), call(20, 5800, 900)]
    first, *rest = attribute(calls)
    assert (first.cause, first.missed) == (FIRST, 5000)
    assert [(a.cause, a.new, a.missed) for a in rest] == [(None, 800, 0), (None, 900, 0)]


@pytest.mark.parametrize(
    ("gap", "hourly", "cause"),
    [
        (299, False, UNEXPLAINED),
        (301, False, EXPIRED),
        (301, True, UNEXPLAINED),
        (3601, True, EXPIRED),
    ],
)
def test_the_cache_expires_after_its_lifetime_five_minutes_or_an_hour(
    gap: float, hourly: bool, cause: str
) -> None:
    written = {"cache_write_1h": 5000} if hourly else {}
    first = RecordedCall(0, 0.0, 10, 0, cache_write_5m=0 if hourly else 5000, **written)
    again = call(gap, 2000, 3000)  # read less than before: 3000 sent again
    assert attribute([first, again])[1].cause == cause
    assert attribute([first, again])[1].missed == 3000


def test_a_change_the_agent_records_explains_the_miss_before_anything_else() -> None:
    calls = [call(0, 0, 5000), call(10, 0, 3000, change=COMPACTED, model="other")]
    assert attribute(calls)[1].cause == COMPACTED


def test_a_ctxpack_rewrite_between_two_requests_explains_a_miss() -> None:
    calls = [call(0, 0, 5000), call(100, 1000, 4000)]
    assert attribute(calls, rewrites=[50.0])[1].cause == CTXPACK
    assert attribute(calls, rewrites=[150.0])[1].cause == UNEXPLAINED


def test_another_model_has_its_own_cache() -> None:
    calls = [call(0, 0, 5000, model="a"), call(10, 1000, 4000, model="b")]
    assert attribute(calls)[1].cause == MODEL_SWITCH


def test_reading_nothing_while_the_cache_was_alive_means_the_prompt_s_start_changed() -> None:
    assert attribute([call(0, 2000, 3000), call(10, 0, 5000)])[1].cause == PROMPT_CHANGED


def test_a_small_miss_is_noise_counted_as_new_turns() -> None:
    second = attribute([call(0, 0, 5000), call(10, 5000 - FLOOR, FLOOR)])[1]
    assert (second.cause, second.new, second.missed) == (None, FLOOR, 0)


def test_a_subagent_is_a_chain_of_its_own() -> None:
    calls = [call(0, 0, 5000), call(5, 0, 2000, side=True), call(10, 5000, 500)]
    causes = [a.cause for a in attribute(calls)]
    assert causes == [FIRST, FIRST, None]


def test_without_cache_writes_what_was_not_read_is_what_was_paid_for_again() -> None:
    calls = [call(0, 0, 0, plain=5000), call(10, 0, 0, plain=5200)]  # OpenAI: nothing cached
    second = attribute(calls, writes_counted=False)[1]
    assert (second.new, second.missed) == (200, 5000)


# --- what each agent records ---------------------------------------------------------------------


def bill(path: Path) -> SessionBill:
    (found,) = bills_of(SessionPlace(path, None), [], Settings(), counterfactual=False)
    return found


def totals(found: SessionBill) -> tuple[int, ...]:
    kinds = ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output")
    return (len(found.requests), *(sum(getattr(r, kind) for r in found.requests) for kind in kinds))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # requests, plain input, cache reads, 5-minute writes, 1-hour writes, output: the sums
        # of what each agent recorded (Claude Code: once per message.id), summed by hand
        (CLAUDE, (258, 340, 25184049, 0, 973296, 4609)),
        (KIMI, (42, 48, 1687293, 108173, 0, 4046)),
        (MORE / "gemini-cli.jsonl", (7, 7000, 0, 0, 0, 611)),
        (MORE / "qwen-code.jsonl", (7, 7000, 0, 0, 0, 831)),
        (MORE / "pi.jsonl", (7, 7000, 0, 0, 0, 786)),
        (MORE / "copilot-cli.jsonl", (7, 7000, 0, 0, 0, 871)),
        (MORE / "cline.messages.json", (6, 6000, 0, 0, 0, 848)),
    ],
)
def test_the_report_s_totals_are_the_recorded_sums_to_the_token(path: Path, expected) -> None:
    assert totals(bill(path)) == expected


def test_the_causes_cover_nearly_every_written_token_of_the_real_claude_code_sessions() -> None:
    written = unexplained = 0
    for path in (CLAUDE, KIMI):
        for request in bill(path).requests:
            written += request.cache_write_5m + request.cache_write_1h
            unexplained += request.missed if request.cause == UNEXPLAINED else 0
    assert written == 973296 + 108173
    assert unexplained / written < 0.05


def test_claude_code_s_own_compactions_skills_and_expiry_are_named() -> None:
    causes = {request.cause for request in bill(CLAUDE).requests}
    assert {FIRST, EXPIRED, COMPACTED, PROMPT_CHANGED} <= causes


# --- prices --------------------------------------------------------------------------------------


def test_a_price_applies_to_its_own_version_only() -> None:
    table = bundled()
    assert table.of("claude-opus-4-6").input == 5.0
    assert table.of("claude-opus-4-20250514").input == 15.0
    assert table.of("claude-opus-4-9") is None  # a version the table does not know
    assert table.of("gpt-5-codex").input == 1.25
    assert table.of("gpt-5.9") is None
    assert table.of(None) is None


def test_a_user_s_price_file_overrides_and_extends_the_bundled_one() -> None:
    mine = (
        '{"as_of": "2027-01-01", "models": [{"model": "fake-model", "input": 1, '
        '"cache_read": 0.1, "cache_write_5m": 1.25, "cache_write_1h": 2, "output": 5}]}'
    )
    table = parse(mine, "mine.json", bundled())
    assert table.of("fake-model").output == 5
    assert table.of("claude-opus-4-6").input == 5.0


@pytest.mark.parametrize("text", ["[]", "{}", '{"models": [{"model": "x"}]}', "not json"])
def test_a_bad_price_file_is_a_configuration_error(text: str) -> None:
    with pytest.raises(ConfigError, match=r"bad\.json: not a price table"):
        parse(text, "bad.json")


# --- adding up -----------------------------------------------------------------------------------


def test_the_money_adds_up_per_model_and_unknown_models_are_named_not_priced() -> None:
    found = [bill(CLAUDE), bill(MORE / "pi.jsonl")]
    total, groups = add_up(found, "agent", bundled(), UTC)
    claude = next(group for group in groups if group.key == "claude")
    # opus-4-6: $5 input, $0.50 reads, $10 1-hour writes, $25 output, per million tokens
    expected = (340 * 5 + 25184049 * 0.5 + 973296 * 10 + 4609 * 25) / 1e6
    assert claude.cost == pytest.approx(expected)
    assert total.cost == pytest.approx(expected)  # pi's fake-model has no price
    assert total.unknown_models == {"fake-model"}
    assert total.requests == 258 + 7


def test_without_a_counterfactual_the_cost_with_ctxpack_is_the_cost() -> None:
    total, _ = add_up([bill(KIMI)], "day", bundled(), UTC)
    assert total.with_ctxpack == pytest.approx(total.cost)


def test_the_ledger_keeps_a_file_s_bills_until_it_changes(tmp_path: Path) -> None:
    found = bill(KIMI)
    with Ledger(tmp_path / "state") as ledger:
        ledger.put("f", 10, 1, [found])
        assert ledger.get("f", 10, 1) == [found]
        assert ledger.get("f", 11, 1) is None  # appended to
        assert ledger.get("f", 10, 2) is None  # touched
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
