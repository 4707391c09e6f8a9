"""``micro --images``: old images become markers; the newest --keep-recent messages keep theirs."""

from __future__ import annotations

import base64
import copy
import json

from agents.damage import TOO_WIDE, png
from helpers import REPO, invoke, session_result
from hypothesis import given
from hypothesis import strategies as st

from compactor_core.agents.claude_code import ClaudeCode
from compactor_core.compaction.estimate import estimate
from compactor_core.compaction.micro import micro_compact
from compactor_core.compaction.old_images import mark_old_images
from compactor_core.settings import RunSettings, Settings

WIDE = base64.b64encode(TOO_WIDE).decode()
MARKER = "[image: png 9000x40, 4 KB]"


def anthropic_image() -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": WIDE}}


def openai_image() -> dict:
    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + WIDE}}


def screenshot(number: int, image: dict) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": f"look {number}"}, image]}


def texts(messages: list[dict]) -> list[str]:
    return [block.get("text", block["type"]) for m in messages for block in m["content"]]


def test_the_newest_keep_recent_messages_with_images_keep_them_in_both_styles() -> None:
    messages = [screenshot(n, (anthropic_image, openai_image)[n % 2]()) for n in range(5)]
    original = copy.deepcopy(messages)
    marked, replaced = mark_old_images(messages, keep_recent=2)
    assert replaced == 3
    assert texts(marked) == [
        *("look 0", MARKER, "look 1", MARKER, "look 2", MARKER),
        *("look 3", "image_url", "look 4", "image"),
    ]
    assert messages == original  # a new list; the input untouched
    assert marked[3] is messages[3]  # what does not change is shared
    assert estimate(marked) < estimate(messages)


def test_images_in_tool_results_are_replaced_too_and_ids_stay() -> None:
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [anthropic_image()]}
    call = {"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}
    messages = [
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
        screenshot(1, anthropic_image()),
    ]
    marked, replaced = mark_old_images(messages, keep_recent=1)
    assert replaced == 1
    assert marked[1]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": MARKER}],
    }
    assert marked[2] is messages[2]


@given(st.integers(min_value=-1, max_value=6), st.integers(min_value=0, max_value=6))
def test_marking_is_idempotent_and_keeps_the_newest(keep: int, count: int) -> None:
    messages = [screenshot(n, anthropic_image()) for n in range(count)]
    once, replaced = mark_old_images(messages, keep)
    twice, again = mark_old_images(once, keep)
    assert twice == once and again == 0
    assert replaced == (count if keep <= 0 else max(count - keep, 0))


def test_an_image_by_url_stays() -> None:
    by_url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    messages = [screenshot(0, by_url), screenshot(1, anthropic_image())]
    marked, replaced = mark_old_images(messages, keep_recent=0)
    assert replaced == 1 and marked[0] is messages[0]


def test_micro_does_images_only_when_asked_and_never_under_bareagent() -> None:
    messages = [screenshot(n, anthropic_image()) for n in range(4)]
    assert micro_compact(messages, Settings())[1].images == 0
    assert micro_compact(messages, Settings(images=True))[1].images == 1
    assert micro_compact(messages, Settings(images=True, compat=True))[1].images == 0


def test_micro_images_on_the_command_line(tmp_path) -> None:
    path = tmp_path / "shots.json"
    path.write_text(json.dumps([screenshot(n, anthropic_image()) for n in range(4)]))
    done = invoke("micro", "--images", "--keep-recent", "1", "--stats", path)
    assert texts(json.loads(done.stdout)).count(MARKER) == 3
    assert "3 images replaced" in done.stderr


def test_a_claude_code_session_s_old_images_become_markers_in_their_records() -> None:
    # the real Claude Code's session, with the screenshot it read and one the user pasted
    lines = (REPO / "tests/fixtures/claude_code/session.jsonl").read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    users = [
        r for r in records if r.get("type") == "user" and isinstance(r["message"]["content"], str)
    ]
    pasted = base64.b64encode(png(2000, 30)).decode()
    for record in users:
        image = {"type": "base64", "media_type": "image/png", "data": pasted}
        record["message"]["content"] = [
            {"type": "text", "text": record["message"]["content"]},
            {"type": "image", "source": image},
        ]
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    job = RunSettings("micro", Settings(images=True, keep_recent=1))
    result, outcome, _ = session_result(data, ClaudeCode(), job)
    assert outcome.images == len(users) - 1
    changed = [json.loads(line) for line in result.splitlines()]
    kept = [r for r in changed if '"type": "image"' in json.dumps(r.get("message"))]
    assert len(kept) == 1 and kept[0]["uuid"] == users[-1]["uuid"]
    assert json.dumps(changed).count("[image: png 2000x30") == len(users) - 1
