"""The OpenAI Chat Completions protocol, as OpenAI, Ollama, vLLM, llama.cpp, LM Studio and
OpenRouter serve it (SPEC §7): ``POST {base_url}/chat/completions``.

The reply is read defensively. A summary is used only when the first choice holds non-empty text
and the model stopped on its own: a ``refusal``, ``finish_reason: "content_filter"``, missing
choices, an empty or ``null`` content are failures. A summary cut off at ``max_tokens``
(``finish_reason: "length"``) is still a summary: it is kept with a warning that says to raise
``--max-tokens`` (``--strict`` refuses it).
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from .base import SummaryRequest
from .catalog import ProviderSettings
from .http import JsonClient, api_key, summary_of


class OpenAISummarizer:
    name = "openai"

    def __init__(
        self, settings: ProviderSettings, client: JsonClient | None = None, **options: Any
    ) -> None:
        key = api_key(settings)
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self.model = settings.model
        self.client = client or JsonClient(self.name, settings, headers, **options)

    def ready(self) -> None:
        self.client.ready()

    def summarize(self, request: SummaryRequest) -> str:
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "max_tokens": request.max_tokens,
        }
        reply = self.client.post_json("/chat/completions", body)
        return read_reply(self.client.label, reply, request.max_tokens)


def read_reply(label: str, reply: Any, max_tokens: int) -> str:
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"{label}: the reply has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ProviderError(f"{label}: the reply's first choice has no message")
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        raise ProviderError(f"{label}: the reply was withheld by the content filter")
    return summary_of(
        label,
        _text(message.get("content")),
        refusal=message.get("refusal"),
        cut_off=finish == "length",
        max_tokens=max_tokens,
    )


def _text(content: Any) -> Any:
    """A string content as it is; a list of parts (some servers send one) joined."""
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return content
