"""``rescue``'s repairs (issue 26): on conversations of messages, by the APIs' own pairing rules
(judged by the local model server's code, tests/agents/limits.py), and on agents' session files
damaged the ways the trackers report (tests/agents/damage.py), judged by ``check``."""

from __future__ import annotations

import base64
import io
import json
from collections import Counter
from pathlib import Path

import pytest
from agents.damage import TOO_HEAVY, TOO_WIDE, cut_chain, huge_record, png, removed_result
from agents.limits import Limits, _anthropic_pairs, _chat_pairs, refusal
from helpers import TESTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import conversations

from compactor_core.compaction.pipeline import decide
from compactor_core.compaction.repairs import NO_RESULT, repair_messages
from compactor_core.ends.documents import open_document
from compactor_core.ends.sources import Given
from compactor_core.session_files.check import problems
from compactor_core.session_files.index import index_session, load_view
from compactor_core.session_files.registry import get
from compactor_core.settings import RunSettings, Settings

FIXTURES = TESTS / "fixtures"
CLAUDE = FIXTURES / "claude_code" / "session.jsonl"
CODEX = FIXTURES / "codex" / "plain.jsonl"
COPILOT = FIXTURES / "more_agents" / "copilot-cli.jsonl"
RESCUE = RunSettings("rescue", Settings(threshold=200_000), measure=True)
BROKEN = {"unanswered-call", "orphan-result", "dangling-parent"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def rescued(data: bytes, job: RunSettings = RESCUE) -> tuple[bytes, object]:
    """The file ``rescue`` makes of ``data``, by the one pipeline, and its outcome."""
    with open_document(Given(data, "<session>")) as document:
        subject = document.subject(job)
        outcome = decide(job, subject)
        return b"".join(subject.result_chunks()), outcome


def session_problems(data: bytes, format_name: str) -> set[str]:
    session = index_session(io.BytesIO(data), get(format_name), "<session>")
    return {problem.kind for problem in problems(session)}


# --- a conversation of messages ------------------------------------------------------------------


@st.composite
def damaged(draw: st.DrawFn, style: str) -> list[dict]:
    """A conversation whose results may be lost and which may gain results of no call."""
    messages = draw(conversations(style=style, max_turns=10, system=False))
    out = []
    for message in messages:
        if message.get("role") == "tool" and draw(st.booleans()):
            continue  # a result lost
        if isinstance(message.get("content"), list) and draw(st.booleans()):
            blocks = message["content"]
            message = {**message, "content": [b for b in blocks if b.get("type") != "tool_result"]}
        out.append(message)
        if draw(st.integers(0, 5)) == 0:  # a result nothing asked for
            out.append(
                {"role": "tool", "tool_call_id": "call_nobody", "content": "x"}
                if style == "openai"
                else {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nobody"}]}
            )
    return out


@given(damaged("anthropic"))
def test_after_rescue_every_call_has_one_result_and_every_result_its_call_anthropic(
    messages: list[dict],
) -> None:
    repaired, _ = repair_messages(messages)
    assert _anthropic_pairs(repaired) is None
    asked = [call for m in repaired for call in _ids(m, "tool_use", "id")]
    answered = [call for m in repaired for call in _ids(m, "tool_result", "tool_use_id")]
    assert sorted(asked) == sorted(answered)


@given(damaged("openai"))
def test_after_rescue_every_call_has_one_result_and_every_result_its_call_openai(
    messages: list[dict],
) -> None:
    repaired, _ = repair_messages(messages)
    assert _chat_pairs([*repaired, {"role": "user", "content": "next"}]) is None
    asked = [c["id"] for m in repaired for c in m.get("tool_calls") or ()]
    answered = [m["tool_call_id"] for m in repaired if m.get("role") == "tool"]
    assert sorted(asked) == sorted(answered)


@given(conversations(max_turns=8))
def test_a_sound_conversation_needs_no_repair(messages: list[dict]) -> None:
    sound, _ = repair_messages(messages)  # the strategy's own conversations may end mid-turn
    again, done = repair_messages(sound)
    assert again == sound and done == []


def _ids(message: dict, kind: str, key: str) -> list:
    content = message.get("content")
    return [b[key] for b in content if b.get("type") == kind] if isinstance(content, list) else []


def test_the_repairs_of_a_conversation_are_said_and_the_input_is_untouched() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash"}]},
        {"role": "user", "content": "and?"},
    ]
    before = json.dumps(messages)
    repaired, done = repair_messages(messages)
    assert json.dumps(messages) == before
    assert done == ["message 2: call a (Bash) without a result: answered with an error"]
    assert repaired[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": NO_RESULT,
        "is_error": True,
    }


@pytest.mark.parametrize(
    ("image", "marker"),
    [(TOO_WIDE, "[image: png 9000x40, 4 KB]"), (TOO_HEAVY, "[image: png 1400x1300, 5.5 MB]")],
)
def test_an_image_over_a_limit_becomes_its_marker_one_within_stays(
    image: bytes, marker: str
) -> None:
    small = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    messages = [
        {"role": "user", "content": [{**small, "source": {**small["source"], "data": b64(image)}}]},
        {
            "role": "user",
            "content": [{**small, "source": {**small["source"], "data": b64(png(8, 8))}}],
        },
    ]
    assert refusal(Limits(), "/v1/messages", {"messages": messages}, 0) is not None
    repaired, done = repair_messages(messages)
    assert repaired[0]["content"] == [{"type": "text", "text": marker}]
    assert repaired[1] == messages[1]
    assert len(done) == 1 and done[0].startswith(f"message 1: {marker[1:-1]} over ")
    assert refusal(Limits(), "/v1/messages", {"messages": repaired}, 0) is None


def test_more_than_20_images_must_each_fit_2000_px() -> None:
    image = {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + b64(png(2100, 10))},
    }
    messages = [{"role": "user", "content": [dict(image)]} for _ in range(21)]
    assert refusal(Limits(), "/v1/chat/completions", {"messages": messages}, 0) is not None
    repaired, done = repair_messages(messages)
    assert len(done) == 21
    assert refusal(Limits(), "/v1/chat/completions", {"messages": repaired}, 0) is None
    assert repair_messages(messages[:20])[1] == []  # 20 of them may be 8000 px


