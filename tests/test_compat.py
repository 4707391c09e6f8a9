"""``--compat bareagent`` is the reference implementation, byte for byte (issue 11.2).

tests/reference.py follows the reference's rules independently of
compactor_core/compaction/bareagent.py; these properties compare the two on generated
conversations of both wire styles, including keys
that are not strings or are missing, where the reference's str() and json.dumps show through.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import bareagent_estimate, bareagent_full, bareagent_micro, bareagent_serialize
from strategies import odd_conversations

from compactor_core.compaction.estimate import estimate
from compactor_core.compaction.full import full_compact
from compactor_core.compaction.pipeline import run
from compactor_core.conversation.formats import Conversation, dumps
from compactor_core.errors import ProviderError
from compactor_core.providers.base import SummaryRequest
from compactor_core.settings import RunSettings, Settings

COMPAT = Settings(compat=True)


class Recorder:
    """Answers with a fixed summary (or fails) and keeps the prompt it was sent."""

    name = "recorder"

    def __init__(self, summary: str | None) -> None:
        self.summary = summary
        self.prompts: list[tuple[str, str]] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.prompts.append((request.system, request.user))
        if self.summary is None:
            raise ProviderError("recorder: no summary")
        return self.summary


def compat_micro(messages: list[dict]) -> list[dict]:
    job = RunSettings("micro", COMPAT)
    return run(job, Conversation(messages)).conversation.messages


@given(odd_conversations())
def test_micro_is_the_reference(messages: list[dict]) -> None:
    original = copy.deepcopy(messages)
    assert dumps(compat_micro(messages)) == dumps(bareagent_micro(messages))
    assert messages == original  # and the input is left alone


@given(odd_conversations())
def test_estimate_is_the_reference(messages: list[dict]) -> None:
    assert estimate(messages, compat=True) == bareagent_estimate(messages)


@given(odd_conversations())
def test_serialization_is_the_reference(messages: list[dict]) -> None:
    from compactor_core.compaction.bareagent import serialize

    assert serialize(messages) == bareagent_serialize(messages)


@given(odd_conversations(), st.sampled_from(["摘要 summary", "", None]))
def test_full_compaction_sends_and_rebuilds_as_the_reference(
    messages: list[dict], summary: str | None
) -> None:
    provider = Recorder(summary)
    result = full_compact(messages, provider, COMPAT)

    def reference_summarizer(system: str, user: str) -> Any:
        if summary is None:
            raise RuntimeError("no summary")
        return summary

    expected, prompt = bareagent_full(messages, reference_summarizer)
    assert provider.prompts == ([prompt] if prompt else [])
    assert dumps(result.messages) == dumps(expected)


OPENAI = [
    {"role": "user", "content": "find the config"},
    *[
        message
        for number in range(5)
        for message in (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{number}", "function": {"name": "bash", "arguments": '{"cmd":"ls"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": f"c{number}", "content": "x" * 50},
        )
    ],
    {"role": "assistant", "content": "done"},
]


def test_openai_style_is_left_alone_and_sent_without_tool_lines() -> None:
    assert compat_micro(OPENAI) == OPENAI
    provider = Recorder("s")
    full_compact(OPENAI, provider, COMPAT)
    user = provider.prompts[0][1]
    assert "[tool_use:" not in user and "[tool_result:" not in user
    assert "[tool]\n" + "x" * 50 in user


@pytest.mark.parametrize(
    ("name", "tokens"),
    # "t" is 0.25; "{'k': None}" 4.0, "None" and "True" 1.0, "7" 0.25; rounded up once
    [({"k": None}, 5), (None, 2), (True, 2), (7, 1)],
)
def test_a_name_in_a_tool_input_is_counted_through_str(name: Any, tokens: int) -> None:
    block = {"type": "tool_use", "name": "t", "input": {"name": name}}
    messages = [{"role": "assistant", "content": [block]}]
    assert estimate(messages, compat=True) == tokens
