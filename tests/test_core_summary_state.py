"""Issue 23: where the work stands — the next step from how the history ends, the agent's open
tasks, the last errors with their text and whether a later step fixed them; and, per real
session (the corpus, the agents' own session files), a next step checked by hand."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from corpus_full import measure
from helpers import CORPUS, TESTS
from support_full import (
    anthropic_call,
    anthropic_result,
    openai_call,
)
from support_full import assistant_turn as assistant
from support_full import extractive_summary as summarize
from support_full import summary_part as part
from support_full import user_turn as user

from compactor_core.agents.claude_code import ClaudeCode
from compactor_core.agents.codex import Codex
from compactor_core.compaction.full import full_compact
from compactor_core.providers.extractive import ExtractiveSummarizer
from compactor_core.session_files import index as session
from compactor_core.settings import Settings

Message = dict[str, Any]
NOT_READ = "File has not been read yet. Read it first before writing to it."


def next_step(summary: str) -> str:
    (step,) = [
        line for line in summary.splitlines() if line.startswith(("- Next step: ", "- 下一步: "))
    ]
    return step.split(": ", 1)[1]


# --- the next step -------------------------------------------------------------------------------


def test_a_reply_that_ended_the_turn_answered_the_request() -> None:
    messages = [
        user("run the tests"),
        anthropic_call("t", "Bash", {"command": "pytest"}, "Running them."),
        anthropic_result("t", "3 passed", is_error=False),
        assistant("All green: 3 passed."),
    ]
    assert next_step(summarize(messages)) == "none — the last request was answered"
    assert next_step(summarize(messages, "zh")) == "无——最新请求已得到答复"


def test_a_reply_that_asks_waits_for_the_answer() -> None:
    messages = [user("fix it"), assistant("Fixed and tested. Want me to commit this?")]
    assert next_step(summarize(messages)) == (
        "none — the last request was answered; "
        "waiting for the user's answer to: “Want me to commit this?”"
    )


def test_a_reply_that_states_a_plan_makes_it_the_next_step() -> None:
    messages = [
        user("push it"),
        assistant("The push was rejected. Next I will rebase and push."),
    ]
    assert next_step(summarize(messages)) == "Next I will rebase and push."
    # "let me know" is no plan of the assistant's
    messages = [user("cancel it"), assistant("Cancelled. Let me know if there is more.")]
    assert next_step(summarize(messages)) == "none — the last request was answered"


def test_a_request_without_a_reply_is_to_be_answered() -> None:
    messages = [user("first"), assistant("Done."), user("and now the docs")]
    assert next_step(summarize(messages)) == "answer the latest request"


def test_work_in_the_middle_of_a_turn_goes_on_from_what_was_done_since_the_plan() -> None:
    """The plan in the last reply was carried out by the calls after it: not "write the plan"
    again, but what came of it."""
    messages = [
        user("write the release plan"),
        anthropic_call(
            "w1", "Write", {"file_path": "plan.md", "content": "a\nb"}, "Let me write the plan."
        ),
        anthropic_result(
            "w1",
            f"<tool_use_error>{NOT_READ}</tool_use_error>",
            is_error=True,
        ),
        anthropic_call("r1", "Read", {"file_path": "plan.md"}),
        anthropic_result("r1", "old plan"),
        anthropic_call("w2", "Write", {"file_path": "plan.md", "content": "a\nb\nc"}),
        anthropic_result("w2", "The file plan.md has been updated successfully."),
    ]
    summary = summarize(messages)
    assert next_step(summary) == (
        "continue the latest request; it was at: “Let me write the plan.”; "
        "done since: Write plan.md: 3 lines"
    )
    work = part(summary, "Work done")
    assert f"Write plan.md: 2 lines (failed: {NOT_READ})" in work
    assert part(summary, "Key tool results") == [
        f"Write (error, fixed later): `plan.md`: {NOT_READ}"
    ]


def test_calls_still_without_a_result_are_waited_for() -> None:
    messages = [
        user("finish up"),
        openai_call([("c1", "finish", '{"message": "done"}')], "Finishing."),
    ]
    assert next_step(summarize(messages)) == "wait for the result of `finish`"


def test_the_agents_open_tasks_and_the_one_in_progress() -> None:
    """Claude Code's task tools (TaskCreate numbers a task in its result, TaskUpdate changes one)
    and its TodoWrite, Codex's update_plan: what is still open after the last call."""
    messages = [
        user("fix the three bugs"),
        anthropic_call("c1", "TaskCreate", {"subject": "Fix parsing"}),
        anthropic_result("c1", "Task #1 created successfully: Fix parsing"),
        anthropic_call("c2", "TaskCreate", {"subject": "Fix routing"}),
        anthropic_result("c2", "Task #2 created successfully: Fix routing"),
        anthropic_call("c3", "TaskCreate", {"subject": "Investigate reset"}),
        anthropic_result("c3", "Task #3 created successfully: Investigate reset"),
        anthropic_call("u1", "TaskUpdate", {"taskId": "1", "status": "completed"}),
        anthropic_result("u1", "Updated task #1 status"),
        anthropic_call("u2", "TaskUpdate", {"taskId": "2", "status": "in_progress"}),
        anthropic_result("u2", "Updated task #2 status"),
        anthropic_call(
            "e1", "Edit", {"file_path": "route.go", "old_string": "a", "new_string": "b"}
        ),
        anthropic_result("e1", "ok"),
    ]
    summary = summarize(messages)
    needed = part(summary, "Needed to continue")
    assert "Open tasks: #2 Fix routing (in progress); #3 Investigate reset (pending)" in needed
    assert next_step(summary) == (
        "continue the latest request (#2 Fix routing (in progress)); "
        "done since: Edit route.go: + “b”"
    )
    assert "Bookkeeping: TaskCreate ×3, TaskUpdate ×2" in part(summary, "Work done")
    todos = [
        user("go"),
        anthropic_call(
            "t",
            "TodoWrite",
            {
                "todos": [
                    {
                        "content": "Write tests",
                        "status": "completed",
                        "activeForm": "Writing tests",
                    },
                    {"content": "Update docs", "status": "pending", "activeForm": "Updating docs"},
                ]
            },
        ),
        anthropic_result("t", "Todos have been modified successfully."),
    ]
    assert "Open tasks: Update docs (pending)" in part(summarize(todos), "Needed to continue")
    plan = [
        user("go"),
        anthropic_call(
            "p",
            "update_plan",
            json.dumps(
                {
                    "plan": [
                        {"step": "Read the code", "status": "completed"},
                        {"step": "Patch the parser", "status": "in_progress"},
                    ]
                }
            ),
        ),
        anthropic_result("p", "Plan updated"),
    ]
    assert "未完成的任务: Patch the parser (进行中)" in part(
        summarize(plan, "zh"), "后续所需上下文"
    )