# --- agents' session files -----------------------------------------------------------------------


def damaged_copy(source: Path, tmp_path: Path, damage, agent: str) -> bytes:
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    damage(path, agent)
    return path.read_bytes()


@pytest.mark.parametrize(
    ("source", "agent"), [(CLAUDE, "claude-code"), (CODEX, "codex")], ids=["claude", "codex"]
)
def test_a_removed_result_is_answered_and_check_finds_the_session_sound(
    source: Path, agent: str, tmp_path: Path
) -> None:
    data = damaged_copy(source, tmp_path, removed_result, agent)
    assert "unanswered-call" in session_problems(data, agent)
    result, outcome = rescued(data)
    assert session_problems(result, agent) & BROKEN == set()
    assert [line.split(": ", 1)[1] for line in outcome.repairs] == [
        line.split(": ", 1)[1] for line in outcome.repairs if "answered with an error" in line
    ]
    assert NO_RESULT.encode() in result
    assert rescued(result)[1].repairs == ()  # once is enough


def test_copilot_drops_a_result_of_no_call_and_answers_the_call_with_a_failed_event() -> None:
    lines = COPILOT.read_bytes().splitlines(keepends=True)
    number = max(n for n, line in enumerate(lines) if b'"tool.execution_complete"' in line)
    event = json.loads(lines[number])
    event["data"]["toolCallId"] = "nobody"  # its call now has no result, and it has no call
    lines[number] = json.dumps(event).encode() + b"\n"
    data = b"".join(lines)
    assert {"unanswered-call", "orphan-result"} <= session_problems(data, "copilot-cli")
    result, outcome = rescued(data)
    assert session_problems(result, "copilot-cli") & BROKEN == set()
    assert b'"nobody"' not in result
    answers = [json.loads(line) for line in result.splitlines() if NO_RESULT.encode() in line]
    assert [a["data"]["success"] for a in answers] == [False]
    assert len(outcome.repairs) == 2


