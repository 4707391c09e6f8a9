"""Recall (issue 35): markers with a handle, the store of originals, ``ctxpack mcp`` answering
``recall`` over real stdio, and serve keeping the originals when the model can recall them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
import serve_bodies
from helpers import CTXPACK, run
from hypothesis import given
from hypothesis import strategies as st

from compactor_core.compaction.handles import handle, handles_in, replaced_originals
from compactor_core.compaction.micro import content_length, micro_compact
from compactor_core.recall.store import OriginalsStore
from compactor_core.serve.compaction import Compactor, offers_recall
from compactor_core.serve.wire import MESSAGES, WIRES
from compactor_core.settings import Settings

RECALL = Settings(keep_recent=1, recall=True)
OUTPUT = "line of a long build log\n" * 40


def bash_turn(call_id: str, content: Any = OUTPUT, command: str = "make") -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}],
        },
    ]


def conversation() -> list[dict]:
    return [
        {"role": "user", "content": "build it"},
        *bash_turn("a", OUTPUT, "make one"),
        *bash_turn("b", [{"type": "text", "text": OUTPUT * 2}], "make two"),
        *bash_turn("c", OUTPUT + "!", "make three"),
    ]


def results(messages: list[dict]) -> list[Any]:
    return [
        block["content"]
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


# --- handles -------------------------------------------------------------------------------------


@given(st.text())
def test_a_handle_is_the_start_of_the_contents_hash(content: str) -> None:
    expected = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    assert handle(content) == expected


def test_markers_carry_the_handle_of_what_they_replaced_and_read_the_same_each_time() -> None:
    messages = conversation()
    blocks = [{"type": "text", "text": OUTPUT * 2}]
    first, _ = micro_compact(messages, RECALL)
    again, _ = micro_compact([*messages, {"role": "user", "content": "more"}], RECALL)
    markers = results(first)[:2]
    assert markers == [
        f"[truncated: Bash result, {len(OUTPUT)} chars; recall {handle(OUTPUT)}]",
        f"[truncated: Bash result, {content_length(blocks)} chars; recall {handle(blocks)}]",
    ]
    assert results(again)[:2] == markers  # a cached prefix stays cached
    assert replaced_originals(messages, first) == results(messages)[:2]


def test_without_recall_or_under_bareagent_markers_have_no_handle() -> None:
    plain, _ = micro_compact(conversation(), Settings(keep_recent=1))
    bareagent, _ = micro_compact(conversation(), Settings(keep_recent=1, compat=True, recall=True))
    for messages in (plain, bareagent):
        assert not any(handles_in(str(content)) for content in results(messages))


# --- the store -----------------------------------------------------------------------------------


def test_the_store_gives_back_each_original_by_its_handle(tmp_path: Path) -> None:
    store = OriginalsStore(tmp_path / "originals")
    blocks = [{"type": "text", "text": "a picture of the log"}]
    assert store.keep([OUTPUT, blocks, OUTPUT]) == 2
    assert store.keep([OUTPUT]) == 0  # kept once
    assert store.find(handle(OUTPUT)).answer == OUTPUT
    assert store.find(handle(blocks)).answer == "a picture of the log"  # text blocks: their text
    image = [{"type": "image", "source": {"type": "base64", "data": "AAAA"}}]
    store.keep([image])
    assert json.loads(store.find(handle(image)).answer) == image  # anything else: its JSON
    whole = hashlib.sha256(OUTPUT.encode()).hexdigest()
    assert store.find(whole.upper()).answer == OUTPUT  # the whole hash, in any case
    folder = tmp_path / "originals"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(path.stat().st_mode) for path in folder.iterdir()} == {0o600}
    assert store.stats() == {
        "originals": 3,
        "bytes": len(OUTPUT) + len(json.dumps(blocks)) + len(json.dumps(image)),
        "limit": store.limit,
    }


def test_a_handle_the_store_cannot_answer_says_so_plainly(tmp_path: Path) -> None:
    store = OriginalsStore(tmp_path / "originals")
    assert "no longer holds" in store.find("0123456789ab").answer  # no store yet
    store.keep([OUTPUT])
    assert "no longer holds" in store.find("0123456789ab").answer
    assert "not a handle" in store.find("../../etc/passwd").answer
    assert "not a handle" in store.find("abc").answer  # too short to name one
    for name in ("original-abcdef01", "original-abcdef02"):
        (tmp_path / "originals" / name).write_text("x")
    assert "2 originals begin so" in store.find("abcdef").answer


def test_the_store_drops_the_least_recently_used_beyond_its_limit(tmp_path: Path) -> None:
    outputs = [OUTPUT.replace("log", f"log {n}") for n in range(5)]
    store = OriginalsStore(tmp_path / "originals", limit=3 * len(outputs[0]))
    for age, output in enumerate(outputs):
        store.keep([output])
        path = tmp_path / "originals" / f"original-{hashlib.sha256(output.encode()).hexdigest()}"
        os.utime(path, (1000 + age, 1000 + age))
    store.find(handle(outputs[2]))  # used: it stays
    store.keep([OUTPUT])
    kept = [output for output in outputs if store.find(handle(output)).text is not None]
    assert outputs[2] in kept and outputs[4] in kept
    assert store.stats()["bytes"] <= store.limit


def test_a_store_folder_that_is_a_link_is_never_used(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "originals").symlink_to(elsewhere)
    store = OriginalsStore(tmp_path / "originals")
    with pytest.raises(Exception, match="link"):
        store.keep([OUTPUT])
    assert list(elsewhere.iterdir()) == []
    assert "no longer holds" in store.find(handle(OUTPUT)).answer


# --- the command line and ctxpack mcp, as processes ----------------------------------------------


def mcp_session(env: dict[str, str], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Start ``ctxpack mcp`` and talk to it through the official SDK's client (the reference the
    server is held to): initialize, list the tools, call each; the results' structure, or text."""
    return anyio.run(_mcp_session, env, calls)


