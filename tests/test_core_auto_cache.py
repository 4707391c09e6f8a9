"""auto's default policy is the cache-aware one (issue 20); every-turn and --compat bareagent keep
the seed's behaviour; micro keeps SPEC §2 unless --min-gain asks for batches."""

from __future__ import annotations

import copy
from datetime import datetime
from pathlib import Path
from typing import Any

from test_core_cache_policy import session

from compactor_core import Settings, compact
from compactor_core.compaction.cache_apply import micro_in_batches
from compactor_core.compaction.cache_plan import plan, request_points
from compactor_core.compaction.micro import micro_compact
from compactor_core.compaction.pipeline import run
from compactor_core.compaction.status import Status
from compactor_core.conversation.formats import Conversation
from compactor_core.settings import RunSettings
from compactor_core.snapshots.local_store import SnapshotStore


def test_auto_marks_in_batches_that_pay_for_themselves_where_every_turn_marks_every_call() -> None:
    messages = session(6)  # three old turns of about 990 tokens each
    every_turn = compact(messages, "auto", Settings(policy="every-turn"))
    assert every_turn == micro_compact(messages, Settings())[0]  # turns 0, 1, 2
    # turns 0, 1 and 2 would free ~2,970 tokens, read on half as many requests as came (3.5:
    # ~1,040 at 0.1x), and have the ~3,000 after them written again (1.15x: ~3,500): not worth it
    assert compact(messages, "auto", Settings(min_gain=1500)) == messages
    assert compact(session(9), "auto", Settings(min_gain=1500)) == session(9)  # 6 x 990 x 0.1 x 5
    longer = session(10)  # seven old turns free ~6,930, read on 5.5 requests: worth it now
    batched = compact(longer, "auto", Settings(min_gain=1500))
    assert batched == micro_compact(longer, Settings())[0]
    assert compact(messages, "auto", Settings()) == messages  # 5000 tokens: nothing yet


def test_a_batch_that_frees_more_than_it_costs_is_marked() -> None:
    messages = session(6)
    huge = messages[2]["content"][0]  # turn 0's result, now 200,000 characters (~50k tokens)
    messages[2] = {**messages[2], "content": [{**huge, "content": "x" * 200_000}]}
    batched = compact(messages, "auto", Settings(min_gain=1500, threshold=10**7))
    assert batched == micro_compact(messages, Settings(keep_recent=5))[0]  # turn 0 alone


def test_the_bareagent_profile_ignores_the_policy() -> None:
    messages = session(6)
    reference = compact(messages, "auto", Settings(compat=True, policy="every-turn"))
    assert compact(messages, "auto", Settings(compat=True)) == reference
    assert compact(messages, "micro", Settings(compat=True, min_gain=10**6)) == reference


def test_micro_keeps_spec_section_2_unless_min_gain_is_given() -> None:
    messages = session(6)
    assert compact(messages, "micro", Settings()) == micro_compact(messages, Settings())[0]
    batched = compact(messages, "micro", Settings(min_gain=1500))
    assert batched == micro_in_batches(messages, Settings(min_gain=1500))[0]
    assert batched == micro_compact(messages, Settings(keep_recent=4))[0]


def test_snapshots_only_when_this_request_is_cut(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, clock=lambda: datetime(2026, 1, 2, 3, 4, 5))
    settings = Settings(threshold=6000, min_gain=10**6)
    messages = session(8)

    def auto(history: list[dict[str, Any]]) -> Any:
        told = RunSettings("auto", settings, snapshots=store, session_id="s")
        return run(told, Conversation(copy.deepcopy(history)), original=b"[]")

    cut_now = next(p for p in request_points(messages) if plan(messages[:p], settings).cuts_now)
    first = auto(messages[:cut_now])
    assert first.full == Status.COMPACTED and len(first.snapshots) == 2  # original, result
    again = auto(messages[:cut_now])  # the same request again: cut again, kept again
    assert len(again.snapshots) == 2
    assert again.conversation.messages == first.conversation.messages
    proxied = auto(messages[: cut_now + 2])  # the raw history re-sent: the cut found again
    assert proxied.full == Status.COMPACTED and proxied.snapshots == ()
    assert proxied.conversation.messages[:3] == first.conversation.messages[:3]


def test_a_dry_run_counts_the_summary_at_its_budget() -> None:
    messages = session(8)
    settings = Settings(threshold=6000, min_gain=10**6)
    would = run(RunSettings("auto", settings, dry_run=True), Conversation(messages))
    done = run(RunSettings("auto", settings, measure=True), Conversation(messages))
    assert would.full == Status.WOULD_RUN and done.full == Status.COMPACTED
    assert would.tokens_before == done.tokens_before
    assert would.tokens_after >= done.tokens_after


def test_messages_that_carry_their_time_show_auto_a_cold_cache() -> None:
    messages = session(4)  # one old turn of about 990 tokens: no batch of 5000 yet
    timed = [
        {**message, "timestamp": 1_700_000_000 + index} for index, message in enumerate(messages)
    ]
    assert compact(timed, "auto") == timed
    timed[-1]["timestamp"] = "2023-11-14T22:30:00Z"  # the last result came 17 minutes later
    caught_up = compact(timed, "auto")
    assert caught_up == micro_compact(timed, Settings())[0]  # clearing is free: done now
