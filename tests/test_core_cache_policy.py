"""The cache-aware policy (issue 20): batches of markers, catch-up on a cold cache, cuts that stay
put; prefix-stable, idempotent and pair-safe on generated conversations."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import conversations

from compactor_core.compaction.cache_apply import StableResult, compact_stably
from compactor_core.compaction.cache_plan import Timing, plan, request_points
from compactor_core.compaction.micro import is_marker, micro_compact
from compactor_core.compaction.status import Status
from compactor_core.conversation.tools import tool_result_turns
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.settings import Settings

EXTRACTIVE = ExtractiveSummarizer()
NO_CUT = 10**9  # a threshold no generated conversation reaches


def tool_turn(number: int, chars: int, text: str = "x") -> list[dict[str, Any]]:
    """An assistant's bash call and its result of ``chars`` characters (chars/4 tokens)."""
    call_id = f"toolu_{number:03d}"
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": "bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text * chars}],
        },
    ]


def session(turns: int, chars: int = 4000) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the build"}]
    for number in range(turns):
        messages += tool_turn(number, chars)
    return messages


def marked_turns(messages: list[dict[str, Any]]) -> list[int]:
    """Positions of the tool-result turns whose results are markers."""
    return [
        position
        for position, turn in enumerate(tool_result_turns(messages))
        if all(is_marker(block["content"]) for block in messages[turn[0]]["content"])
    ]


def stable(messages: list[dict[str, Any]], chosen: Settings, timing: Timing | None = None):
    return compact_stably(messages, chosen, EXTRACTIVE, timing)


# --- batches --------------------------------------------------------------------------------------


def test_markers_wait_until_a_batch_frees_min_gain() -> None:
    chosen = Settings(threshold=NO_CUT, min_gain=1500)  # each result frees about 990 tokens
    assert plan(session(4), chosen).marked == frozenset()  # one old turn: 990 < 1500
    assert plan(session(5), chosen).marked == {0, 1}  # two: the batch is made, both at once
    assert plan(session(6), chosen).marked == {0, 1}  # the next batch waits for its second turn
    assert plan(session(7), chosen).marked == {0, 1, 2, 3}


def test_min_gain_zero_is_micro_compaction_of_spec_section_2() -> None:
    messages = session(6)
    chosen = Settings(threshold=NO_CUT, min_gain=0)
    assert stable(messages, chosen).messages == micro_compact(messages, chosen)[0]


def test_a_cold_cache_marks_what_waits() -> None:
    messages = session(4)  # one old turn, not yet a batch
    chosen = Settings(threshold=NO_CUT, min_gain=1500)
    times = [float(index) for index in range(len(messages))]
    warm = Timing(times, now=times[-1] + 200, ttl=300)
    cold = Timing(times, now=times[-1] + 301, ttl=300)
    assert plan(messages, chosen, warm).marked == frozenset()
    result = plan(messages, chosen, cold)
    assert result.marked == {0}
    assert result.catch_ups == 1


def test_a_gap_in_the_past_was_a_catch_up_then() -> None:
    """The raw history shows where the cache went cold: the decision is found again."""
    messages = session(5)
    chosen = Settings(threshold=NO_CUT, min_gain=10_000)
    times = [float(index) for index in range(len(messages))]
    gap_at = request_points(messages)[-2]  # the request before the last call: turn 0 waits
    times = [time + (1000 if index >= gap_at - 1 else 0) for index, time in enumerate(times)]
    assert plan(messages, chosen, Timing(times, ttl=300)).marked == {0}
    assert plan(messages, chosen).marked == frozenset()  # without the times: no catch-up


# --- cuts -----------------------------------------------------------------------------------------


def test_the_head_stays_byte_identical_until_the_next_cut() -> None:
    chosen = Settings(threshold=6000, min_gain=10**6)  # no markers: the cuts do the work
    messages = session(12)
    heads = []
    for point in request_points(messages):
        result = stable(messages[:point], chosen)
        cuts = len(result.plan.cuts)
        head = result.messages[: len(result.messages) - len(result.plan.live)]
        heads.append((cuts, head, result.messages))
        assert result.plan.tokens <= chosen.threshold or not result.plan.cuts
    assert max(cuts for cuts, _, _ in heads) >= 2
    for (cuts, head, _), (next_cuts, next_head, sent) in itertools.pairwise(heads):
        if cuts == next_cuts:
            assert next_head == head
            assert sent[: len(head)] == head


def test_no_request_over_the_threshold_plus_the_kept_tail() -> None:
    chosen = Settings(threshold=3000, min_gain=2000)
    messages = session(10)
    for point in request_points(messages):
        result = stable(messages[:point], chosen)
        tail = sum(len(str(messages[index])) for index in result.plan.live) // 4
        assert result.plan.tokens <= chosen.threshold + tail + chosen.max_tokens


def test_without_past_cuts_only_the_current_request_is_cut() -> None:
    chosen = Settings(threshold=5000, min_gain=10**6)
    messages = session(10)
    assert len(plan(messages, chosen).cuts) > 1
    once = plan(messages, chosen, past_cuts=False)
    assert len(once.cuts) == 1
    assert once.cuts_now


def test_system_messages_come_first_in_their_order() -> None:
    messages = [
        {"role": "system", "content": "rules one"},
        {"role": "system", "content": "rules two"},
        *session(10),
    ]
    result = stable(messages, Settings(threshold=5000, min_gain=10**6))
    assert result.full == Status.COMPACTED
    assert result.messages[:2] == messages[:2]


# --- properties -----------------------------------------------------------------------------------

