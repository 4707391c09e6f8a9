"""``restore --keep-new`` (issue 32.4): an agent went on after ctxpack rewrote its session; the
original comes back with the turns added since after it, and the real agent resumes the whole:
the original's history whole (no marker, no summary), then the turns of after, then the new one.

Claude Code chains its records: its first turn after ctxpack's summary follows the summary's
records, which the original does not hold, so it is linked to where the original resumes. Codex
appends items in order: its turns follow as they are."""

from __future__ import annotations

import pytest
from agents.resume import resume
from agents.sessions import Session, Workload, make_claude_session, make_codex_session
from helpers import run

AFTER = "Turn after ctxpack: count the warnings too."
AGAIN = "And once more: what is left to do?"


@pytest.mark.parametrize(
    ("agent", "make", "command"),
    [("claude-code", make_claude_session, "full"), ("codex", make_codex_session, "micro")],
)
def test_restore_keep_new_gives_the_original_and_the_turns_added_since(
    tmp_path, agent: str, make, command: str
) -> None:
    session: Session = make(
        tmp_path / agent, Workload(turns=3, turns_after=0, output_lines=40, compact=False)
    )
    original = resume(session.copy_to(tmp_path / "untouched")).messages  # as it was
    first_prompt = original[0]
    done = run(command, "--in-place", "--keep-recent", "1", "--min-idle", "0", session.path)
    assert done.returncode == 0, done.stderr.decode()
    resume(session, AFTER)  # the agent goes on after ctxpack's rewrite
    refused = run("restore", "--min-idle", "0", session.path)
    assert refused.returncode == 77  # without --keep-new (or --force): nothing set aside
    kept = run("restore", "--keep-new", "--min-idle", "0", session.path)
    assert kept.returncode == 0, kept.stderr.decode()
    assert b"the turns added since ctxpack's run follow it" in kept.stderr
    checked = run("check", session.path)  # no gap the agent would have to guess across
    assert checked.returncode == 0, checked.stdout.decode()
    again = resume(session, AGAIN)
    texts = again.user_texts()
    assert again.pairing_problems() == []
    assert AFTER in texts and texts[-1] == AGAIN
    assert again.messages[0] == first_prompt  # the original's start, whole
    assert not again.markers() and "[Context Compressed]" not in str(again.messages)


def test_a_turn_that_followed_ctxpacks_records_follows_where_the_original_resumes() -> None:
    """The first appended record's parent is a record only ctxpack's version held (its summary):
    it is linked to the original's last view record; the records after it keep their links."""
    import json

    from helpers import REPO

    from compactor_core.session_files.appended import follow_original
    from compactor_core.session_files.registry import get

    original = (REPO / "examples" / "claude-session.jsonl").read_bytes()
    records = [json.loads(line) for line in original.splitlines()]
    leaf = next(r["uuid"] for r in reversed(records) if r.get("type") in ("user", "assistant"))
    base = {k: records[-1][k] for k in ("sessionId", "cwd", "version") if k in records[-1]}
    first = {
        **base,
        "type": "user",
        "uuid": "u-1",
        "parentUuid": "summary-by-ctxpack",
        "message": {"role": "user", "content": "after"},
        "isSidechain": False,
    }
    second = {
        **base,
        "type": "assistant",
        "uuid": "a-1",
        "parentUuid": "u-1",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        "isSidechain": False,
    }
    appended = b"".join(json.dumps(r).encode() + b"\n" for r in (first, second))
    followed = [
        json.loads(line)
        for line in follow_original(original, appended, get("claude-code"), "s").splitlines()
    ]
    assert followed[0]["parentUuid"] == leaf
    assert followed[1] == second  # byte for byte as it came
