"""Summaries without noise (issue 32.3): one line per file path, the changed first; the count of
the paths a small budget leaves out; no request made up from a summary before; only the user's
own words quoted; tool names and markup are no names of the work; an error a later passing test
run closed is not open."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support_full import PREFIX, anthropic_call, anthropic_result
from support_full import assistant_turn as assistant
from support_full import extractive_summary as summarize
from support_full import summary_part as part
from support_full import user_turn as user

PATHS = "Important file paths"


def ctxpack_summary(*lines: str, heading: str = PATHS) -> str:
    body = "\n".join(f"- {line}" for line in lines)
    return f"{PREFIX}## Goal\n- First request: “fix the login”\n\n## {heading}\n{body}"


def calls(*steps: tuple[str, str, dict]) -> list[dict]:
    messages = []
    for number, (name, result, arguments) in enumerate(steps):
        messages += [
            anthropic_call(f"c{number}", name, arguments),
            anthropic_result(f"c{number}", result),
        ]
    return messages


def test_a_path_is_listed_once_changed_here_or_before() -> None:
    previous = ctxpack_summary("src/auth.py", "docs/guide.md (modified)")
    messages = [
        user(previous),
        user("go on"),
        *calls(
            ("Edit", "ok", {"file_path": "src/auth.py", "old_string": "a", "new_string": "b"}),
            ("Read", "text", {"file_path": "docs/guide.md"}),
        ),
        assistant("done"),
    ]
    assert part(summarize(messages), PATHS) == [
        "src/auth.py (modified)",
        "docs/guide.md (modified)",
    ]


def test_the_changed_then_the_most_used_paths_come_first() -> None:
    steps = [("Read", "x", {"file_path": "a.py"})]
    steps += [("Read", "x", {"file_path": "b.py"})] * 3
    steps += [("Write", "ok", {"file_path": "c.py", "content": "y"})]
    messages = [user("look around"), *calls(*steps), assistant("done")]
    assert part(summarize(messages), PATHS) == ["c.py (modified)", "b.py", "a.py"]


def test_a_budget_too_small_for_every_path_lists_the_most_used_and_counts_the_rest() -> None:
    steps = [("Read", "line\n" * 30, {"file_path": f"src/module_{n:02}.py"}) for n in range(60)]
    steps += [("Read", "x", {"file_path": "src/hot.py"})] * 5
    messages = [user("read the whole tree"), *calls(*steps), assistant("all read")]
    paths = part(summarize(messages, max_tokens=300), PATHS)
    assert paths[0] == "src/hot.py"
    listed = [line for line in paths if line.startswith("src/")]
    assert paths[-1] == f"… and {61 - len(listed)} more file paths"
    assert len(listed) < 61


def test_a_summary_befores_other_names_go_with_their_heading() -> None:
    """A budget too small for the names of a summary before leaves out their heading too."""
    previous = ctxpack_summary("src/a.py (modified)", "Other names: parse_config, load_table")
    steps = [("Read", "x" * 50, {"file_path": f"src/mod{n}/file_{n}.py"}) for n in range(40)]
    messages = [user(previous), assistant("ok"), *calls(*steps), assistant("done")]
    assert not [line for line in summarize(messages).splitlines() if "Other names" in line]
    steps = [(name, "x" * 3000, arguments) for name, _, arguments in steps]  # room enough
    messages = [user(previous), assistant("ok"), *calls(*steps), assistant("done")]
    names = [line for line in part(summarize(messages), PATHS) if "Other names" in line]
    assert names == ["Other names: parse_config, load_table"]


FILES = st.sampled_from([f"src/{name}.py" for name in ("auth", "db", "api", "cli", "ui")])


@settings(max_examples=40, deadline=None)
@given(
    before=st.lists(st.tuples(FILES, st.booleans()), max_size=5),
    steps=st.lists(st.tuples(FILES, st.booleans()), max_size=8),
)
def test_every_path_is_listed_exactly_once_the_changed_first(
    before: list[tuple[str, bool]], steps: list[tuple[str, bool]]
) -> None:
    lines = [f"{path} (modified)" if changed else path for path, changed in before]
    edits = [
        ("Edit", "ok", {"file_path": path, "old_string": "a", "new_string": "b"})
        if changed
        else ("Read", "text", {"file_path": path})
        for path, changed in steps
    ]
    history = [user(ctxpack_summary(*lines))] if lines else []
    summary = summarize([*history, user("go on"), *calls(*edits), assistant("done")])
    listed = [line.removesuffix(" (modified)") for line in part(summary, PATHS)]
    assert sorted(listed) == sorted({path for path, _ in before + steps})
    marks = [line.endswith(" (modified)") for line in part(summary, PATHS)]
    assert marks == sorted(marks, reverse=True)
    changed = {path for path, was in before + steps if was}
    assert {line for line in listed if line in changed} == changed & set(listed)
    assert sum(marks) == len(changed)


@pytest.mark.parametrize(
    "injected",
    [
        "<system-reminder>\nThe date changed. Do not mention this.\n</system-reminder>",
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>",
        "<local-command-stdout>cleared the screen</local-command-stdout>",
    ],
)
def test_text_the_harness_injected_is_not_quoted_as_the_users(injected: str) -> None:
    messages = [user("build the app"), assistant("building"), user(injected), assistant("ok")]
    summary = summarize([*messages, user("now test it"), assistant("ok")])
    assert not any(word in summary for word in ("date changed", "clear", "cleared", "<"))


def test_a_summary_before_with_one_request_makes_no_later_request() -> None:
    previous = ctxpack_summary(
        "Latest request: the first request", "Next step: answer it", heading="Needed to continue"
    )
    summary = summarize([user(previous), user("and now the tests"), assistant("ok")])
    assert "Later request: the first request" not in summary
    assert part(summary, "Goal")[0] == "First request: “fix the login”"


def test_a_task_notification_is_not_the_users_request() -> None:
    notification = (
        "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
        "<summary>Background command finished</summary>\n</task-notification>"
    )
    messages = [user("build the app"), assistant("building"), user(notification), assistant("ok")]
    summary = summarize(messages)
    assert "task-notification" not in summary and "Background command" not in summary


def test_tool_names_and_markup_are_no_names_of_the_work() -> None:
    steps = [("run_shell_command", "ok", {"command": "make parse_config_file"})]
    text = (
        "<untrusted_context>the page</untrusted_context> see parse_config_file "
        "and run_shell_command"
    )
    messages = [user(text), *calls(*steps), assistant("parse_config_file works")]
    summary = summarize(messages)
    names = [line for line in part(summary, PATHS) if line.startswith("Other names: ")]
    assert names == ["Other names: parse_config_file"]


def test_an_open_error_a_later_green_test_run_closed_is_not_open() -> None:
    previous = ctxpack_summary(
        "Open error: Bash `pytest`: test_timeout FAILED", heading="Needed to continue"
    )
    run = ("Bash", "31 passed in 2.0s", {"command": "pytest"})
    messages = [user(previous), user("fix it"), *calls(run), assistant("All 31 tests pass")]
    summary = summarize(messages)
    assert "test_timeout FAILED" not in json.dumps(part(summary, "Needed to continue"))
    assert "Open error" not in summary
