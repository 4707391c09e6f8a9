"""Stale results first (issue 35): which results a later one makes stale, their markers, the
newest turns' duplicates, the cache-aware batches, and the rules as data."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_core_cache_policy import made_cuts, sent_marked, stable

from compactor_core.compaction.cache_plan import request_points
from compactor_core.compaction.micro import is_marker, micro_compact
from compactor_core.compaction.staleness import analyse, stale_report
from compactor_core.conversation.tool_rules import (
    Rule,
    parse_rules,
    rules_table,
    touch_table,
    touches,
)
from compactor_core.settings import Settings

BIG = "x" * 400  # a result worth a marker


def call(call_id: str, tool: str, arguments: Any, content: Any = BIG, **extra: Any) -> list[dict]:
    """One tool-result turn, Anthropic style."""
    result = {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": arguments}],
        },
        {"role": "user", "content": [result]},
    ]


def openai_call(call_id: str, tool: str, arguments: dict, content: str = BIG) -> list[dict]:
    function = {"name": tool, "arguments": json.dumps(arguments)}
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "function": function}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def conversation(*turns: list[dict]) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": "fix the build"}]
    for turn in turns:
        messages += turn
    return messages


def contents(messages: list[dict]) -> list[Any]:
    found = []
    for message in messages:
        if message.get("role") == "tool":
            found.append(message["content"])
        for block in message["content"] if isinstance(message.get("content"), list) else ():
            if block.get("type") == "tool_result":
                found.append(block["content"])
    return found


# --- the markers, one per kind of tool and agent: a golden file ---------------------------------

AGENT_TURNS = [
    ("Claude Code", call("a1", "Read", {"file_path": "src/app.py"})),
    ("Claude Code", call("a2", "Bash", {"command": "npm test"})),
    ("Claude Code", call("a3", "Grep", {"pattern": "TODO", "path": "src"})),
    ("Claude Code", call("a4", "LS", {"path": "src/"})),
    ("Claude Code", call("a5", "Read", {"file_path": "src/app.py"})),
    ("Claude Code", call("a6", "Bash", {"command": "npm test"})),
    ("Claude Code", call("a7", "Grep", {"pattern": "TODO", "path": "src"})),
    ("Claude Code", call("a8", "LS", {"path": "src"})),
    ("Claude Code", call("a9", "Edit", {"file_path": "src/app.py", "old_string": "a"})),
    ("Codex", openai_call("c1", "exec_command", {"cmd": "cargo build"})),
    ("Codex", call("c2", "apply_patch", "*** Begin Patch\n*** Update File: lib.rs\n*** End Patch")),
    ("Codex", openai_call("c3", "exec_command", {"cmd": "cargo build"})),
    ("Gemini CLI", call("g1", "read_file", {"absolute_path": "/w/lib.rs"})),
    ("Gemini CLI", call("g2", "run_shell_command", {"command": "make"})),
    ("Gemini CLI", call("g3", "write_file", {"file_path": "/w/lib.rs", "content": "x"})),
    ("Gemini CLI", call("g4", "run_shell_command", {"command": "make"})),
    ("Cline", call("k1", "read_files", {"files": [{"path": "/w/a.md"}, {"path": "/w/b.md"}]})),
    ("Cline", call("k2", "read_files", {"files": [{"path": "/w/a.md"}]})),
    ("Cline", call("k3", "run_commands", {"commands": ["ls", "pwd"]})),
    ("Cline", call("k4", "read_files", {"files": [{"path": "/w/b.md"}]})),
    ("OpenHands", openai_call("o1", "str_replace_editor", {"command": "view", "path": "/w/x.py"})),
    (
        "OpenHands",
        openai_call("o2", "str_replace_editor", {"command": "str_replace", "path": "/w/x.py"}),
    ),
    ("pi", call("p1", "read", {"path": "/w/" + "deep/" * 20 + "file.ts"})),
    ("pi", call("p2", "read", {"path": "/w/" + "deep/" * 20 + "file.ts"})),
    ("Claude Code", call("a10", "Read", {"file_path": "src/app.py"})),
]


def test_the_markers_of_stale_results(golden) -> None:
    """Every kind of supersession, the agents' tool names, the turns between, a long path's end,
    and the same markers with a recall handle."""
    messages = conversation(*(turn for _, turn in AGENT_TURNS))
    lines = []
    for recall in (False, True):
        chosen = Settings(keep_recent=0, recall=recall)
        compacted, _ = micro_compact(messages, chosen)
        for (agent, _), content in zip(AGENT_TURNS, contents(compacted), strict=True):
            lines.append(f"{agent}: {content}")
    golden("stale_markers.txt", "\n".join(lines) + "\n")


# --- the rules ------------------------------------------------------------------------------------


def test_a_read_of_another_part_of_the_file_is_no_repeat() -> None:
    messages = conversation(
        call("r1", "Read", {"file_path": "a.py", "offset": 1, "limit": 50}),
        call("r2", "Read", {"file_path": "a.py", "offset": 51, "limit": 50}),
        call("r3", "Read", {"file_path": "a.py", "offset": 51, "limit": 50}),
    )
    assert set(analyse(messages).superseded) == {"r2"}


def test_a_whole_read_or_a_write_supersedes_every_part() -> None:
    parts = [call(f"r{n}", "Read", {"file_path": "a.py", "offset": n}) for n in range(3)]
    assert set(
        analyse(conversation(*parts, call("w", "Read", {"file_path": "./a.py"}))).superseded
    ) == {"r0", "r1", "r2"}
    assert set(
        analyse(conversation(*parts, call("w", "Write", {"file_path": "a.py"}))).superseded
    ) == {"r0", "r1", "r2"}


def test_an_error_or_an_unanswered_call_supersedes_nothing() -> None:
    failed = call("r2", "Read", {"file_path": "a.py"}, "no such file", is_error=True)
    unanswered = [call("r3", "Read", {"file_path": "a.py"})[0]]
    messages = conversation(call("r1", "Read", {"file_path": "a.py"}), failed, unanswered)
    assert analyse(messages).superseded == {}


def test_the_same_result_twice_is_not_stale_by_itself() -> None:
    """Gemini CLI sends every result twice under its call id: neither copy makes the other
    stale, and a later read makes both so."""
    messages = conversation(call("g1", "read_file", {"absolute_path": "/w/a.rs"}))
    messages.append(messages[-1])
    assert analyse(messages).superseded == {}
    messages += call("g2", "read_file", {"absolute_path": "/w/a.rs"})
    found = analyse(messages).superseded
    assert list(found) == ["g1"] and found["g1"].marker() == (
        "[superseded: read_file /w/a.rs, read again 1 turn later]"
    )


def test_a_call_that_touched_several_files_is_stale_once_all_are_touched_again() -> None:
    both = call("k1", "read_files", {"files": [{"path": "a"}, {"path": "b"}]})
    one = conversation(both, call("k2", "read_files", {"files": [{"path": "a"}]}))
    assert analyse(one).superseded == {}
    two = one + call("k3", "Edit", {"file_path": "b"})
    found = analyse(two).superseded["k1"]
    assert (found.verb, found.turns, found.repeat) == ("edited", 2, False)


def test_the_marker_names_the_first_later_result_for_good() -> None:
    """As the conversation grows, a stale result's marker reads the same (a cached prefix)."""
    messages = conversation(
        call("r1", "Read", {"file_path": "a.py"}), call("r2", "Read", {"file_path": "a.py"})
    )
    first = analyse(messages).superseded["r1"].marker()
    later = (
        messages
        + call("r3", "Read", {"file_path": "a.py"})
        + call("e", "Edit", {"file_path": "a.py"})
    )
    assert (
        analyse(later).superseded["r1"].marker()
        == first
        == "[superseded: Read a.py, read again 1 turn later]"
    )