# --- the last errors with their text -------------------------------------------------------------


def test_an_error_says_what_failed_and_why() -> None:
    """The telling line of a failure: a compiler's or a test's ``file:line:`` message before a
    bare ``Exit code 1`` or a generic "task failed"; a merge's conflict."""
    go_test = (
        'Exit code 1\n=== RUN   TestFind\n    state_test.go:333: Find() = "other", want "current"\n'
        "--- FAIL: TestFind (0.05s)\nFAIL\n"
    )
    lint = (
        "Exit code 1\n[lint] ERROR task failed\n\nstrategy/auto_commit.go:1: : # pkg\n"
        "strategy/state_test.go:300:19: undefined: plumbing.Signature (typecheck)\n"
    )
    merge = (
        "Exit code 1\nAuto-merging a.go\nCONFLICT (content): Merge conflict in a.go\n"
        "Automatic merge failed; fix conflicts and then commit the result."
    )
    messages = [user("make it pass")]
    for n, (command, output) in enumerate(
        [("go test ./...", go_test), ("mise run lint", lint), ("git merge origin/main", merge)]
    ):
        messages += [
            anthropic_call(f"c{n}", "Bash", {"command": command}),
            anthropic_result(f"c{n}", output, is_error=True),
        ]
    needed = part(summarize(messages), "Needed to continue")
    assert needed[1:4] == [
        "Open error: Bash `git merge origin/main`: CONFLICT (content): Merge conflict in a.go",
        "Open error: Bash `mise run lint`: "
        "strategy/state_test.go:300:19: undefined: plumbing.Signature (typecheck)",
        'Open error: Bash `go test ./...`: state_test.go:333: Find() = "other", want "current"',
    ]


def test_a_test_run_whose_output_counts_failures_failed_whatever_its_exit() -> None:
    """``mise run test 2>&1 | tail`` exits as tail does: the output tells."""
    output = "--- FAIL: TestShadow (1.15s)\n    x_test.go:222: StepCount should be 0, got 1\nFAIL"
    messages = [
        user("run the tests"),
        anthropic_call("t", "Bash", {"command": "mise run test 2>&1 | tail -10"}),
        anthropic_result("t", output, is_error=False),
    ]
    summary = summarize(messages)
    assert part(summary, "Work done")[0] == (
        "Tests `mise run test 2>&1 | tail -10`: failed: x_test.go:222: StepCount should be 0, got 1"
    )
    assert any(line.startswith("Open error: Bash") for line in part(summary, "Needed to continue"))