# Small thresholds, summary budgets and gains, so that generated conversations see batches, cuts
# and summaries (the extractive summarizer's, which may also fail its guard: a cut not made).
policy_settings = st.builds(
    lambda threshold, budget, gain, keep: Settings(
        threshold=threshold, max_tokens=budget, min_gain=gain, keep_recent=keep
    ),
    st.sampled_from([NO_CUT, 150, 400, 1000]),
    st.sampled_from([60, 200]),
    st.sampled_from([0, 0, 10, 40]),
    st.integers(1, 2),
)
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(conversations(min_turns=4, max_turns=16), policy_settings)
def test_decisions_are_kept_as_the_conversation_grows(messages: list, chosen: Settings) -> None:
    """Prefix-stable: what one request marks, the next marks too, and the next request begins
    with this one unless a batch or a cut happened in between. A request is a history that an
    assistant message answers (and the whole conversation): a history never answered, followed
    by more of the user's messages, was no request the walk can know of."""
    previous = None
    for length in request_points(messages):
        result = stable(messages[:length], chosen)
        if previous is not None:
            grew = previous.plan.batches < result.plan.batches
            cut = made_cuts(previous) < made_cuts(result)
            if not cut:
                assert sent_marked(previous) <= sent_marked(result)
            if not (grew or cut):
                assert result.messages[: len(previous.messages)] == previous.messages
        previous = result


@PROPERTY
@given(conversations(min_turns=4, max_turns=16), st.integers(-1, 3))
def test_min_gain_zero_marks_what_micro_marks(messages: list, keep: int) -> None:
    """``micro`` as an explicit command keeps SPEC §2 exactly: its --min-gain defaults to 0.
    By age alone: with stale results first, a marker reads as it did when it was made (next
    test), where ``micro`` on the whole conversation names what superseded it."""
    chosen = Settings(threshold=NO_CUT, min_gain=0, keep_recent=keep, stale=False)
    assert stable(messages, chosen).messages == micro_compact(messages, chosen)[0]


def test_a_marker_made_before_its_result_went_stale_keeps_its_words() -> None:
    """The policy marks a result at the request after it (min_gain 0, nothing kept), before the
    same command ran again: the prompt's prefix stays as it was sent, cached. ``micro`` of the
    whole conversation, made at once, names the later run (found by hypothesis, as the
    difference between the two)."""
    output = "1\n2\n3\n4\n5\n6\n7\n8\n9\n" * 20  # 360 characters
    messages: list[dict[str, Any]] = [{"role": "user", "content": "count"}]
    for number in (1, 2):
        call = {"type": "tool_use", "id": f"toolu_{number}", "name": "bash"}
        call["input"] = {"command": "seq 9"}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{number}", "content": output}
        messages.append({"role": "assistant", "content": [call]})
        messages.append({"role": "user", "content": [result]})
    chosen = Settings(threshold=NO_CUT, min_gain=0, keep_recent=0)
    first = stable(messages, chosen).messages[2]["content"][0]["content"]
    assert first == "[truncated: bash result, 360 chars]"
    once = micro_compact(messages, chosen)[0][2]["content"][0]["content"]
    assert once == "[superseded: bash seq 9, run again 1 turn later]"


@PROPERTY
@given(conversations(min_turns=4, max_turns=16), policy_settings)
def test_the_policy_is_idempotent(messages: list, chosen: Settings) -> None:
    once = stable(messages, chosen).messages
    assert stable(once, chosen).messages == once


@PROPERTY
@given(conversations(min_turns=4, max_turns=16), policy_settings)
def test_no_tool_result_loses_its_call(messages: list, chosen: Settings) -> None:
    assert results_without_calls(messages) == []
    assert results_without_calls(stable(messages, chosen).messages) == []


@PROPERTY
@given(conversations(min_turns=4, max_turns=16), policy_settings)
def test_only_tool_results_change_without_a_cut(messages: list, chosen: Settings) -> None:
    result = stable(messages, replace(chosen, threshold=NO_CUT)).messages
    assert [without_results(message) for message in result] == [
        without_results(message) for message in messages
    ]


def sent_marked(result: StableResult) -> frozenset[int]:
    """The turns the request sends as markers: a failed summary of the current request sends
    the history as it was before that cut, with the markers made before it."""
    return result.plan.cuts[-1].marked if result.full == Status.FAILED else result.plan.marked


def made_cuts(result: StableResult) -> int:
    """The cuts the request holds: a summary of the current request may have failed."""
    return len(result.plan.cuts) - (result.full == Status.FAILED)


def results_without_calls(messages: list[dict[str, Any]]) -> list[str]:
    made: set[str] = set()
    missing = []
    for message in messages:
        ids = [call.get("id") for call in message.get("tool_calls") or ()]
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        ids += [block.get("id") for block in blocks if block.get("type") == "tool_use"]
        made.update(ids)
        answered = [
            block.get("tool_use_id") for block in blocks if block.get("type") == "tool_result"
        ]
        if message.get("role") == "tool":
            answered.append(message.get("tool_call_id"))
        missing += [call_id for call_id in answered if call_id not in made]
    return missing


def without_results(message: dict[str, Any]) -> dict[str, Any]:
    """The message with every tool result's content left out."""
    if message.get("role") == "tool":
        return {key: value for key, value in message.items() if key != "content"}
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {
        **message,
        "content": [
            {key: value for key, value in block.items() if key != "content"}
            if isinstance(block, dict) and block.get("type") == "tool_result"
            else block
            for block in content
        ],
    }
