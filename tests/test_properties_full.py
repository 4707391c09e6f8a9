"""Properties of full compaction over generated conversations in both wire styles (SPEC §3).

For any conversation (tool-call pairs, parallel calls, system messages anywhere including at the
end, CJK text), with the extractive summarizer or a fixed-text one:
- no output holds a tool result without its call in an earlier message;
- every system message survives, deep-equal, in order, at the front;
- the pending turn comes back last and unchanged;
- on any provider failure the output is the input, untouched.
"""

from __future__ import annotations

import copy
from typing import Any

from checks_full import pair_violations
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import STYLES
from strategies_full import expected_pending, full_conversations
from support_full import FAILING_PROVIDERS, PREFIX, SEED_ACK, RecordingProvider

from compactor_core.compaction.estimate import quarters_to_tokens, text_quarters
from compactor_core.compaction.full import full_compact, summarizable
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.settings import Settings

Message = dict[str, Any]
PROPERTIES = settings(max_examples=150, deadline=None)

keep_recent = st.sampled_from([0, 1, 3])


def systems(messages: list[Message]) -> list[Message]:
    return [message for message in messages if message.get("role") == "system"]


def has_source(messages: list[Message], pending: list[int]) -> bool:
    return any(m.get("role") != "system" for i, m in enumerate(messages) if i not in pending)


def check_compacted(messages: list[Message], result: list[Message], summary: str) -> None:
    """The rebuilt layout, and what must survive, for a successful full compaction."""
    pending, acknowledge = expected_pending(messages)
    kept = systems(messages)
    tail = [messages[index] for index in pending]
    middle = [{"role": "user", "content": PREFIX + summary}]
    if acknowledge:
        middle.append({"role": "assistant", "content": SEED_ACK})
    assert result == [*kept, *middle, *tail]
    for copied, original in zip(result, kept, strict=False):
        assert copied is not original  # deep copies
    assert pair_violations(result) == []


@PROPERTIES
@given(data=st.data())
def test_fixed_text_provider(data: st.DataObject) -> None:
    messages = data.draw(st.sampled_from(STYLES).flatmap(full_conversations))
    micro = Settings(lang="zh", keep_recent=data.draw(keep_recent))
    before = copy.deepcopy(messages)
    provider = RecordingProvider("摘要 ok")
    result = full_compact(messages, provider, micro)
    assert messages == before
    pending, _ = expected_pending(messages)
    if not has_source(messages, pending):
        assert result.status == "nothing" and result.messages is messages
        assert provider.requests == []
        return
    if result.status == "failed":  # only a tiny history that "摘要 ok" does not shrink
        assert "not smaller" in str(result.error) and result.messages is messages
        return
    assert result.status == "compacted"
    check_compacted(messages, result.messages, "摘要 ok")
    sent = provider.copies[0]
    assert all(m.get("role") != "system" for m in sent)
    assert len(sent) == sum(
        1 for i, m in enumerate(messages) if i not in pending and m.get("role") != "system"
    )


@PROPERTIES
@given(data=st.data())
def test_the_pending_turn_found_first_is_the_one_full_compaction_finds(
    data: st.DataObject,
) -> None:
    """The pipeline tells a no-op first (``summarizable``) and hands the turn it found on."""
    messages = data.draw(st.sampled_from(STYLES).flatmap(full_conversations))
    chosen = Settings(lang="zh", keep_recent=data.draw(keep_recent))
    expected, acknowledge = expected_pending(messages)
    pending = summarizable(messages)
    if not has_source(messages, expected):
        assert pending is None
        return
    assert pending is not None
    assert (list(pending.indexes), pending.acknowledge) == (expected, acknowledge)
    handed = full_compact(messages, RecordingProvider("摘要 ok"), chosen, pending=pending)
    found = full_compact(messages, RecordingProvider("摘要 ok"), chosen)
    assert (handed.status, handed.messages, handed.pending) == (
        found.status,
        found.messages,
        found.pending,
    )


@PROPERTIES
@given(data=st.data())
def test_extractive_provider(data: st.DataObject) -> None:
    messages = data.draw(st.sampled_from(STYLES).flatmap(full_conversations))
    max_tokens = data.draw(st.sampled_from([50, 300, 2000]))
    before = copy.deepcopy(messages)
    settings = Settings(lang="zh", max_tokens=max_tokens, keep_recent=data.draw(keep_recent))
    result = full_compact(messages, ExtractiveSummarizer(), settings)
    assert messages == before
    if result.status == "compacted":
        summary = result.summary or ""
        assert summary.strip()
        assert quarters_to_tokens(text_quarters([summary])) <= max_tokens
        check_compacted(messages, result.messages, summary)
    else:
        assert result.messages is messages
        # the guards: nothing worth summarizing (say, empty messages), or no gain
        guard = "not smaller" in str(result.error) or "empty" in str(result.error)
        assert result.status == "nothing" or guard


@PROPERTIES
@given(messages=full_conversations(), kind=st.sampled_from(sorted(FAILING_PROVIDERS)))
def test_any_failure_gives_the_input_back(messages: list[Message], kind: str) -> None:
    before = copy.deepcopy(messages)
    result = full_compact(messages, FAILING_PROVIDERS[kind]())
    assert result.messages is messages
    assert messages == before
    assert result.status in ("failed", "nothing")


@PROPERTIES
@given(messages=full_conversations(), lang=st.sampled_from(["zh", "en"]))
def test_a_second_compaction_keeps_the_layout(messages: list[Message], lang: str) -> None:
    provider = RecordingProvider("summary one, 第一")
    first = full_compact(messages, provider, Settings(lang=lang))
    second = full_compact(first.messages, RecordingProvider("two"), Settings(lang=lang))
    assert pair_violations(second.messages) == []
    assert systems(second.messages) == systems(messages)
    pending, _ = expected_pending(messages)
    if pending:
        talk = [m for m in second.messages if m.get("role") != "system"]
        assert talk[-len(pending) :] == [messages[i] for i in pending]


@PROPERTIES
@given(messages=full_conversations())
def test_bareagent_keeps_systems_and_the_last_user_message(messages: list[Message]) -> None:
    before = copy.deepcopy(messages)
    result = full_compact(messages, RecordingProvider(""), Settings(compat=True))
    assert messages == before
    if result.status == "nothing":
        return
    assert result.status == "compacted"  # no guards: even an empty summary
    kept = systems(messages)
    assert result.messages[: len(kept)] == kept
    assert result.messages[len(kept)] == {"role": "user", "content": PREFIX}
    assert result.messages[len(kept) + 1] == {"role": "assistant", "content": SEED_ACK}
    last_is_user = bool(messages) and messages[-1].get("role") == "user"
    assert result.messages[len(kept) + 2 :] == ([messages[-1]] if last_is_user else [])
