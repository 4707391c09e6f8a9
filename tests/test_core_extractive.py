"""SPEC §7: the built-in extractive summarizer, alone and on the real transcripts of the corpus."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from checks_full import first_request, named, pair_violations, quotes_request, tool_paths
from corpus_full import PATHS_TARGET, measure, size_bound
from helpers import CORPUS, corpus_files
from support_full import (
    PREFIX,
    SEED_ACK,
    anthropic_call,
    anthropic_result,
    openai_call,
    openai_result,
    session_openai,
    session_zh,
)

from compactor_core.compaction.estimate import estimate, quarters_to_tokens, text_quarters
from compactor_core.compaction.full import full_compact
from compactor_core.providers.base import SummaryRequest
from compactor_core.providers.extractive import MIN_TOKENS, ExtractiveSummarizer

Message = dict[str, Any]
HEADINGS = {
    "zh": ["目标", "已完成工作", "关键约束", "重要文件路径", "工具执行结果要点", "后续所需上下文"],
    "en": [
        "Goal",
        "Work done",
        "Key constraints",
        "Important file paths",
        "Key tool results",
        "Needed to continue",
    ],
}


def summarize(messages: list[Message], lang: str = "zh", max_tokens: int = 2000) -> str:
    request = SummaryRequest("system", "user", max_tokens, messages, lang)
    return ExtractiveSummarizer().summarize(request)


def tokens(text: str) -> int:
    return quarters_to_tokens(text_quarters([text]))


def sections(summary: str) -> dict[str, list[str]]:
    """Heading -> its bullet lines."""
    found: dict[str, list[str]] = {}
    current = None
    for line in summary.splitlines():
        if line.startswith("## "):
            current = line[3:]
            found[current] = []
        elif line.startswith("- ") and current is not None:
            found[current].append(line[2:])
        elif line:
            raise AssertionError(f"stray line {line!r}")
    return found


def source_of(messages: list[Message]) -> list[Message]:
    return [m for m in messages[:-1] if m.get("role") != "system"]


# --- what it writes ------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_six_parts_in_the_prompts_order_and_language(lang: str) -> None:
    summary = summarize(source_of(session_zh()), lang, 2000)
    found = list(sections(summary))
    assert found == [heading for heading in HEADINGS[lang] if heading in found]
    goal, work, _, paths, _, needed = HEADINGS[lang]
    assert {goal, work, paths, needed} <= set(found)  # a small history: no room for more


def test_unknown_language_falls_back_to_english() -> None:
    found = list(sections(summarize(source_of(session_zh()), "fr")))
    assert found == [heading for heading in HEADINGS["en"] if heading in found]
    assert {"Goal", "Work done", "Needed to continue"} <= set(found)


def test_deterministic_and_does_not_modify_the_messages() -> None:
    messages = source_of(session_zh())
    before = copy.deepcopy(messages)
    assert summarize(messages) == summarize(copy.deepcopy(messages))
    assert messages == before


def test_what_the_summary_holds_zh() -> None:
    parts = sections(summarize(source_of(session_zh())))
    assert parts["目标"] == [
        "最初请求: “登录测试失败了，请修复 src/auth.py，但不要修改数据库结构。”"
    ]
    assert parts["已完成工作"][0] == "edit_file src/auth.py: + “return check(token)”"
    assert "工具执行结果要点" not in parts  # a command's outcome and a file are told elsewhere
    assert parts["重要文件路径"] == [  # the names the work touched, too
        "src/auth.py (已修改)",
        "其他名称: tests/test_login.py, test_expired",
    ]
    assert parts["后续所需上下文"] == [
        "最新请求: 即最初请求",
        "未解决的错误: bash `pytest -x tests/test_login.py`: "
        "FAILED tests/test_login.py::test_expired - expected 401, got 200",
        "最近回复: 已修复：过期令牌现在返回 401。",
        "下一步: 无——最新请求已得到答复",  # the reply ended the turn
    ]


def test_what_the_summary_holds_openai_en() -> None:
    messages = source_of(session_openai())
    parts = sections(summarize(messages, "en"))
    assert parts["Goal"] == ["First request: “Change reservation ABC123 to the 3 pm flight.”"]
    assert parts["Work done"] == ["Looked at: get_reservation ×1, search_flights ×1"]
    assert "get_reservation: {id: ABC123" not in summarize(messages, "en")
    assert parts["Key tool results"] == [
        'get_reservation: {"id": "ABC123", "flight": "UA100"}',
        "search_flights: UA200 15:00",
    ]
    assert parts["Needed to continue"] == [
        "Latest request: the first request",
        "Latest reply: UA200 leaves at 3 pm. Shall I switch?",
        "Next step: none — the last request was answered; "
        "waiting for the user's answer to: “Shall I switch?”",
    ]


def test_paths_from_both_styles_and_every_path_field() -> None:
    messages = [
        {"role": "user", "content": "look around"},
        anthropic_call("a", "Read", {"file_path": "/repo/a.py"}),
        anthropic_result("a", "x"),
        anthropic_call("b", "NotebookEdit", {"notebook_path": "/repo/n.ipynb"}),
        anthropic_result("b", "x"),
        anthropic_call("c", "Grep", {"pattern": "TODO", "path": "/repo/src"}),
        anthropic_result("c", "x"),
        openai_call([("d", "upload", json.dumps({"filename": "报告.pdf"}))]),
        openai_result("d", "x"),
        openai_call([("e", "view", '{"path": "/repo/b.py"}')]),
        openai_result("e", "x"),
    ]
    summary = summarize(messages, "en")
    paths = tool_paths(messages)
    assert paths == ["/repo/a.py", "/repo/n.ipynb", "/repo/src", "报告.pdf", "/repo/b.py"]
    assert named(summary, paths) == paths
    assert "/repo/n.ipynb (modified)" in sections(summary)["Important file paths"]


def test_an_editors_one_word_command_decides_whether_it_writes() -> None:
    messages = [{"role": "user", "content": "fix it"}]
    for n, command in enumerate(["view", "str_replace", "create", "view"]):
        path = f"/w/{command}{n}.pony"
        arguments = json.dumps({"command": command, "path": path})
        messages += [
            openai_call([(f"c{n}", "str_replace_editor", arguments)]),
            openai_result(f"c{n}", "ok"),
        ]
    parts = sections(summarize(messages, "en"))
    assert parts["Important file paths"] == [  # the changed ones first
        "/w/str_replace1.pony (modified)",
        "/w/create2.pony (modified)",
        "/w/view0.pony",
        "/w/view3.pony",
    ]
    assert parts["Work done"] == [
        "str_replace_editor /w/create2.pony",
        "str_replace_editor /w/str_replace1.pony",
        "Looked at: str_replace_editor ×2",
    ]


def test_open_errors_are_needed_to_continue_and_an_error_heading_brings_its_line() -> None:
    messages = [
        {"role": "user", "content": "run everything"},
        anthropic_call("a", "bash", {"command": "make"}),
        anthropic_result("a", "built ok"),
        anthropic_call("b", "bash", {"command": "make test"}),
        anthropic_result("b", "ERROR:\n\n  test_x expected 1 got 2\nmore"),
        anthropic_call("c", "bash", {"command": "rm x"}),
        anthropic_result("c", "nope", is_error=True),
    ]
    parts = sections(summarize(messages, "en"))
    assert parts["Needed to continue"][1:3] == [
        "Open error: bash `rm x`: nope",
        "Open error: bash `make test`: ERROR: test_x expected 1 got 2",
    ]
    assert parts["Key tool results"] == ["bash: built ok"]


def test_an_error_fixed_later_is_a_result_not_an_open_error() -> None:
    messages = [
        {"role": "user", "content": "make it build"},
        anthropic_call("a", "bash", {"command": "make all"}, "Building."),
        anthropic_result("a", "Exit code 2\nmain.c:3: error: missing ;", is_error=True),
        anthropic_call("b", "Edit", {"file_path": "main.c", "old_string": "x", "new_string": "x;"}),
        anthropic_result("b", "ok"),
        anthropic_call("c", "bash", {"command": "make all"}),
        anthropic_result("c", "built", is_error=False),
    ]
    parts = sections(summarize(messages, "en"))
    assert parts["Key tool results"][0] == (
        "bash (error, fixed later): `make all`: main.c:3: error: missing ;"
    )
    assert not any(line.startswith("Open error") for line in parts["Needed to continue"])
    assert parts["Work done"][:3] == [
        "Ran `make all`: ok",
        "Edit main.c: + “x;”",
        "Ran `make all`: failed: main.c:3: error: missing ;",
    ]


def test_a_failed_call_whose_result_was_truncated_is_named_without_the_marker() -> None:
    messages = [{"role": "user", "content": "go"}]
    for n, command in enumerate(["make a", "make b"]):
        messages += [
            anthropic_call(f"t{n}", "Bash", {"command": command}),
            anthropic_result(f"t{n}", "[truncated: Bash result, 99 chars]", is_error=True),
        ]
    parts = sections(summarize(messages, "zh"))
    assert parts["后续所需上下文"][1:3] == [
        "未解决的错误: Bash `make b`",
        "未解决的错误: Bash `make a`",
    ]
    assert parts["已完成工作"][:2] == ["运行 `make b`: 失败", "运行 `make a`: 失败"]


def test_calls_without_a_result_are_waited_for() -> None:
    messages = [
        {"role": "user", "content": "finish up"},
        openai_call([("c1", "finish", "{}")], "Done, finishing."),
    ]
    needed = sections(summarize(messages, "en"))["Needed to continue"]
    assert needed[-1] == "Next step: wait for the result of `finish`"


def test_later_and_latest_requests() -> None:
    messages = [
        {"role": "user", "content": "first thing"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "second thing"}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "third thing, and never touch prod"},
    ]
    parts = sections(summarize(messages, "en"))
    assert parts["Goal"] == [  # the latest is in "needed to continue", not twice
        "First request: “first thing”",
        "Later request: “second thing”",
    ]
    assert parts["Key constraints"] == ["third thing, and never touch prod"]
    assert "Latest request: “third thing, and never touch prod”" in parts["Needed to continue"]


# --- the budget ----------------------------------------------------------------------------------


def big_history(turns: int = 200) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": "重构整个项目，保持接口不变。" * 20}]
    for n in range(turns):
        messages += [
            {"role": "assistant", "content": f"Now step {n}. Then the next one."},
            anthropic_call(f"t{n}", "Edit", {"file_path": f"/src/module_{n}/file_{n}.py"}),
            anthropic_result(f"t{n}", f"Traceback: error {n} in module {n}\n" + "x" * 500),
            {"role": "user", "content": f"please also do thing {n}, and never break the build"},
        ]
    return messages


@pytest.mark.parametrize("max_tokens", [300, 800, 2000])
def test_the_summary_stays_within_max_tokens(max_tokens: int) -> None:
    summary = summarize(big_history(), "zh", max_tokens)
    assert tokens(summary) <= max_tokens
    assert tokens(summary) > max_tokens * 0.8  # it uses what it may


def test_the_summary_takes_at_most_a_quarter_of_the_history() -> None:
    for turns in (5, 10, 20, 40):
        messages: list[Message] = [{"role": "user", "content": "make the build green"}]
        for n in range(turns):
            messages += [
                {"role": "assistant", "content": f"Step {n}: checking the build once more now."},
                anthropic_call(f"t{n}", "bash", {"command": f"make target{n}"}),
                anthropic_result(f"t{n}", f"error: target{n} failed\n" + "log line\n" * 40),
                {"role": "user", "content": f"also look at warning {n}, and do not skip tests"},
            ]
        summary = summarize(messages)
        assert tokens(summary) <= max(MIN_TOKENS, estimate(messages) // 4)
        assert tokens(summary) > min(estimate(messages) // 4, 2000) * 0.8


def test_the_essentials_may_take_more_than_a_quarter() -> None:
    messages = [{"role": "user", "content": "touch every file"}]
    for n in range(60):
        path = f"/repo/package_{n}/module_{n}.py"
        messages += [
            anthropic_call(f"t{n}", "Write", {"file_path": path}),
            anthropic_result(f"t{n}", "ok"),
        ]
    summary = summarize(messages, "en")
    paths = tool_paths(messages)
    assert named(summary, paths) == paths
    assert estimate(messages) // 4 < tokens(summary) < estimate(messages)


def test_the_most_important_lines_survive_a_tight_budget() -> None:
    summary = summarize(big_history(), "en", 300)
    parts = sections(summary)
    assert parts["Goal"][0].startswith("First request: “重构整个项目")
    assert parts["Needed to continue"] == [  # always there
        "Latest request: “please also do thing 199, and never break the build”",
        "Next step: answer the latest request",  # the history ends with it, unanswered
    ]
    assert len(parts["Important file paths"]) > 5  # then the paths
    assert "Key tool results" not in parts  # lower priorities do not fit


def test_a_long_first_request_is_shortened_not_dropped() -> None:
    messages = [
        {"role": "user", "content": "请修复登录的问题。" * 400},
        {"role": "assistant", "content": "好"},
    ]
    summary = summarize(messages, "zh", 400)
    assert tokens(summary) <= 400
    (goal,) = sections(summary)["目标"]
    assert goal.startswith("最初请求: “请修复登录的问题。请修复") and goal.endswith("…")


def test_a_tiny_history_fails_the_no_gain_guard() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    messages.append({"role": "user", "content": "bye"})
    result = full_compact(messages, ExtractiveSummarizer())
    assert result.status == "failed" and result.messages is messages
    assert "not smaller" in str(result.error)


# --- rolling summaries ---------------------------------------------------------------------------


def test_a_second_compaction_carries_paths_and_requests_forward() -> None:
    first = full_compact(big_history(30), ExtractiveSummarizer())
    assert first.status == "compacted"
    paths = named(first.summary or "", [f"/src/module_{n}/file_{n}.py" for n in range(30)])
    assert len(paths) == 30
    more = [
        anthropic_call("n1", "Write", {"file_path": "/src/new.py", "content": "x"}),
        anthropic_result("n1", "written"),
        {"role": "assistant", "content": "Added /src/new.py."},
        {"role": "user", "content": "now run the tests"},
    ]
    second = full_compact([*first.messages, *more], ExtractiveSummarizer())
    assert second.status == "compacted"
    summary = second.summary or ""
    assert named(summary, paths) == paths
    assert "/src/new.py (已修改)" in summary
    assert "重构整个项目" in sections(summary)["目标"][0]  # the first request is still the goal
    assert second.messages[-1] == more[-1]


def test_rolling_over_a_bare_summary_does_not_grow_it() -> None:
    first = full_compact(big_history(30), ExtractiveSummarizer())
    again = full_compact(first.messages, ExtractiveSummarizer())
    assert again.status == "compacted"
    assert again.summary == first.summary  # the acknowledgement adds nothing
    assert again.messages == first.messages


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_acknowledgement_after_a_previous_summary_is_not_a_plan(lang: str) -> None:
    ack = (
        SEED_ACK
        if lang == "zh"
        else "Got it. I understand the previous context and will continue working."
    )
    messages = [
        {"role": "user", "content": PREFIX + "## Goal\n- First request: “x”"},
        {"role": "assistant", "content": ack},
    ]
    assert ack not in summarize(messages, lang)


def test_a_previous_summary_written_by_a_model_is_kept_with_its_paths() -> None:
    previous = "We fixed src/auth.py and docs/guide.md; next: deploy to prod."
    messages = [
        {"role": "user", "content": PREFIX + previous},
        {"role": "assistant", "content": SEED_ACK},
        {"role": "user", "content": "deploy it"},
        {"role": "assistant", "content": "Deploying now."},
    ]
    parts = sections(summarize(messages, "en"))
    assert parts["Goal"][0] == f"Earlier summary: {previous}"
    assert parts["Important file paths"] == ["src/auth.py", "docs/guide.md"]


# --- the corpus (issue 3's bar) ------------------------------------------------------------------

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")


@needs_corpus
def test_the_corpus_is_there() -> None:
    assert len(corpus_files()) >= 4


@needs_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda path: path.stem)
def test_corpus_auto_meets_the_bar(path: Path) -> None:
    figures = measure(path)
    assert figures.status == "compacted"
    assert figures.pair_problems == 0
    assert figures.tokens_out <= figures.bound, (figures.tokens_out, figures.bound)
    assert figures.paths_share >= PATHS_TARGET, (figures.paths_named, figures.paths)
    assert figures.first_quoted
    assert figures.second_status == "compacted"
    assert figures.carried == figures.carried_of
    # issue 10: what an agent can act on
    assert figures.boilerplate == (), figures.boilerplate
    assert figures.latest_quoted
    assert figures.first_labels == 1
    assert figures.continues and figures.next_step
    assert figures.work_lines > 0
    assert figures.ok


def test_size_bound() -> None:
    assert size_bound(10_000, 1_000) == 2_000
    assert size_bound(10_000, 2_000) == 2_000
    assert size_bound(10_000, 5_000) == 6_000


def test_quotes_request_squeezes_whitespace_and_takes_200_characters() -> None:
    request = "line one\n\n  line two " + "x" * 300
    assert quotes_request("“line one line two " + "x" * 182 + "…”", request)
    assert not quotes_request("“line one line two " + "x" * 150 + "…”", request)
    assert (
        first_request(
            [
                {"role": "user", "content": PREFIX + "old"},
                {"role": "user", "content": " "},
                {"role": "user", "content": [{"type": "text", "text": "real"}]},
            ]
        )
        == "real"
    )


def test_pair_violations_checker() -> None:
    call, result = anthropic_call("a", "x", {}), anthropic_result("a", "r")
    assert pair_violations([call, result]) == []
    assert pair_violations([result, call]) == ["messages[0]: 'a'"]
    assert pair_violations([openai_result("b", "r")]) == ["messages[0]: 'b'"]
    both = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c"}, {"type": "tool_result", "tool_use_id": "c"}],
    }
    assert pair_violations([both]) == ["messages[0]: 'c'"]  # the call must come earlier
