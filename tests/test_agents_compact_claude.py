"""ctxpack's full compaction of a Claude Code session writes what Claude Code's own ``/compact``
writes, and the real agent resumes both alike (issue 32.1).

One session the real Claude Code 2.1.328 writes here; one copy compacted by the agent itself
(``claude -p --resume ID /compact``), one by ``ctxpack full --in-place``. Their records are
compared field by field, then each is resumed against a model server that refuses what the real
API refuses (an empty content among it): the requests have the same shape, the last real reply
after the summary, and no turn made up to fill a gap ("No response requested.").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from agents.claude import ClaudeHome, run_claude
from agents.limits import Limits, refusal
from agents.script import Script
from agents.server import ModelServer
from agents.sessions import RESUME_PROMPT, Session, Workload, make_claude_session
from helpers import run

# What /compact writes that measures its own run, or echoes its command: not ctxpack's to write.
RUN_MEASURES = {"durationMs", "postTokens", "preCompactOrganizationsCoverStart"}
RUN_MEASURES |= {"cumulativeDroppedTokens"}
PROMPT_KEYS = {"promptId", "turnPosition"}  # the /compact command's own prompt
# The session's name the agent's run gives it (for its plan files) when it has none yet: ctxpack
# copies it from the session's records, which have none here.
NAMED_BY_THE_RUN = {"slug"}
MADE_UP = "No response requested."
# The echo of the /compact command the agent sends as the user's text: not ctxpack's to write.
COMMAND_ECHO = ("<local-command-caveat>", "<command-name>", "<local-command-stdout>")


@dataclass(frozen=True)
class Compacted:
    boundary: dict[str, Any]
    summary: dict[str, Any]
    request: list[dict[str, Any]]  # the messages of the resumed request
    refusals: list[str]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    root = tmp_path_factory.mktemp("claude")
    return make_claude_session(
        root, Workload(turns=2, turns_after=0, output_lines=12, compact=False)
    )


@pytest.fixture(scope="module")
def by_claude(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Compacted:
    copy = session.copy_to(tmp_path_factory.mktemp("by-claude"))
    with ModelServer(Script()) as server:
        home = ClaudeHome(copy.root)
        run_claude(home, copy.project, "/compact", server, resume=copy.session_id).check()
    return resumed(copy)


@pytest.fixture(scope="module")
def by_ctxpack(session: Session, tmp_path_factory: pytest.TempPathFactory) -> Compacted:
    copy = session.copy_to(tmp_path_factory.mktemp("by-ctxpack"))
    done = run("full", "--in-place", "--min-idle", "0", copy.path, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return resumed(copy)


def resumed(copy: Session) -> Compacted:
    """The compaction's records, then the request the agent sends when it resumes."""
    records = [json.loads(line) for line in copy.path.read_text().splitlines()]
    at = max(n for n, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    boundary, summary = records[at], records[at + 1]
    with ModelServer(Script(), limits=Limits(tokens_in=None)) as server:
        home = ClaudeHome(copy.root)
        done = run_claude(home, copy.project, RESUME_PROMPT, server, resume=copy.session_id)
        assert done.returncode == 0, done.stderr
        request = server.model_requests[-1].body["messages"]
        return Compacted(boundary, summary, request, list(server.refusals))


def test_the_boundary_has_the_fields_of_claude_codes_own(
    by_claude: Compacted, by_ctxpack: Compacted
) -> None:
    assert set(by_claude.boundary) - NAMED_BY_THE_RUN == set(by_ctxpack.boundary)
    theirs, ours = by_claude.boundary["compactMetadata"], by_ctxpack.boundary["compactMetadata"]
    assert set(theirs) - RUN_MEASURES == set(ours)
    assert (
        ours["preservedMessages"]["uuids"] == theirs["preservedMessages"]["uuids"]
    )  # same records
    assert ours["preservedMessages"]["anchorUuid"] == by_ctxpack.summary["uuid"]
    segment = ours["preservedSegment"]
    assert segment["anchorUuid"] == by_ctxpack.summary["uuid"]
    assert [segment["headUuid"], segment["tailUuid"]] == [
        theirs["preservedSegment"]["headUuid"],
        theirs["preservedSegment"]["tailUuid"],
    ]
    for key in ("parentUuid", "logicalParentUuid", "type", "subtype", "content", "level"):
        assert by_ctxpack.boundary[key] == by_claude.boundary[key]


def test_the_summary_record_is_framed_like_claude_codes_own(
    by_claude: Compacted, by_ctxpack: Compacted
) -> None:
    assert set(by_claude.summary) - PROMPT_KEYS - NAMED_BY_THE_RUN == set(by_ctxpack.summary)
    assert by_ctxpack.summary["isCompactSummary"] is True
    assert by_ctxpack.summary["parentUuid"] == by_ctxpack.boundary["uuid"]
    theirs, ours = by_claude.summary["message"]["content"], by_ctxpack.summary["message"]["content"]
    for frame in (
        "<tools-used-before-summary>Bash, Read</tools-used-before-summary>",
        "Summary:\n",
    ):
        assert frame in theirs and frame in ours
    assert theirs.split("Summary:\n")[0] == ours.split("Summary:\n")[0]
    tail = "The messages after this summary are the most recent messages from before compaction"
    assert tail in theirs and tail in ours


def test_the_resumed_request_has_the_shape_a_compact_gives(
    by_claude: Compacted, by_ctxpack: Compacted
) -> None:
    assert by_claude.refusals == [] and by_ctxpack.refusals == []
    assert shape(by_ctxpack.request) == shape(by_claude.request)
    assert by_ctxpack.request[0]["content"].startswith("This session is being continued")
    theirs = [m for m in by_claude.request if m["role"] == "assistant"]
    ours = [m for m in by_ctxpack.request if m["role"] == "assistant"]
    assert ours == theirs and ours  # the last real reply, kept verbatim
    assert MADE_UP not in json.dumps(by_ctxpack.request)


def test_the_model_server_refuses_an_empty_content_as_the_api_does() -> None:
    def refused(messages: list[dict[str, Any]]) -> str | None:
        return refusal(Limits(), "/v1/messages", {"messages": messages}, 100)

    hello = {"role": "user", "content": "hello"}
    assert refused([hello, {"role": "assistant", "content": []}, hello]) is not None
    assert refused([{"role": "user", "content": ""}]) is not None
    blank = {"role": "user", "content": [{"type": "text", "text": " "}]}
    assert refused([blank]) is not None
    effort = {"role": "system", "content": [], "output_config": {"effort": "medium"}}
    assert refused([hello, effort, {"role": "assistant", "content": "hi"}, hello]) is None
    assert refused([hello, {"role": "assistant", "content": ""}]) is None  # a prefill


def shape(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each message's role and the kind of its content (a text, or its blocks' types), the
    echo of a /compact command left out."""
    return [(m["role"], kinds(m.get("content"))) for m in messages]


def kinds(content: Any) -> str:
    if isinstance(content, str):
        return "text"
    kept = [block for block in content if not str(block.get("text", "")).startswith(COMMAND_ECHO)]
    return ",".join(block.get("type", "?") for block in kept) or "empty"
