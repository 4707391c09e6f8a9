"""The foundation on real transcripts (tests/corpus: both wire styles, Chinese user turns)."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import (
    CORPUS,
    assert_only_tool_results_changed,
    corpus_files,
    load_json,
    micro_in_place,
    name_of,
    original_length,
    tool_names_of,
)
from reference import reference_estimate

from compactor_core.compaction.estimate import breakdown, estimate
from compactor_core.compaction.staleness import analyse
from compactor_core.conversation.formats import dump, parse
from compactor_core.conversation.tools import tool_result_turns

FILES = corpus_files()
IDS = [path.stem for path in FILES]
MARKER = re.compile(r"\[truncated: (?P<tool>.+) result, (?P<chars>\d+) chars\]")


def test_the_corpus_is_there() -> None:
    assert len(FILES) >= 4, f"expected the corpus at {CORPUS}"
    formats = {entry["stats"]["format"] for entry in load_json(CORPUS / "manifest.json")}
    assert formats == {"anthropic", "openai"}


@pytest.fixture(scope="module", autouse=True)
def corpus_is_never_modified() -> Iterator[None]:
    def digests() -> dict[str, str]:
        return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in FILES}

    before = digests()
    yield
    assert digests() == before


@pytest.fixture(scope="module")
def manifest() -> dict[str, dict]:
    return {entry["id"]: entry for entry in load_json(CORPUS / "manifest.json")}


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_parse_matches_the_manifest(path: Path, manifest: dict[str, dict]) -> None:
    conversation = parse(path.read_bytes(), path.name)
    stats = manifest[path.stem]["stats"]
    assert conversation.shape == "array"
    assert len(conversation.messages) == stats["messages"]
    report = breakdown(conversation.messages)
    tools = report["by_tool"].values()
    assert sum(tool["calls"] for tool in tools) == stats["tool_calls"]
    assert sum(tool["results"] for tool in tools) == stats["tool_results"]
    assert report["tokens"] == estimate(conversation.messages)
    assert report["by_role"].keys() == stats["roles"].keys()


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_parse_dump_parse_is_the_identity(path: Path) -> None:
    conversation = parse(path.read_bytes())
    again = parse(dump(conversation))
    assert again.messages == conversation.messages == load_json(path)
    assert dump(again) == dump(conversation)
    assert parse(dump(conversation, pretty=True)).messages == conversation.messages


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_estimate_equals_the_reference(path: Path) -> None:
    messages = load_json(path)
    assert estimate(messages) == reference_estimate(messages)
    assert estimate(messages, compat=True) == reference_estimate(messages, compat=True)


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_bareagent_profile_is_at_most_the_default(path: Path) -> None:
    messages = load_json(path)
    assert 0 < estimate(messages, compat=True) <= estimate(messages)


def test_chinese_text_weighs_more_than_its_characters_alone() -> None:
    messages = load_json(CORPUS / "cc_kimi_516b7270.json")
    text = messages[0]["content"]
    cjk = sum(1 for char in text if "\u4e00" <= char <= "\u9fff")
    assert cjk > 100
    assert estimate(messages[:1]) >= cjk * 1.5


@pytest.mark.parametrize("keep_recent", [3, 0, 1])
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_micro_on_real_transcripts(path: Path, keep_recent: int) -> None:
    original = load_json(path)
    messages = copy.deepcopy(original)
    outcome = micro_in_place(messages, keep_recent=keep_recent, stale=False)  # SPEC §2 exactly
    assert len(messages) == len(original)
    assert_only_tool_results_changed(original, messages)

    turns = tool_result_turns(original)
    old = turns[: len(turns) - keep_recent] if keep_recent > 0 else turns
    names = tool_names_of(original)
    expected, found = [], []
    for index in (index for turn in old for index in turn):
        pairs = zip(results_of(original[index]), results_of(messages[index]), strict=True)
        for (before, call_id), (after, _) in pairs:
            tool, length = name_of(names, call_id), original_length(before.get("content"))
            if len(f"[truncated: {tool} result, {length} chars]") >= length:
                assert after == before  # its marker would be longer: it stays (issue 21.6)
                continue
            expected.append((tool, length))
            match = MARKER.fullmatch(after["content"])
            assert match, after["content"][:80]
            found.append((match["tool"], int(match["chars"])))
    assert found == expected
    assert outcome.truncated == len(expected) > 0
    assert all(tool != "unknown" for tool, _ in found)

    assert estimate(messages) < estimate(original)
    again = copy.deepcopy(messages)
    assert micro_in_place(again, keep_recent=keep_recent, stale=False).truncated == 0
    assert again == messages


@pytest.mark.parametrize("path", corpus_files(), ids=lambda path: path.stem)
def test_stale_results_first_on_real_transcripts(path: Path) -> None:
    """By default (issue 35): each old result gets SPEC §2's marker, or one naming the later
    result that made it stale; of the newest turns only duplicates change; a second run
    changes nothing."""
    original = load_json(path)
    staleness = analyse(original)
    messages = copy.deepcopy(original)
    outcome = micro_in_place(messages)
    names = tool_names_of(original)
    superseded = 0
    for before_message, after_message in zip(original, messages, strict=True):
        pairs = zip(results_of(before_message), results_of(after_message), strict=True)
        for (before, call_id), (after, _) in pairs:
            if after == before:
                continue
            found = staleness.of(call_id)
            if found is not None and after["content"] == found.marker():
                superseded += 1
                continue
            tool, length = name_of(names, call_id), original_length(before.get("content"))
            assert after["content"] == f"[truncated: {tool} result, {length} chars]"
    assert superseded > 0 or not staleness.superseded
    assert outcome.truncated >= superseded
    again = copy.deepcopy(messages)
    assert micro_in_place(again).truncated == 0
    assert again == messages


def results_of(message: dict) -> Iterator[tuple[dict, object]]:
    if message.get("role") == "tool":
        yield message, message.get("tool_call_id")
        return
    for block in message.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "tool_result":
            yield block, block.get("tool_use_id")


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_micro_keeps_the_three_newest_turns_whole(path: Path) -> None:
    original = load_json(path)
    messages = copy.deepcopy(original)
    micro_in_place(messages)
    for turn in tool_result_turns(original)[-3:]:
        for index in turn:
            assert messages[index] == original[index]


def test_openai_corpus_has_runs_of_tool_messages_counted_as_one_turn() -> None:
    messages = load_json(CORPUS / "oai_openhands_ponyc4593.json")
    tool_messages = sum(1 for message in messages if message["role"] == "tool")
    turns = tool_result_turns(messages)
    assert sum(len(turn) for turn in turns) == tool_messages
    assert all(messages[i]["role"] == "tool" for turn in turns for i in turn)


def test_a_json_list_tool_result_is_counted_as_its_json_text() -> None:
    messages = load_json(CORPUS / "cc_kimi_516b7270.json")
    original = copy.deepcopy(messages)
    micro_in_place(messages, keep_recent=0)
    checked = 0
    for old, new in zip(original, messages, strict=True):
        for old_block, new_block in zip(
            old["content"] if isinstance(old["content"], list) else (),
            new["content"] if isinstance(new["content"], list) else (),
            strict=True,
        ):
            if old_block.get("type") == "tool_result" and isinstance(old_block["content"], list):
                text = json.dumps(old_block["content"], ensure_ascii=False)
                assert new_block["content"].endswith(f" result, {len(text)} chars]")
                checked += len(old_block["content"])
    assert checked == 5  # the manifest: five text blocks inside tool results