def test_a_cut_chain_is_re_linked_and_the_whole_view_comes_back(tmp_path: Path) -> None:
    whole = index_session(io.BytesIO(CLAUDE.read_bytes()), get("claude-code"), "<s>")
    data = damaged_copy(CLAUDE, tmp_path, cut_chain, "claude-code")
    assert "dangling-parent" in session_problems(data, "claude-code")
    result, outcome = rescued(data)
    assert session_problems(result, "claude-code") & BROKEN == set()
    after = index_session(io.BytesIO(result), get("claude-code"), "<s>")
    assert len(after.view) == len(whole.view)
    assert len(outcome.repairs) == 1 and "is in no record: follows line" in outcome.repairs[0]
    # only the parent changed: every other line is the damaged file's, byte for byte
    changed = [a for a, b in zip(data.splitlines(), result.splitlines(), strict=True) if a != b]
    assert len(changed) == 1


@pytest.mark.parametrize(
    ("source", "agent"), [(CLAUDE, "claude-code"), (CODEX, "codex")], ids=["claude", "codex"]
)
def test_a_20_mb_tool_output_is_shortened_to_a_marker(
    source: Path, agent: str, tmp_path: Path
) -> None:
    data = damaged_copy(source, tmp_path, huge_record, agent)
    result, outcome = rescued(data)
    assert len(result) < len(source.read_bytes()) + 100_000
    assert any("shortened to [truncated:" in line for line in outcome.repairs)
    assert outcome.tokens_after < 200_000 < outcome.tokens_before


def test_an_image_a_tool_returned_over_8000_px_becomes_its_marker_in_a_session() -> None:
    lines = CLAUDE.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    number, record = next(
        (n, r)
        for n, r in enumerate(records)
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
    )
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    image["source"]["data"] = b64(TOO_WIDE)
    record["message"]["content"][0]["content"] = [image]
    lines[number] = json.dumps(record).encode() + b"\n"
    result, outcome = rescued(b"".join(lines))
    session = index_session(io.BytesIO(result), get("claude-code"), "<s>")
    view = load_view(io.BytesIO(result), session)
    assert refusal(Limits(tokens_in=None), "/v1/messages", {"messages": view}, 0) is None
    assert outcome.repairs == (
        f"line {number + 1}: image: png 9000x40, 4 KB over 8000 px: now a marker",
    )


def test_a_raw_line_separator_in_a_copilot_event_is_escaped_and_means_the_same() -> None:
    source = (FIXTURES / "more_agents" / "copilot-cli.jsonl").read_bytes()
    lines = source.splitlines(keepends=True)
    record = json.loads(lines[1])
    record["data"]["note"] = "before\u2028after\u2029end"
    lines[1] = json.dumps(record, ensure_ascii=False).encode() + b"\n"
    data = b"".join(lines)
    result, outcome = rescued(data)
    assert "\u2028".encode() not in result and "\u2029".encode() not in result
    assert [json.loads(line) for line in result.splitlines()] == [
        json.loads(line) for line in data.splitlines()
    ]
    assert outcome.repairs == ("line 2: raw U+2028, U+2029 (a line break to the agent): escaped",)


def test_a_sound_session_is_left_as_it_is() -> None:
    for source in (CLAUDE, CODEX, *sorted((FIXTURES / "more_agents").glob("*.jsonl"))):
        result, outcome = rescued(source.read_bytes())
        assert (result, outcome.repairs, outcome.changed) == (source.read_bytes(), (), False)