async def _mcp_session(env: dict[str, str], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = StdioServerParameters(command=str(CTXPACK), args=["mcp"], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        hello = await session.initialize()
        assert hello.instructions and "recall" in hello.instructions
        names = [tool.name for tool in (await session.list_tools()).tools]
        assert names == ["recall", "estimate", "stats"]
        answers = []
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            answers.append(result.structured_content or result.content[0].text)
        return answers


def test_micro_recall_keeps_the_originals_and_ctxpack_mcp_gives_them_back(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    source = tmp_path / "conversation.json"
    source.write_text(json.dumps(conversation()))
    done = run("micro", "--recall", "--keep-recent", "1", source, env=env)
    assert done.returncode == 0, done.stderr
    markers = [str(content) for content in results(json.loads(done.stdout))]
    handles = [found for marker in markers for found in handles_in(marker)]
    assert len(handles) == 2
    recalled, missing, stats, estimate = mcp_session(
        env,
        [
            ("recall", {"handle": handles[0]}),
            ("recall", {"handle": "0123456789ab"}),
            ("stats", {}),
            ("estimate", {"path": str(source)}),
        ],
    )
    assert recalled == OUTPUT
    assert "no longer holds" in missing
    assert stats["originals"] == 2
    assert estimate["tokens"] > 0 and estimate["stale"]["results"] == 3


def test_micro_recall_on_a_session_file_keeps_its_originals(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    session = tmp_path / "session.jsonl"
    shutil.copy(Path(__file__).parent.parent / "examples" / "claude-session.jsonl", session)
    done = run(
        "micro", "--recall", "--keep-recent", "1", "-o", tmp_path / "out.jsonl", session, env=env
    )
    assert done.returncode == 0, done.stderr
    handles = handles_in((tmp_path / "out.jsonl").read_text().replace('\\"', '"'))
    assert handles
    store = OriginalsStore(tmp_path / "state" / "ctxpack" / "originals")
    assert all(store.find(found).text for found in handles)


def test_a_dry_run_keeps_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    source = tmp_path / "conversation.json"
    source.write_text(json.dumps(conversation()))
    assert run("micro", "--recall", "--dry-run", "-i", source, env=env).returncode == 0
    assert not (tmp_path / "state" / "ctxpack" / "originals").exists()


# --- serve ---------------------------------------------------------------------------------------


def test_serve_gives_handles_only_when_the_model_can_recall(tmp_path: Path) -> None:
    store = OriginalsStore(tmp_path / "originals")
    compactor = Compactor(Settings(policy="every-turn", keep_recent=1), originals=store)
    body = serve_bodies.anthropic(turns=4)
    plain = json.loads(compactor.compact(WIRES[MESSAGES], json.dumps(body).encode()).body)
    assert not handles_in(json.dumps(plain))
    assert store.stats()["originals"] == 0
    body["tools"] = [{"name": "mcp__ctxpack__recall", "input_schema": {"type": "object"}}]
    recalling = json.loads(compactor.compact(WIRES[MESSAGES], json.dumps(body).encode()).body)
    found = handles_in(json.dumps(recalling).replace('\\"', '"'))
    assert found and all(store.find(each).text for each in found)


def test_a_deferred_recall_tool_counts_as_offered() -> None:
    listing = (
        "The following deferred tools are now available via ToolSearch:\nmcp__ctxpack__recall\n"
    )
    body = {"messages": [{"role": "user", "content": listing}], "tools": [{"name": "ToolSearch"}]}
    assert offers_recall(body, json.dumps(body).encode())
    openai = {"tools": [{"type": "function", "function": {"name": "recall"}}]}
    assert offers_recall(openai, json.dumps(openai).encode())
    assert not offers_recall({"tools": [{"name": "Bash"}]}, b'{"x": "; recall 0123456789ab]"}')


def test_a_recall_tool_in_a_responses_namespace_counts_as_offered() -> None:
    """Codex offers an MCP server's tools as one Responses namespace (``mcp__ctxpack``) whose
    tools keep their own names."""
    recall = {"type": "function", "name": "recall", "parameters": {"type": "object"}}
    codex = {"tools": [{"type": "namespace", "name": "mcp__ctxpack", "tools": [recall]}]}
    assert offers_recall(codex, json.dumps(codex).encode())
    other = {"type": "namespace", "name": "mcp__notes", "tools": [{**recall, "name": "find"}]}
    assert not offers_recall({"tools": [other]}, json.dumps({"tools": [other]}).encode())
