"""The providers' cache rules on hand-made request bodies (issue 31): a hit at a breakpoint, a hit
found 20 blocks back, a miss 21 blocks back, plain input after the last breakpoint, 1-hour prices,
the minimum prefix, Claude Code's placement, OpenAI's 1,024 tokens in steps of 128."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compactor_core.errors import InputError
from compactor_core.replay.cache_rules import (
    ANTHROPIC,
    OPENAI,
    Block,
    CacheState,
    Usage,
    anthropic_blocks,
    minimum_prefix,
    openai_blocks,
)

SONNET = "claude-sonnet-4-5"


def tokens(block: Any) -> int:
    """A text block's tokens are its text's length here: the sums below are exact."""
    return len(block.get("text", "")) if isinstance(block, dict) else len(str(block))


def text(size: int, letter: str = "x", ttl: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": letter * size}
    if ttl:
        block["cache_control"] = {"type": "ephemeral", "ttl": ttl}
    return block


def body(system: list[dict[str, Any]], *contents: list[dict[str, Any]]) -> dict[str, Any]:
    roles = ("user", "assistant")
    return {
        "system": system,
        "messages": [
            {"role": roles[index % 2], "content": content} for index, content in enumerate(contents)
        ],
    }


def send(request: dict[str, Any], state: CacheState, time: float | None = None, model=SONNET):
    return ANTHROPIC.send(anthropic_blocks(request, tokens), state, time, model)


def test_a_hit_at_a_breakpoint_reads_its_prefix_and_writes_up_to_the_next() -> None:
    first, state = send(body([text(2000, ttl="5m")], [text(500, "u", ttl="5m")]), CacheState())
    assert first == Usage(written_5m=2500)
    second, state = send(
        body([text(2000, ttl="5m")], [text(500, "u")], [text(40, "a")], [text(300, "v", ttl="5m")]),
        state,
    )
    assert second == Usage(read=2500, written_5m=340)
    assert second.billed(ANTHROPIC.prices) == pytest.approx(0.1 * 2500 + 1.25 * 340)


def numbered(count: int, start: int = 0) -> list[dict[str, Any]]:
    """``count`` user messages of 100 tokens each, each its own block, distinct from the others."""
    return [text(100, chr(ord("A") + (start + index) % 50)) for index in range(count)]


def conversation(blocks: list[dict[str, Any]], mark_last: bool = True) -> dict[str, Any]:
    """One block per message, the last marked; the roles alternate."""
    if mark_last:
        blocks = [*blocks[:-1], {**blocks[-1], "cache_control": {"type": "ephemeral"}}]
    return body([], *([block] for block in blocks))


@pytest.mark.parametrize(("added", "hit"), [(20, True), (21, False)])
def test_a_read_looks_back_20_blocks_from_a_breakpoint_and_no_further(added: int, hit: bool):
    earlier = numbered(30)  # 3,000 tokens: the whole prefix is written at its last block
    _, state = send(conversation(earlier), CacheState())
    later = earlier + numbered(added, start=30)  # the new breakpoint is `added` blocks on
    usage, _ = send(conversation(later), state)
    if hit:
        assert usage == Usage(read=3000, written_5m=100 * added)
    else:
        assert usage == Usage(written_5m=3000 + 100 * added)


def test_a_second_breakpoint_within_reach_finds_what_the_last_one_cannot() -> None:
    earlier = numbered(30)
    _, state = send(conversation(earlier), CacheState())
    later = conversation(earlier + numbered(25, start=30))
    later["messages"][29]["content"][0]["cache_control"] = {"type": "ephemeral"}
    usage, _ = send(later, state)
    assert usage == Usage(read=3000, written_5m=2500)


def test_what_follows_the_last_breakpoint_is_plain_input() -> None:
    request = body([text(2000, ttl="5m")], [text(700, "u")], [text(50, "a")])
    usage, state = send(request, CacheState())
    assert usage == Usage(written_5m=2000, plain=750)
    again, _ = send(request, state)
    assert again == Usage(read=2000, plain=750)
    assert again.billed(ANTHROPIC.prices) == pytest.approx(200 + 750)


def test_one_hour_writes_cost_twice_and_live_an_hour() -> None:
    request = body([text(3000, ttl="1h")], [text(100, "u", ttl="5m")])
    usage, state = send(request, CacheState(), time=0.0)
    assert usage == Usage(written_1h=3000, written_5m=100)
    assert usage.billed(ANTHROPIC.prices) == pytest.approx(2.0 * 3000 + 1.25 * 100)
    later, _ = send(request, state, time=1800.0)  # the 5-minute entry is gone, the hour's is not
    assert later == Usage(read=3000, written_5m=100)
    expired, _ = send(request, state, time=3601.0)
    assert expired == usage


def test_a_prefix_under_the_models_minimum_is_not_cached() -> None:
    request = body([text(1000, ttl="5m")], [text(20, "u")])
    usage, state = send(request, CacheState())
    assert usage == Usage(plain=1020)
    assert state.entries == {}
    assert send(body([text(1024, ttl="5m")]), CacheState())[0] == Usage(written_5m=1024)
    assert send(body([text(2000, ttl="5m")]), CacheState(), model="claude-3-5-haiku")[0] == Usage(
        plain=2000
    )
    assert minimum_prefix("claude-opus-4-5-20251101") == 4096
    assert minimum_prefix("claude-haiku-4-5") == 4096
    assert minimum_prefix("claude-3-haiku-20240307") == 2048
    assert minimum_prefix(None) == minimum_prefix("claude-sonnet-4-5") == 1024


def test_more_than_four_breakpoints_is_refused() -> None:
    request = body([text(10, ttl="5m")] * 3, [text(10, ttl="5m"), text(10, "u", ttl="5m")])
    with pytest.raises(InputError, match="5 cache_control breakpoints"):
        send(request, CacheState())


def test_a_body_without_breakpoints_is_marked_where_claude_code_marks_it() -> None:
    request = body([text(10, "h"), text(60, "i"), text(3000, "s")], [text(200, "u")])
    marks = [block.breakpoint for block in anthropic_blocks(request, tokens)]
    assert marks == [None, "5m", "5m", "5m"]  # system[1], system[2], the last block; no tool
    assert anthropic_blocks(request, tokens, placement=None)[-1].breakpoint is None


def test_a_string_content_is_the_same_block_as_its_text_block() -> None:
    as_string = {"messages": [{"role": "user", "content": "hello"}]}
    as_block = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]}
    assert anthropic_blocks(as_string) == anthropic_blocks(as_block)


def test_openai_caches_from_1024_tokens_in_steps_of_128() -> None:
    def chat(*sizes: int) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": "m" * size} for size in sizes]}

    def count(item: Any) -> int:
        return len(item.get("content", ""))

    first, state = OPENAI.send(openai_blocks(chat(1000, 300), count), CacheState())
    assert first == Usage(written_5m=1280, plain=20)  # 1,300 tokens: 1,024 + 2 steps cacheable
    assert first.billed(OPENAI.prices) == 1300
    second, state = OPENAI.send(openai_blocks(chat(1000, 300, 500), count), state)
    assert second == Usage(read=1280, written_5m=512, plain=8)
    assert second.billed(OPENAI.prices) == pytest.approx(128 + 520)
    small, _ = OPENAI.send(openai_blocks(chat(1000, 23), count), CacheState())
    assert small == Usage(plain=1023)


@given(st.lists(st.tuples(st.integers(0, 3000), st.sampled_from([None, "5m", "1h"])), max_size=4))
def test_the_parts_of_a_bill_add_up_to_the_request(sizes: list[tuple[int, str | None]]) -> None:
    blocks = [Block(size, index, ttl) for index, (size, ttl) in enumerate(sizes)]
    for rules in (ANTHROPIC, OPENAI):
        state = CacheState()
        for _ in range(2):
            usage, state = rules.send(blocks, state)
            assert usage.tokens == sum(size for size, _ in sizes)
            assert min(usage.read, usage.written_5m, usage.written_1h, usage.plain) >= 0


@given(
    st.lists(st.tuples(st.integers(1, 2000), st.booleans()), min_size=1, max_size=30),
    st.sampled_from(["claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-haiku"]),
)
def test_the_same_request_again_reads_up_to_its_last_cacheable_breakpoint(
    sizes: list[tuple[int, bool]], model: str
) -> None:
    marked = [index for index, (_, mark) in enumerate(sizes) if mark][-4:]
    blocks = [
        Block(size, index, "5m" if index in marked else None)
        for index, (size, _) in enumerate(sizes)
    ]
    ends = [sum(size for size, _ in sizes[: index + 1]) for index in marked]
    cacheable = [end for end in ends if end >= minimum_prefix(model)]
    first, state = ANTHROPIC.send(blocks, CacheState(), 0.0, model)
    again, _ = ANTHROPIC.send(blocks, state, 299.0, model)
    assert first.read == 0 and first.written == max(cacheable, default=0)
    assert again.read == max(cacheable, default=0) and again.written == 0