def test_user_rules_add_a_tool_and_take_one_out() -> None:
    rules = parse_rules(
        {
            "fetch_page": {"kind": "read", "keys": ["url"]},
            "Bash": {"kind": "none"},
            "editor": [
                {"kind": "read", "keys": ["path"], "when": {"mode": "show"}},
                {"kind": "write", "keys": ["path"]},
            ],
        },
        "config.toml: tools",
    )
    messages = conversation(
        call("f1", "fetch_page", {"url": "https://x"}),
        call("f2", "fetch_page", {"url": "https://x"}),
        call("b1", "Bash", {"command": "ls"}),
        call("b2", "Bash", {"command": "ls"}),
        call("e1", "editor", {"mode": "show", "path": "p"}),
        call("e2", "editor", {"mode": "change", "path": "p"}),
    )
    assert set(analyse(messages, rules).superseded) == {"f1", "e1"}
    assert set(analyse(messages).superseded) == {"b1", "e1"}  # Cline's editor writes
    table = rules_table(rules)
    assert touches("editor", {"mode": "show", "path": "p"}, touch_table(rules))[0].kind == "read"
    assert table["Read"] == (Rule("read", ("file_path",)),)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([], "config.toml: tools must be a table of tool names"),
        ({"x": {"kind": "eat"}}, "config.toml: tools.x.kind must be one of"),
        ({"x": {"kind": "read", "keys": "path"}}, "tools.x.keys must be a list"),
        ({"x": {"kind": "read", "colour": 1}}, "tools.x: unknown field 'colour'"),
        ({"x": {"kind": "read", "when": {"a": [1]}}}, "tools.x.when must be a table"),
        ({"x": "read"}, "tools.x must be a table with a kind"),
    ],
)
def test_bad_rules_say_where(table: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        parse_rules(table, "config.toml: tools")


# --- micro: stale results first ------------------------------------------------------------------


def test_the_newest_turns_lose_only_what_a_later_result_repeats() -> None:
    messages = conversation(
        call("r1", "Read", {"file_path": "a.py"}),
        call("b1", "Bash", {"command": "make"}),
        call("r2", "Read", {"file_path": "a.py"}),  # made stale by the edit: needed for the next
        call("b2", "Bash", {"command": "make"}),
        call("e1", "Edit", {"file_path": "a.py"}),
    )
    kept = contents(micro_compact(messages, Settings(keep_recent=10))[0])
    assert kept == [
        "[superseded: Read a.py, read again 2 turns later]",
        "[superseded: Bash make, run again 2 turns later]",
        BIG,
        BIG,
        BIG,
    ]
    age_only = contents(micro_compact(messages, Settings(keep_recent=10, stale=False))[0])
    assert age_only == [BIG] * 5
    old = contents(micro_compact(messages, Settings(keep_recent=1))[0])
    assert old[2] == "[superseded: Read a.py, edited 2 turns later]"
    assert old[3] == "[truncated: Bash result, 400 chars]"  # the latest of its kind


def test_excluded_tools_and_short_results_stay_whole_even_when_stale() -> None:
    messages = conversation(
        call("r1", "Read", {"file_path": "a.py"}),
        call("r2", "Read", {"file_path": "a.py"}),
        call("b1", "Bash", {"command": "ls"}, "a b"),
        call("b2", "Bash", {"command": "ls"}, "a b"),
    )
    kept = contents(micro_compact(messages, Settings(exclude_tools=("Read",)))[0])
    assert kept == [BIG, BIG, "a b", "a b"]


def test_the_bareagent_profile_is_unchanged() -> None:
    messages = conversation(
        call("r1", "Read", {"file_path": "a.py"}), call("r2", "Read", {"file_path": "a.py"})
    )
    compat = Settings(compat=True, keep_recent=1, recall=True)
    assert contents(micro_compact(messages, compat)[0]) == [
        "[truncated: Read result, 400 chars]",
        BIG,
    ]


# --- generated conversations in which files are read, edited and commands run again ------------

PATHS = st.sampled_from(["a.py", "./a.py", "b.py", "src"])
ACTIONS = st.one_of(
    st.builds(lambda path: ("Read", {"file_path": path}), PATHS),
    st.builds(
        lambda path, offset: ("Read", {"file_path": path, "offset": offset}),
        PATHS,
        st.integers(1, 2),
    ),
    st.builds(lambda path: ("Edit", {"file_path": path}), PATHS),
    st.builds(lambda command: ("Bash", {"command": command}), st.sampled_from(["make", "ls"])),
    st.builds(lambda path: ("LS", {"path": path}), PATHS),
)


@st.composite
def working_sessions(draw: st.DrawFn) -> list[dict]:
    turns = []
    for number, (tool, arguments) in enumerate(draw(st.lists(ACTIONS, min_size=2, max_size=14))):
        size = draw(st.sampled_from([5, 200, 900]))
        error = {"is_error": True} if draw(st.integers(0, 9)) == 0 else {}
        turns.append(call(f"t{number}", tool, arguments, "y" * size, **error))
        if draw(st.booleans()):
            turns.append(
                [{"role": "user", "content": "go on"}, {"role": "assistant", "content": "ok"}]
            )
    return conversation(*turns)


PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
gains = st.sampled_from([0, 0, 30, 200])


@PROPERTY
@given(working_sessions(), st.integers(0, 4), st.booleans())
def test_micro_stays_idempotent_and_frees_at_least_what_age_alone_frees(
    messages, keep, recall
) -> None:
    chosen = Settings(keep_recent=keep, recall=recall)
    once, done = micro_compact(messages, chosen)
    assert micro_compact(once, chosen)[0] == once
    _, age_only = micro_compact(messages, replace(chosen, stale=False))
    assert done.truncated >= age_only.truncated


@PROPERTY
@given(working_sessions(), gains, st.integers(1, 3))
def test_batches_keep_their_markers_as_the_conversation_grows(messages, gain, keep) -> None:
    """A proxy re-sending the raw history: what a request marks reads the same in every later
    request, and a request begins with the one before unless a batch was made in between."""
    chosen = Settings(threshold=10**9, min_gain=gain, keep_recent=keep)
    previous = None
    for length in request_points(messages):
        result = stable(messages[:length], chosen)
        if previous is not None and made_cuts(previous) == made_cuts(result):
            assert sent_marked(previous) <= sent_marked(result)
            sent = result.messages[: len(previous.messages)]
            for before, now in zip(contents(previous.messages), contents(sent), strict=False):
                if is_marker(before):
                    assert now == before
            if previous.plan.batches == result.plan.batches:
                assert sent == previous.messages
        previous = result


def test_batches_take_a_stale_duplicate_among_the_newest_turns_first() -> None:
    """A file read again within the newest turns: the cache-aware batch that marks the old turns
    takes the first read with them (the later one is there, whole), where age alone waits for
    it to grow old; no batch comes sooner for it."""
    chat = [[{"role": "user", "content": "go on"}, {"role": "assistant", "content": "ok"}]] * 20
    messages = conversation(  # a long conversation: the batch pays for itself
        *chat,
        call("b0", "Bash", {"command": "make all"}, "z" * 4000),
        call("r1", "Read", {"file_path": "a.py"}, "y" * 2000),
        call("b1", "Bash", {"command": "make"}, "z" * 100),
        call("r2", "Read", {"file_path": "a.py"}, "y" * 2000),
    )
    chosen = Settings(threshold=10**9, min_gain=100, keep_recent=3)
    stale_first = stable(messages, chosen)
    age_only = stable(messages, replace(chosen, stale=False))
    assert contents(stale_first.messages)[:2] == [
        "[truncated: Bash result, 4000 chars]",
        "[superseded: Read a.py, read again 2 turns later]",
    ]
    assert contents(age_only.messages)[:2] == ["[truncated: Bash result, 4000 chars]", "y" * 2000]
    assert stale_first.plan.batches == age_only.plan.batches == 1


# --- the stale share (estimate --json) -----------------------------------------------------------


def test_the_stale_share_of_tool_result_tokens() -> None:
    messages = conversation(
        call("r1", "Read", {"file_path": "a.py"}, "y" * 400),
        call("r2", "Read", {"file_path": "a.py"}, "y" * 400),
        call("b1", "Bash", {"command": "make"}, "z" * 800),
    )
    assert stale_report(messages) == {
        "results": 3,
        "stale_results": 1,
        "result_tokens": 400,
        "stale_tokens": 100,
        "share": 0.25,
    }


# --- through the command line: the config file's [tools], --age-only -----------------------------


def test_the_config_files_tools_table_and_age_only_reach_micro(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[tools.fetch_page]\nkind = "read"\nkeys = ["url"]\n')
    source = tmp_path / "conversation.json"
    messages = conversation(
        call("f1", "fetch_page", {"url": "https://x"}),
        call("f2", "fetch_page", {"url": "https://x"}),
        call("b1", "Bash", {"command": "make"}),
    )
    source.write_text(json.dumps(messages))
    env = {**os.environ, "CTXPACK_CONFIG": str(config)}
    stale = json.loads(run("micro", "--keep-recent", "2", source, env=env).stdout)
    assert contents(stale)[0] == "[superseded: fetch_page https://x, read again 1 turn later]"
    aged = json.loads(run("micro", "--age-only", "--keep-recent", "2", source, env=env).stdout)
    assert contents(aged)[0] == "[truncated: fetch_page result, 400 chars]"
    config.write_text('[tools.fetch_page]\nkind = "fetch"\n')
    refused = run("micro", source, env=env)
    assert refused.returncode == 78
    assert refused.stderr.decode().strip() == (
        f"ctxpack: {config}: [tools].fetch_page.kind must be one of "
        "read, write, patch, list, run, search, none"
    )
