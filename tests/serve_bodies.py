"""Request bodies of the three model APIs, shaped like the real agents' (``ctxpack serve`` tests).

Each has ``turns`` tool-result turns with long outputs (so micro compaction truncates the oldest)
and everything a proxy must leave alone: system prompts and tools with ``cache_control``,
thinking blocks with signatures, server-side tool blocks, images, encrypted reasoning.
"""

from __future__ import annotations

from typing import Any

OUTPUT = "compiled ok\n" * 300  # 3,600 characters


def output(turn: int) -> str:
    return f"turn {turn}: {OUTPUT}"


def anthropic(turns: int = 5, pending_results: bool = False) -> dict[str, Any]:
    """A Claude Code request: ends with the user's question, or (``pending_results``) with the
    results of the last turn's calls."""
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVB"},
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Build and test it."}, image]}
    ]
    for turn in range(turns):
        search = f"srvtoolu_{turn:02d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"Turn {turn}.", "signature": f"sig{turn}=="},
                    {
                        "type": "server_tool_use",
                        "id": search,
                        "name": "web_search",
                        "input": {"query": f"error {turn}"},
                    },
                    {
                        "type": "web_search_tool_result",
                        "tool_use_id": search,
                        "content": [
                            {
                                "type": "web_search_result",
                                "url": "https://example.org/",
                                "title": "Example",
                                "encrypted_content": "RW5j",
                            }
                        ],
                    },
                    {"type": "text", "text": f"Running step {turn}."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{turn:02d}",
                        "name": "Bash",
                        "input": {"command": f"make step{turn}"},
                    },
                ],
            }
        )
        result = {
            "type": "tool_result",
            "tool_use_id": f"toolu_{turn:02d}",
            "content": output(turn),
        }
        messages.append({"role": "user", "content": [result]})
    if pending_results:
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    else:
        question = {"type": "text", "text": "What failed?", "cache_control": {"type": "ephemeral"}}
        messages[-1]["content"].append(question)
    return {
        "model": "claude-test",
        "max_tokens": 32000,
        "stream": True,
        "system": [
            {"type": "text", "text": "You are a coding agent."},
            {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}},
        ],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": messages,
    }


def chat(turns: int = 5) -> dict[str, Any]:
    """An OpenAI Chat Completions request with a developer message and parallel tool calls."""
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": "Answer tersely."},
        {"role": "user", "content": "Build and test it."},
    ]
    for turn in range(turns):
        calls = [
            {
                "id": f"call_{turn}_{n}",
                "type": "function",
                "function": {"name": "shell", "arguments": f'{{"cmd": "make {turn}.{n}"}}'},
            }
            for n in range(2)
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for n in range(2):
            messages.append(
                {"role": "tool", "tool_call_id": f"call_{turn}_{n}", "content": output(turn)}
            )
    messages.append({"role": "user", "content": "What failed?"})
    return {
        "model": "gpt-test",
        "stream": True,
        "tools": [{"type": "function"}],
        "messages": messages,
    }


def responses(turns: int = 5, pending_results: bool = False) -> dict[str, Any]:
    """A Codex request: developer messages, the environment context, then turns of reasoning
    (encrypted), a message and parallel function calls, each answered by its output."""
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "You are Codex."}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "<environment_context>/tmp</environment_context>"}
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Build and test it."}],
        },
    ]
    for turn in range(turns):
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{turn}",
                "summary": [],
                "content": None,
                "encrypted_content": f"gAAAA{turn}secret",
            }
        )
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{turn}",
                "content": [{"type": "output_text", "text": f"Step {turn}.", "annotations": []}],
            }
        )
        for n in range(2):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{turn}_{n}",
                    "name": "exec_command",
                    "arguments": f'{{"cmd": "make {turn}.{n}"}}',
                    "call_id": f"call_{turn}_{n}",
                }
            )
        for n in range(2):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": f"call_{turn}_{n}",
                    "output": output(turn),
                }
            )
    if not pending_results:
        items.append(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "What failed?"}],
            }
        )
    return {
        "model": "gpt-test",
        "instructions": "Be careful.",
        "stream": True,
        "tools": [{"type": "function", "name": "exec_command"}],
        "include": ["reasoning.encrypted_content"],
        "input": items,
    }
