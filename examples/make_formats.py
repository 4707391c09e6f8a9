"""Regenerate the other example formats from session.json (the same session, other shapes).

    python examples/make_formats.py

- openai_session.json: OpenAI Chat Completions style (tool_calls, role "tool" messages);
- request.json: a request envelope ({"model", "system", "messages"}) as sent to an API;
- session.jsonl: one message a line.
"""

import json
from pathlib import Path

HERE = Path(__file__).parent


def to_openai(messages: list[dict]) -> list[dict]:
    converted = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            converted.append(message)
            continue
        texts = [block["text"] for block in content if block.get("type") == "text"]
        calls = [block for block in content if block.get("type") == "tool_use"]
        results = [block for block in content if block.get("type") == "tool_result"]
        if message["role"] == "assistant":
            converted.append(
                {
                    "role": "assistant",
                    "content": "\n".join(texts) or None,
                    **(
                        {
                            "tool_calls": [
                                {
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {
                                        "name": call["name"],
                                        "arguments": json.dumps(call["input"], ensure_ascii=False),
                                    },
                                }
                                for call in calls
                            ]
                        }
                        if calls
                        else {}
                    ),
                }
            )
            continue
        for result in results:
            call_id, output = result["tool_use_id"], result["content"]
            converted.append({"role": "tool", "tool_call_id": call_id, "content": output})
        if texts:
            converted.append({"role": "user", "content": "\n".join(texts)})
    return converted


def main() -> None:
    messages = json.loads((HERE / "session.json").read_text(encoding="utf-8"))
    dump = lambda value: json.dumps(value, ensure_ascii=False, indent=1) + "\n"  # noqa: E731
    (HERE / "openai_session.json").write_text(dump(to_openai(messages)), encoding="utf-8")
    system = [m["content"] for m in messages if m["role"] == "system"]
    envelope = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "\n".join(system),
        "messages": [m for m in messages if m["role"] != "system"],
    }
    (HERE / "request.json").write_text(dump(envelope), encoding="utf-8")
    lines = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages)
    (HERE / "session.jsonl").write_text(lines, encoding="utf-8")


if __name__ == "__main__":
    main()