@pytest.mark.parametrize("agent", ["pi", "qwen-code"])
def test_pi_and_qwen_answer_a_lost_result_in_the_resumed_chain(agent: str, tmp_path: Path) -> None:
    path = tmp_path / f"{agent}.jsonl"
    path.write_bytes((FIXTURES / "more_agents" / f"{agent}.jsonl").read_bytes())
    removed_result(path, agent, newest=True)  # after the fixture's compaction
    data = path.read_bytes()
    assert "unanswered-call" in session_problems(data, agent)
    result, outcome = rescued(data)
    assert session_problems(result, agent) & BROKEN == set()
    assert len(outcome.repairs) == 1 and outcome.repairs[0].endswith("answered with an error")
    after = index_session(io.BytesIO(result), get(agent), "<s>")
    assert NO_RESULT in json.dumps(load_view(io.BytesIO(result), after))  # on the resumed path


# --- random damage on real sessions (issue 32.2) -------------------------------------------------

MORE_AGENTS = FIXTURES / "more_agents"  # genuine sessions the real agents wrote (regenerate.py)
REAL_SESSIONS = [
    *(
        (path, "claude-code", "uuid", "parentUuid")
        for path in sorted((TESTS / "corpus" / "originals").glob("cc_*__full.jsonl"))
    ),
    (MORE_AGENTS / "qwen-code.jsonl", "qwen-code", "uuid", "parentUuid"),
    (MORE_AGENTS / "pi.jsonl", "pi", "id", "parentId"),
    (MORE_AGENTS / "copilot-cli.jsonl", "copilot-cli", "id", "parentId"),
]
REPAIRED = {"torn-line", "dangling-parent", "parent-loop", "unanswered-call", "orphan-result"}


def damaged_session(session: int, drops: list[int], cuts: list[int], tear: bool) -> bytes:
    """A real session with lines dropped, parent chains cut or ids given twice (``cuts``: odd
    numbers cut, even ones copy another record's id), and maybe its last line torn: what a crash,
    a sync tool or a hand edit leaves."""
    path, agent, id_field, parent_field = REAL_SESSIONS[session]
    lines = path.read_bytes().splitlines(keepends=True)
    for drop in drops:
        del lines[1 + drop % (len(lines) - 1)]
    for cut in cuts:
        number = 1 + cut % (len(lines) - 1)
        record = json.loads(lines[number])
        # ids given twice: Claude Code's only; in the others' sessions a record that shares its
        # id and is dropped by rescue may leave a gap behind it (not yet repaired, issue 32.2)
        cuts_chain = cut % 2 or agent != "claude-code"
        if cuts_chain and record.get(parent_field):
            record[parent_field] = f"00000000-0000-4000-8000-{number:012d}"  # in no record
        elif not cuts_chain and record.get(id_field):
            other = json.loads(lines[cut // 2 % len(lines)])
            record[id_field] = other.get(id_field, record[id_field])  # an id given twice
        lines[number] = json.dumps(record).encode() + b"\n"
    if tear:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
    return b"".join(lines)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, len(REAL_SESSIONS) - 1),
    st.lists(st.integers(0, 10**6), max_size=3),
    st.lists(st.integers(0, 10**6), max_size=2),
    st.booleans(),
)
def test_after_rescue_check_finds_nothing_rescue_repairs(
    session: int, drops: list[int], cuts: list[int], tear: bool
) -> None:
    _, agent, id_field, parent_field = REAL_SESSIONS[session]
    result, outcome = rescued(damaged_session(session, drops, cuts, tear))
    found = session_problems(result, agent)
    # an id two records share is not rescue's to mend (it cannot tell which record a child
    # meant): rescue then exits with check's verdict, which names it (test_cli_rescue)
    if "duplicate-id" not in found:
        assert not found & REPAIRED, (found, outcome.repairs)  # type: ignore[attr-defined]
    records = [json.loads(line) for line in result.splitlines()]
    ids = Counter(record.get(id_field) for record in records)
    seen: set[str] = set()
    for record in records:  # never a link to itself or to a later record
        parent, own = record.get(parent_field), record.get(id_field)
        # an id the damage gave twice is not rescue's to mend
        if ids[own] == 1 and parent is not None and parent in ids:
            assert parent in seen, record
        seen.add(own)