def test_a_refused_call_is_the_users_word_not_an_open_error() -> None:
    refused = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
        "was a file edit, the new_string was NOT written to the file). To tell you how to proceed, "
        "the user said:\nlet's do this as a separate PR"
    )
    messages = [
        user("route the logs"),
        anthropic_call(
            "e", "Edit", {"file_path": "logger.go", "old_string": "a", "new_string": "// one file"}
        ),
        anthropic_result("e", refused, is_error=True),
        assistant("Understood, leaving logger.go alone."),
    ]
    summary = summarize(messages)
    assert not any(line.startswith("Open error") for line in part(summary, "Needed to continue"))
    assert part(summary, "Key constraints") == [
        "Refused by the user: Edit logger.go: + “// one file”: “let's do this as a separate PR”"
    ]
    assert part(summary, "Work done")[0] == (
        "Edit logger.go: + “// one file” (refused by the user: “let's do this as a separate PR”)"
    )
    assert "doesn't want to proceed" not in summary  # the harness's sentence is not quoted


def test_a_refusal_without_words_takes_the_users_next_words_as_its_reason() -> None:
    stop = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
        "was a file edit, the new_string was NOT written to the file). STOP what you are doing and "
        "wait for the user to tell you how to proceed."
    )
    messages = [
        user("review the PR"),
        anthropic_call("g", "Bash", {"command": "gh api repos/o/r/pulls/1/comments"}),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "g", "content": stop, "is_error": True},
                {"type": "text", "text": "[Request interrupted by user for tool use]"},
                {"type": "text", "text": "ah wait, we still have merge issues first"},
            ],
        },
        assistant("Looking at the merge first."),
    ]
    summary = summarize(messages)
    assert part(summary, "Key constraints") == [
        "Refused by the user: `gh api repos/o/r/pulls/1/comments`: "
        "“ah wait, we still have merge issues first”"
    ]


# --- real sessions: the next step checked by hand ------------------------------------------------

# What each corpus session's summary must say comes next, read by hand from its end: the part
# of the history that is summarized (the pending turn is set aside and comes back after it).
CORPUS_NEXT = {
    # ends with "All green … Want me to commit this?": answered, the user's answer awaited;
    # the agent's task list still holds #4
    "cc_entire_1284c080": (
        "none — the last request was answered; "
        "waiting for the user's answer to: “Want me to commit this?”",
        "Open tasks: #4 Investigate: entire reset may not clean up session state files (pending)",
    ),
    # "Let me write the plan." — then a refused Write, a Read, a Write that succeeded; the
    # request (gen-docs, changelog, checks, a PR by the template) is not done
    "cc_kimi_516b7270": (
        "继续处理最新请求; 进行到: “Let me write the plan.”; "
        "之后已完成: Write /Users/moonshot/.claude/plans/drifting-rolling-quilt.md: 36 行",
        None,
    ),
    # the agent gave up and called finish, which has no result yet
    "oai_openhands_ponyc4593": ("wait for the result of `finish`", None),
    # checking the remaining reservations one by one: H8Q05L's flights were just looked up
    "oai_taubench_airline_task33": (
        "continue the latest request; it was at: “Let's proceed with checking the next "
        "reservation, **H8Q05L**.”; done since: search_direct_flight "
        '{"origin": "JFK", "destination": "ATL", "date": "2024-05-24"}: ok',
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(CORPUS_NEXT))
def test_each_corpus_session_has_its_true_next_step(name: str) -> None:
    summary = measure(CORPUS / f"{name}.json").summary
    step, also = CORPUS_NEXT[name]
    assert next_step(summary) == step
    assert also is None or f"- {also}" in summary.splitlines()


def view(path: Path) -> list[Message]:
    data = path.read_bytes()
    handle = io.BytesIO(data)
    agent = Codex() if path.parent.name == "codex" else ClaudeCode()
    return session.load_view(handle, session.index_session(handle, agent, str(path)))


@pytest.mark.parametrize(
    "name", ["claude_code/session", "claude_code/compacted", "codex/plain", "codex/compacted"]
)
def test_the_agents_own_sessions_ended_answered(name: str) -> None:
    """The real agents' sessions (both Codex rollouts end with ``task_complete``) end with the
    assistant's reply to the last request: nothing is left to do but wait for the user."""
    result = full_compact(
        view(TESTS / "fixtures" / f"{name}.jsonl"), ExtractiveSummarizer(), Settings()
    )
    assert result.status == "compacted"
    assert next_step(result.summary or "") == "none — the last request was answered"
