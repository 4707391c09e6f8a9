"""The Anthropic Messages protocol (SPEC §7): ``POST {base_url}/v1/messages``.

The system prompt goes in ``system``, the key in ``x-api-key``, the protocol version in
``anthropic-version``. The summary is every ``text`` block of ``content`` joined (thinking and
other blocks are skipped). ``stop_reason: "refusal"`` is a failure; a summary that stopped at
``"max_tokens"`` (or ``"model_context_window_exceeded"``) is kept with a warning, as in
:mod:`.openai`. Error bodies (``{"type": "error", "error": {"type", "message"}}``), 529
``overloaded_error`` included, are handled in :mod:`.http`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from .base import SummaryRequest
from .catalog import ProviderSettings
from .http import JsonClient, api_key, summary_of

API_VERSION = "2023-06-01"
CUT_OFF = frozenset({"max_tokens", "model_context_window_exceeded"})


class AnthropicSummarizer:
    name = "anthropic"

    def __init__(
        self, settings: ProviderSettings, client: JsonClient | None = None, **options: Any
    ) -> None:
        key = api_key(settings)
        headers = {"anthropic-version": API_VERSION, **({"x-api-key": key} if key else {})}
        self.model = settings.model
        self.client = client or JsonClient(self.name, settings, headers, **options)

    def ready(self) -> None:
        self.client.ready()

    def summarize(self, request: SummaryRequest) -> str:
        body = {
            "model": self.model,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
            "max_tokens": request.max_tokens,
        }
        reply = self.client.post_json("/v1/messages", body)
        return read_reply(self.client.label, reply, request.max_tokens)


def read_reply(label: str, reply: Any, max_tokens: int) -> str:
    content = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(content, list):
        raise ProviderError(f"{label}: the reply has no content")
    text = "".join(
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )
    stop = reply.get("stop_reason")
    return summary_of(
        label,
        text,
        refusal=stop == "refusal",
        cut_off=stop in CUT_OFF,
        max_tokens=max_tokens,
    )
