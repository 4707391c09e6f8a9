"""The Codex rollout format (SPEC §8): detection, the view codex resume rebuilds, micro, full.

The fixtures in tests/fixtures/codex were written by the real Codex CLI 0.169.0 (see
tests/fixtures/codex/regenerate.py); the other rollouts are made here in the same shapes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from codex_rollouts import Rollout, index, records, run, user_item, view_messages
from helpers import TESTS

from compactor_core.agents.codex import Codex
from compactor_core.compaction.estimate import estimate
from compactor_core.conversation.boilerplate import CODEX_SUMMARY_INTRO
from compactor_core.session_files import check, registry
from compactor_core.settings import RunSettings, Settings

FIXTURES = TESTS / "fixtures" / "codex"
MICRO = RunSettings("micro")
FULL = RunSettings("full", Settings(lang="en"))


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def changed_lines(before: bytes, after: bytes) -> list[int]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new)
    return [number for number, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        block
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


# --- detection -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["compacted.jsonl", "plain.jsonl", "tools.jsonl"])
def test_real_rollouts_are_detected_as_codex(name: str) -> None:
    with open(FIXTURES / name, "rb") as handle:
        assert registry.detect(handle, "auto", name).name == "codex"


def test_detection_wants_codex_records_not_lookalikes() -> None:
    codex = Codex()
    assert codex.claims({"timestamp": "t", "type": "session_meta", "payload": {}})
    assert codex.claims({"timestamp": "t", "type": "response_item", "payload": {}})
    assert not codex.claims({"timestamp": "t", "type": "user", "payload": {}})  # not Codex's
    assert not codex.claims({"type": "response_item", "payload": {}})  # no timestamp
    assert not codex.claims({"role": "user", "content": "hi"})
    assert not codex.claims(["session_meta"])
    claude = {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user"}}
    assert registry.detect_records([claude]) == "claude-code"


# --- the view ------------------------------------------------------------------------------------


def test_view_of_a_real_compacted_rollout_is_what_codex_resumes_from() -> None:
    data = fixture("compacted.jsonl")
    lines = records(data)
    compaction = max(n for n, record in enumerate(lines) if record["type"] == "compacted")
    messages = view_messages(data)
    # the base instructions first, then the replacement history, then what came after
    assert messages[0] == {
        "role": "system",
        "content": [{"type": "text", "text": lines[0]["payload"]["base_instructions"]["text"]}],
    }
    history = lines[compaction]["payload"]["replacement_history"]
    texts = [b.get("text") for m in messages for b in m["content"] if isinstance(b, dict)]
    assert history[-1]["content"][0]["text"] in texts  # Codex's own summary
    before = {r["payload"]["call_id"] for r in lines[:compaction] if "call_id" in r["payload"]}
    after = {r["payload"]["call_id"] for r in lines[compaction:] if "call_id" in r["payload"]}
    in_view = {block["tool_use_id"] for block in tool_results(messages)}
    assert in_view == after and not in_view & before
    assert check.problems(index(data)) == []


def test_view_estimate_is_the_estimate_of_the_view_messages() -> None:
    for name in ("compacted.jsonl", "plain.jsonl", "tools.jsonl"):
        data = fixture(name)
        assert index(data).tokens == estimate(view_messages(data))


def test_developer_and_environment_messages_are_codex_context() -> None:
    rollout = Rollout()
    rollout.message("developer", "<permissions instructions>never ask</permissions instructions>")
    rollout.message("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")
    rollout.user("fix the bug")
    roles = [message["role"] for message in view_messages(rollout.data())]
    assert roles == ["system", "system", "system", "user"]


def test_parallel_calls_are_one_message_and_their_outputs_one_turn() -> None:
    rollout = Rollout()
    rollout.user("run")
    rollout.reasoning("I will run two commands")
    rollout.message("assistant", "Running them.")
    rollout.tools(["one", "two"])
    messages = view_messages(rollout.data())
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assistant = messages[2]["content"]
    assert [b["type"] for b in assistant] == ["reasoning", "text", "tool_use", "tool_use"]
    assert assistant[0]["text"] == "I will run two commands"
    assert [b["tool_use_id"] for b in messages[3]["content"]] == ["call_1", "call_2"]


def test_custom_and_local_shell_calls_pair_by_call_id() -> None:
    data = fixture("tools.jsonl")
    lines = records(data)
    calls = {
        r["payload"]["call_id"]: r["payload"]["type"]
        for r in lines
        if r["type"] == "response_item" and r["payload"]["type"].endswith("_call")
    }
    assert sorted(calls.values()) == [
        "custom_tool_call",
        "function_call",
        "function_call",
        "function_call",
        "local_shell_call",
    ]
    codex = Codex()
    names = {}
    for record in lines:
        for message in codex.messages(record):
            for block in message["content"] if isinstance(message["content"], list) else ():
                if block.get("type") == "tool_use":
                    names[block["id"]] = block["name"]
    assert sorted(set(names.values())) == ["apply_patch", "exec_command", "local_shell"]


def test_a_legacy_compaction_keeps_the_user_messages_then_its_summary() -> None:
    rollout = Rollout()
    rollout.user("first request")
    rollout.tools(["x" * 500])
    rollout.message("assistant", "done")
    rollout.user("second request")
    rollout.compacted(None, message="what happened so far")
    rollout.user("third request")
    messages = view_messages(rollout.data())
    texts = [m["content"][0]["text"] for m in messages[1:]]
    assert texts == ["first request", "second request", "what happened so far", "third request"]


def test_a_rollback_drops_the_newest_user_turns() -> None:
    rollout = Rollout()
    rollout.user("keep me")
    rollout.message("assistant", "kept")
    rollout.user("drop me")
    rollout.message("assistant", "dropped")
    rollout.add("event_msg", {"type": "thread_rolled_back", "num_turns": 1})
    rollout.user("after the rollback")
    texts = [m["content"][0]["text"] for m in view_messages(rollout.data())[1:]]
    assert texts == ["keep me", "kept", "after the rollback"]


def test_unknown_record_and_item_types_are_kept_out_of_the_view() -> None:
    rollout = Rollout()
    rollout.add("world_state", {"full": True, "state": {"x": 1}})
    rollout.add("something_new", {"big": "y" * 1000})
    rollout.item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}})
    rollout.user("hello")
    assert [m["role"] for m in view_messages(rollout.data())] == ["system", "user"]


# --- micro ---------------------------------------------------------------------------------------


def test_micro_on_a_real_rollout_truncates_old_outputs_and_their_ui_copies() -> None:
    data = fixture("compacted.jsonl")
    result = run(data, MICRO)
    old, new = records(data), records(result.data)
    changed = changed_lines(data, result.data)
    outputs = [n for n in changed if new[n]["type"] == "response_item"]
    copies = [n for n in changed if new[n]["type"] == "event_msg"]
    assert outputs and len(copies) == len(outputs)
    for number in outputs:
        before, after = old[number]["payload"], new[number]["payload"]
        assert after["output"] == f"[truncated: exec_command result, {len(before['output'])} chars]"
        assert {**after, "output": before["output"]} == before  # ids, call_id, the rest stay
        assert new[number]["metadata"] == old[number]["metadata"]
    for number in copies:
        before, after = old[number]["payload"]["item"], new[number]["payload"]["item"]
        assert after.keys() == before.keys() and after["id"] == before["id"]
        assert after["aggregated_output"].startswith("[truncated: exec_command result, ")
    # the three newest tool-result turns stay whole; everything before the compaction is marked
    view = view_messages(result.data)
    kept = [b for b in tool_results(view) if not str(b["content"]).startswith("[truncated:")]
    assert len(kept) == 9  # three turns of three parallel calls
    assert result.outcome.tokens_after < result.outcome.tokens_before
    assert len(result.data) < len(data)


def test_micro_changes_only_tool_outputs_and_copies_never_ids_or_reasoning() -> None:
    rollout = Rollout()
    for turn in range(5):
        rollout.user(f"request {turn}")
        rollout.reasoning(f"thinking {turn}")
        rollout.tools(["out " * 300, "其他输出 " * 100], ui="exec_command_end")
        rollout.message("assistant", f"turn {turn} done")
    data = rollout.data()
    result = run(data, MICRO)
    old, new = records(data), records(result.data)
    changed = changed_lines(data, result.data)
    assert {new[n]["payload"]["type"] for n in changed} == {
        "function_call_output",
        "exec_command_end",
    }
    assert len(changed) == 2 * 2 * 2  # two old turns: two outputs and two copies each
    for number in changed:
        before, after = old[number]["payload"], new[number]["payload"]
        assert after["call_id"] == before["call_id"] and after.keys() == before.keys()
        if before["type"] == "exec_command_end":
            assert after["stderr"] == "" and after["exit_code"] == 0  # short strings stay
            assert all(
                after[key].startswith("[truncated:") for key in ("stdout", "formatted_output")
            )
    # a changed line is compact JSON with non-ASCII unescaped, its ending kept
    line = result.data.splitlines(keepends=True)[changed[1]]
    assert line.endswith(b"\n") and line.decode().count("\n") == 1
    assert (
        json.dumps(new[changed[1]], ensure_ascii=False, separators=(",", ":")) == line.decode()[:-1]
    )


def test_micro_is_idempotent_and_a_second_run_changes_nothing() -> None:
    once = run(fixture("tools.jsonl"), MICRO).data
    twice = run(once, MICRO)
    assert twice.data == once and not twice.outcome.changed


def test_micro_honours_exclude_tool_and_min_chars() -> None:
    rollout = Rollout()
    for turn in range(5):
        rollout.user(f"request {turn}")
        rollout.tools(["short", "long " * 100])
    data = rollout.data()
    only_long = run(data, RunSettings("micro", Settings(min_chars=100))).data
    new = records(only_long)
    outputs = [
        r["payload"]["output"] for r in new if r["payload"].get("type") == "function_call_output"
    ]
    assert outputs[:4] == ["short", "[truncated: exec_command result, 500 chars]"] * 2
    excluded = RunSettings("micro", Settings(exclude_tools=("exec_command",)))
    assert run(data, excluded).data == data


def test_micro_marks_outputs_inside_an_old_replacement_history() -> None:
    rollout = Rollout()
    old_call = {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c0"}
    old_output = {"type": "function_call_output", "call_id": "c0", "output": "o" * 400}
    rollout.compacted([user_item("earlier"), old_call, old_output])
    rollout.compacted([user_item("later")])  # the newest one: the first is no longer sent
    rollout.user("go on")
    result = run(rollout.data(), MICRO)
    history = records(result.data)[1]["payload"]["replacement_history"]
    assert history[2]["output"] == "[truncated: exec_command result, 400 chars]"
    assert history[1] == old_call


# --- full ----------------------------------------------------------------------------------------


def big_rollout(turns: int = 6) -> Rollout:
    rollout = Rollout()
    for turn in range(turns):
        rollout.user(f"Request {turn}: build and test the project, then report.")
        rollout.tools([f"turn {turn}: compiled ok\n" * 40, f"turn {turn}: tests passed\n" * 40])
        rollout.message("assistant", f"Turn {turn}: everything passed. " * 20)
    return rollout


def test_full_appends_a_compacted_record_and_its_event_the_way_codex_does() -> None:
    data = fixture("compacted.jsonl")
    result = run(data, FULL)
    assert result.outcome.full == "compacted"
    assert result.data.startswith(data)  # append-only
    appended = records(result.data[len(data) :])
    last_ordinal = records(data)[-1]["ordinal"]
    assert [r["type"] for r in appended] == ["compacted", "event_msg"]
    assert [r["ordinal"] for r in appended] == [last_ordinal + 1, last_ordinal + 2]
    assert appended[1]["payload"] == {"type": "context_compacted"}
    compacted = appended[0]["payload"]
    assert compacted["message"].startswith(CODEX_SUMMARY_INTRO)
    assert compacted["replacement_history"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": compacted["message"]}],
        }
    ]
    after = result.after
    assert after.tokens < result.before.tokens
    assert check.problems(after) == []
    assert [m["role"] for m in view_messages(result.data)] == ["system", "user"]


def test_full_keeps_a_pending_user_request_after_the_summary() -> None:
    rollout = big_rollout()
    rollout.user("Now write the release notes.")
    result = run(rollout.data(), FULL)
    history = records(result.data)[-2]["payload"]["replacement_history"]
    assert history[0]["content"][0]["text"].startswith(CODEX_SUMMARY_INTRO)
    assert history[1] == records(rollout.data())[-1]["payload"]  # the very item, ids and all


def test_full_keeps_pending_tool_results_with_their_calls() -> None:
    rollout = big_rollout()
    rollout.user("Check the disk.")
    ids = rollout.tools(["disk ok " * 50, "inodes ok"])  # the model has not answered yet
    data = rollout.data()
    result = run(data, FULL)
    assert result.outcome.full == "compacted"
    history = records(result.data)[-2]["payload"]["replacement_history"]
    kinds = [(item["type"], item.get("call_id")) for item in history[1:]]
    calls = [("function_call", call_id) for call_id in ids]
    assert kinds == calls + [("function_call_output", call_id) for call_id in ids]
    assert history[3]["output"] == "disk ok " * 50  # pending results stay whole
    assert check.problems(result.after) == []


def test_full_after_full_compacts_the_summary_again() -> None:
    once = run(big_rollout().data(), FULL).data
    extra = Rollout()
    extra.records.clear()
    for turn in range(6, 10):
        extra.user(f"Request {turn}: more work.")
        extra.tools([f"output {turn} " * 80])
        extra.message("assistant", f"Turn {turn} finished. " * 20)
    for number, record in enumerate(extra.records, start=len(records(once))):
        record["ordinal"] = number
    twice = run(once + extra.data(), FULL)
    assert twice.outcome.full == "compacted"
    assert [m["role"] for m in view_messages(twice.data)] == ["system", "user"]


def test_full_of_a_rollout_without_ordinals_writes_none() -> None:
    rollout = Rollout(ordinals=False)
    for turn in range(4):
        rollout.user(f"Request {turn}: do it.")
        rollout.tools([f"result {turn} " * 100])
        rollout.message("assistant", f"Done {turn}. " * 30)
    result = run(rollout.data(), FULL)
    appended = records(result.data)[-2:]
    assert all("ordinal" not in record for record in appended)
    assert list(appended[0]) == ["timestamp", "type", "payload"]


# --- sessions on this machine --------------------------------------------------------------------


def test_session_files_name_the_session_and_its_folder(tmp_path: Path) -> None:
    day = tmp_path / "sessions" / "2026" / "12" / "02"
    day.mkdir(parents=True)
    name = "rollout-2026-12-02T18-51-50-01a23819-475a-7650-98d2-6561a1ff0a95.jsonl"
    (day / name).write_bytes(fixture("tools.jsonl"))
    (day / "rollout-2026-12-02T18-00-00-abc.jsonl").write_bytes(b"not json\n")
    (day / "notes.txt").write_text("x")
    found = {f.path.name: f for f in Codex().session_files(tmp_path)}
    assert set(found) == {name, "rollout-2026-12-02T18-00-00-abc.jsonl"}
    assert found[name].session_id == "01a23819-475a-7650-98d2-6561a1ff0a95"
    assert found[name].project == records(fixture("tools.jsonl"))[0]["payload"]["cwd"]
    assert found["rollout-2026-12-02T18-00-00-abc.jsonl"].session_id == "abc"
    assert list(Codex().session_files(tmp_path / "nothing")) == []


def test_codex_own_encrypted_compaction_is_in_the_view_and_kept_by_full() -> None:
    """Issue 21.4: a remote compaction's ``compaction`` item (the model's encrypted summary of
    what came before) was not in the view, and full wrote a history without it."""
    earlier = {"type": "compaction", "encrypted_content": "gAAAAB" + "x" * 4000}
    rollout = big_rollout(2)
    rollout.compacted([user_item("Request 0: build and test the project."), earlier], message="")
    for turn in range(4):
        rollout.user(f"Request {turn + 2}: build and test the project, then report.")
        rollout.tools([f"turn {turn}: compiled ok\n" * 40])
        rollout.message("assistant", f"Turn {turn}: everything passed. " * 20)
    data = rollout.data()
    view = view_messages(data)
    assert {
        "role": "system",
        "content": [{"type": "text", "text": earlier["encrypted_content"]}],
    } in view
    result = run(data, FULL)
    assert result.outcome.full == "compacted"
    history = records(result.data)[-2]["payload"]["replacement_history"]
    assert history[0] == earlier  # the very item, before ctxpack's summary
    assert history[1]["content"][0]["text"].startswith(CODEX_SUMMARY_INTRO)
    assert check.problems(result.after) == []
    again = run(result.data, FULL)  # a second summary keeps it too (not ctxpack's first one)
    history = records(again.data)[-2]["payload"]["replacement_history"]
    assert history[0] == earlier and len(history) == 2
