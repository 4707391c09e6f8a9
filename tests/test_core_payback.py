"""The payback rule of the cache-aware policy (issue 31): a batch of markers is made only when what
it frees, read on the requests taken to come (half as many as came since the last cut), outweighs
writing again, at Anthropic's prices, what follows its first marker."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from compactor_core.compaction.cache_apply import StableResult, compact_stably
from compactor_core.compaction.cache_plan import READ, WRITE, request_points
from compactor_core.compaction.estimate import message_units
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.settings import Settings

NO_CUT = 10**9  # a threshold no conversation here reaches


def build_session(outputs: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """A user's task, then one bash call a turn: (command number, characters of its output).
    A command number met again is the same command run again (its earlier output goes stale)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the build"}]
    for number, (command, chars) in enumerate(outputs):
        call_id = f"toolu_{number:03d}"
        call = {"type": "tool_use", "id": call_id, "name": "Bash"}
        call["input"] = {"command": f"make step{command}"}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": f"{number} " * chars}
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    return messages


def units(messages: list[dict[str, Any]]) -> int:
    return sum(message_units(message) for message in messages)


def requests(messages: list[dict[str, Any]], chosen: Settings) -> list[StableResult]:
    """What the policy sends at each request of the conversation, oldest first."""
    summarizer = ExtractiveSummarizer()
    return [
        compact_stably(messages[:point], chosen, summarizer) for point in request_points(messages)
    ]


outputs = st.lists(st.tuples(st.integers(0, 30), st.integers(100, 12_000)), min_size=4, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs, st.sampled_from([1000, 5000]), st.integers(0, 3))
@example([(0, 309), (0, 120), (0, 342), (0, 442), (0, 885), (0, 363)], 1000, 1)  # one command
def test_no_batch_frees_less_than_it_costs_on_the_requests_to_come(
    outputs: list[tuple[int, int]], min_gain: int, keep: int
) -> None:
    messages = build_session(outputs)
    # by age alone: the rule prices every marker as a truncation marker, and a superseded one
    # (stale results first) is a few characters longer, which this exact check would count
    chosen = Settings(threshold=NO_CUT, min_gain=min_gain, keep_recent=keep, stale=False)
    sent = requests(messages, chosen)
    points = request_points(messages)
    for number in range(1, len(sent)):
        before, now = sent[number - 1], sent[number]
        if now.plan.batches == before.plan.batches:
            continue
        unchanged = before.messages + messages[points[number - 1] : points[number]]
        first = next(
            at
            for at, (old, new) in enumerate(zip(unchanged, now.messages, strict=True))
            if old != new
        )
        freed = units(unchanged) - units(now.messages)
        rewritten = units(now.messages[first:])
        requests_to_come = (number + 1) / 2
        assert freed * READ * requests_to_come >= (WRITE - READ) * rewritten


def test_a_long_session_gets_its_batch_and_a_short_one_does_not() -> None:
    """Eight outputs of ~6k tokens: at the last request five of them could get their markers,
    freeing 30k tokens but writing 18k again, which 4.5 requests to come do not pay back (9
    would: the rule before issue 31's live bill); forty: they pay for themselves, and are made."""
    chosen = Settings(threshold=NO_CUT)
    short = requests(build_session([(n, 12_000) for n in range(8)]), chosen)
    long = requests(build_session([(n, 12_000) for n in range(40)]), chosen)
    assert short[-1].plan.batches == 0
    assert long[-1].plan.batches > 0
