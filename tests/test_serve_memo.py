"""What serve keeps of the histories it was sent (serve/memo.py, the ledger's links, the analysis
of stale results taken up where it stopped): a request gets the same bytes and the same figures
with them as without them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import conversations, text_blocks, texts

from compactor_core.compaction.cache_plan import Timing, plan
from compactor_core.compaction.estimate import HEURISTIC, estimate
from compactor_core.compaction.micro import Layout
from compactor_core.compaction.staleness import Analysis, analyse
from compactor_core.compaction.status import Status
from compactor_core.conversation.tools import tool_names
from compactor_core.providers.base import SummaryRequest
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.serve.compaction import Compactor
from compactor_core.serve.ledger import Links, chain
from compactor_core.serve.memo import KeptResults
from compactor_core.serve.summaries import KeptSummarizer, SummaryStore
from compactor_core.serve.wire import CHAT, MESSAGES, WIRES
from compactor_core.settings import Settings

CORPUS = Path(__file__).parent / "corpus"
HEADER = {"model": "m", "tools": [], "system": "s"}


@given(conversations(), st.one_of(st.none(), texts(), st.lists(text_blocks, max_size=2)))
def test_a_requests_estimate_is_the_sum_of_its_messages_counts(
    messages: list[dict[str, Any]], system: Any
) -> None:
    memo = KeptResults(None).for_request()
    assert memo.tokens(messages, system, HEURISTIC) == estimate(messages, system)
    again = KeptResults(None).for_request()  # counted by another request's memo, then this one
    again.tokens(messages, system, HEURISTIC)
    assert again.tokens(messages, system, HEURISTIC) == estimate(messages, system)


@given(conversations(), st.data())
def test_a_growing_conversations_estimate_is_taken_up_from_its_prefix(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    kept = KeptResults(None)
    lengths = data.draw(st.lists(st.integers(0, len(messages)), max_size=4))
    for history in [messages[:length] for length in lengths] + [messages]:
        assert kept.for_request().tokens(history, None, HEURISTIC) == estimate(history)


@given(conversations())
def test_the_ledgers_links_give_the_fingerprints_taken_anew(messages: list[dict[str, Any]]) -> None:
    links = Links()
    memo = KeptResults(None).for_request()
    expected = chain(HEADER, messages)
    assert chain(HEADER, messages, None, links, memo.text) == expected
    assert chain(HEADER, messages, None, links, memo.text) == expected  # now from the links


def test_the_links_stay_within_their_budget() -> None:
    links = Links(budget=100)
    digest = b"0" * 16
    for number in range(50):
        digest = links.after(digest, f'{{"content": "message {number}"}}'.encode())
    assert 0 < len(links._next) <= 4
    assert links._size <= 100


def growing(transcript: str) -> list[list[dict[str, Any]]]:
    """The histories an agent sends, one before each of its replies."""
    messages = json.loads((CORPUS / transcript).read_text())
    points = [index for index, message in enumerate(messages) if message["role"] == "assistant"]
    return [messages[:point] for point in points if point > 0] + [messages]


def body(messages: list[dict[str, Any]]) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 100, "messages": messages}).encode()


def kept() -> KeptSummarizer:
    return KeptSummarizer(ExtractiveSummarizer(), SummaryStore(None), "extractive")


@pytest.mark.parametrize(
    ("transcript", "route"),
    [("cc_kimi_516b7270.json", MESSAGES), ("oai_openhands_ponyc4593.json", CHAT)],
)
@pytest.mark.parametrize("threshold", [4000, 50_000])  # cuts, and markers in batches alone
def test_a_conversation_through_one_proxy_is_forwarded_as_by_a_new_one_each_time(
    transcript: str, route: str, threshold: int
) -> None:
    """One ``Compactor`` keeps what it computed from request to request; a new one for each
    request, its summarizer not kept, computes everything: both forward the same bytes and
    report the same figures (those of the ledger aside: a new one has not seen the
    conversation)."""
    settings = Settings(threshold=threshold, min_gain=500)
    proxy = Compactor(settings, kept())
    summaries, truncated = [], 0
    for messages in growing(transcript):
        data = body(messages)
        forwarded = proxy.compact(WIRES[route], data)
        fresh = Compactor(settings, ExtractiveSummarizer()).compact(WIRES[route], data)
        assert forwarded.body == fresh.body
        assert forwarded.report.tokens_in == fresh.report.tokens_in
        assert forwarded.report.tokens_out == fresh.report.tokens_out
        assert forwarded.report.truncated == fresh.report.truncated
        summaries.append(forwarded.report.summary)
        truncated = max(truncated, forwarded.report.truncated)
    if threshold < 50_000:
        assert Status.COMPACTED in summaries
        assert proxy.provider.reused > 0  # cuts found again: their compactions given again
    else:
        assert truncated > 0  # batches of markers


@given(conversations(max_turns=12), st.data())
def test_an_analysis_taken_up_from_a_copy_finds_what_one_reading_finds(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(messages)))
    first = Analysis()
    first.read(messages[:split])
    taken_up = first.copy()
    first.read(messages)  # the first goes on otherwise: the copy is on its own
    taken_up.read(messages[split:])
    assert taken_up.staleness() == analyse(messages)


@pytest.mark.parametrize("transcript", ["cc_kimi_516b7270.json", "oai_openhands_ponyc4593.json"])
def test_the_stale_results_of_a_growing_conversation_are_found_as_by_one_reading(
    transcript: str,
) -> None:
    kept, settings = KeptResults(None), Settings()
    histories = growing(transcript)
    for messages in [*histories, histories[-1], histories[0]]:  # sent again, and the first
        assert kept.for_request().staleness(messages, settings) == analyse(messages)
    assert analyse(histories[-1]).superseded  # there were some to find


@given(conversations(max_turns=12), st.data())
def test_a_layout_read_on_from_a_prefix_is_the_layout_of_the_whole(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(messages)))
    whole, read_on = Layout.of(messages), Layout.of(messages[:split]).then(messages)
    assert read_on == whole and read_on.names.renamed == whole.names.renamed


@given(conversations(max_turns=14), st.data())
def test_a_walk_taken_up_where_an_earlier_request_left_it_plans_as_one_walked_from_the_start(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    """The requests of a conversation, some of them sent again, and an edit at some message
    (a kept walk of a prefix that is no longer one is not taken up)."""
    settings = Settings(
        threshold=data.draw(st.integers(20, 400)),
        min_gain=data.draw(st.integers(0, 60)),
        keep_recent=data.draw(st.integers(0, 3)),
    )
    past_cuts = data.draw(st.booleans())
    gap = data.draw(st.sampled_from([0.0, 200.0, 400.0]))  # 400: the cache goes cold
    edited = [*messages]
    if messages:
        where = data.draw(st.integers(0, len(messages) - 1))
        edited[where] = {**messages[where], "content": "edited"}
    lengths = data.draw(st.lists(st.integers(1, max(len(messages), 1)), max_size=5))
    kept = KeptResults(None)
    for history in [messages[:length] for length in sorted(lengths)] + [edited, messages]:
        timing = Timing([index * gap for index in range(len(history))])
        taken_up = plan(
            history, settings, timing, 7, past_cuts, payback=True, memo=kept.for_request()
        )
        assert taken_up == plan(history, settings, timing, 7, past_cuts, payback=True)


def test_a_call_id_named_again_with_another_tool_is_told() -> None:
    def calls(*named: tuple[str, str]) -> list[dict[str, Any]]:
        uses = [{"type": "tool_use", "id": call, "name": name, "input": {}} for call, name in named]
        return [{"role": "assistant", "content": uses}]

    assert not tool_names(calls(("a", "Bash"), ("b", "Read"))).renamed
    assert not tool_names(calls(("a", "Bash"), ("a", "Bash"))).renamed  # a history holding it twice
    renamed = tool_names(calls(("a", "Bash"), ("a", "Read")))
    assert renamed.renamed and renamed["a"] == "Read"  # the last one wins, as before


def listings(
    count: int, first: int = 0, tool: str = "Bash", same: bool = True, lines: int = 2000
) -> list[dict[str, Any]]:
    """``count`` turns that list the same folder again (or another each time), each result
    long."""
    messages: list[dict[str, Any]] = []
    for number in range(first, first + count):
        call = f"toolu_{number:02d}"
        command = "ls" if same else f"ls folder{number}"
        use = {"type": "tool_use", "id": call, "name": tool, "input": {"command": command}}
        result = {"type": "tool_result", "tool_use_id": call, "content": "file\n" * lines}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return messages


def test_a_walk_taken_up_takes_each_stale_result_once() -> None:
    """The same command run again and again: each result goes stale among the newest turns and
    waits for the next batch; a walk taken up must not take one that went stale before again."""
    messages = [{"role": "user", "content": "list it"}, *listings(20)]
    settings = Settings(threshold=1_000_000, min_gain=3000, keep_recent=4)
    kept = KeptResults(None)
    plans = []
    for length in range(2, len(messages) + 1):
        history = messages[:length]
        plans.append(plan(history, settings, payback=True, memo=kept.for_request()))
        assert plans[-1] == plan(history, settings, payback=True)
    assert any(taken.single for taken in plans)  # stale results rode with a batch


class MarkerQuoting:
    """A deterministic summarizer whose summary names the tools of the markers it was given,
    and those the summary before it named."""

    name = "quoting"
    deterministic = True

    def summarize(self, request: SummaryRequest) -> str:
        named = re.findall(r"\[truncated: (\w+) result", request.user)
        named += re.findall(r"Tools: ([\w ]*)", request.user)
        return "Tools: " + " ".join(sorted(set(" ".join(named).split())))


def test_a_call_id_named_again_later_makes_the_head_anew() -> None:
    """A later message that gives an earlier call id another tool changes the markers of the
    history a cut summarized: the proxy's kept head is not given for it."""
    settings = Settings(threshold=2000, min_gain=0)
    history = [{"role": "user", "content": "list them"}, *listings(30, same=False, lines=400)]
    renamed = [*history, *listings(1, tool="Read", same=False, lines=400)]
    proxy = Compactor(settings, KeptSummarizer(MarkerQuoting(), SummaryStore(None), "quoting"))
    for messages in [history, renamed]:
        data = body([*messages, {"role": "user", "content": "go on"}])
        forwarded = proxy.compact(WIRES[MESSAGES], data)
        fresh = Compactor(settings, MarkerQuoting()).compact(WIRES[MESSAGES], data)
        assert forwarded.report.summary == Status.COMPACTED
        assert forwarded.body == fresh.body
    assert b"Read" in forwarded.body  # the summary shows the marker of the renamed call
