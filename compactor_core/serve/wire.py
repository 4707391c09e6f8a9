"""The request bodies of the three model APIs, as the conversation the policy reads, and back.

- Anthropic Messages (``POST /v1/messages``): ``messages`` are the core's own shape; the
  top-level ``system`` prompt is counted, never changed.
- OpenAI Chat Completions (``POST /v1/chat/completions``): ``messages`` in the OpenAI style the
  core reads too; a ``developer`` message is a system message for the policy and goes back a
  ``developer`` message.
- OpenAI Responses (``POST /v1/responses``): ``input`` items, through ``responses.py``;
  ``instructions`` is the system prompt.

Only the history changes: every other key of the body (tools, their order, ``system``,
``model``, ``stream``, ...) goes back as it came. A route's ``header`` is what precedes the
history in the model's prompt (and so in its cache): the tools, the system prompt, the model.
"""

from __future__ import annotations

from typing import Any

from ..conversation.formats import Conversation, Message, json_type, validate_messages
from ..errors import InputError
from . import responses

MESSAGES = "/v1/messages"
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
_ROLE = "ctxpack_role"  # the role a message had on the wire, where the policy reads another


class Wire:
    """One API's request body: where its history is, and how the policy reads it."""

    name = ""
    history_key = "messages"
    header_keys: tuple[str, ...] = ("model", "tools")
    cache_pricing = "openai"  # the price profile of the API's prompt cache (stats.py)
    reads_cache_at_breakpoints = False  # Anthropic's: read and written at cache_control only

    def conversation(
        self, body: dict[str, Any], source: str, walked: bool = False
    ) -> Conversation | None:
        """The history as the policy reads it; None when there is none to read. ``walked``:
        the body was found to nest no deeper than a history may (``formats.load_body``)."""
        messages = _history(body, self.history_key, source, walked)
        return None if messages is None else Conversation(messages, "envelope", body)

    def rebuilt(self, body: dict[str, Any], result: list[Message]) -> dict[str, Any]:
        """The body with the policy's result as its history, every other key as it came."""
        return {**body, self.history_key: result}

    def header(self, body: dict[str, Any]) -> dict[str, Any]:
        return {key: body.get(key) for key in self.header_keys}


class MessagesWire(Wire):
    name = "anthropic messages"
    header_keys = ("model", "tools", "system")
    cache_pricing = "anthropic-5m"
    reads_cache_at_breakpoints = True


class ChatWire(Wire):
    name = "chat completions"

    def conversation(
        self, body: dict[str, Any], source: str, walked: bool = False
    ) -> Conversation | None:
        messages = _history(body, self.history_key, source, walked)
        if messages is None:
            return None
        read = [
            _as_system(message) if message.get("role") == "developer" else message
            for message in messages
        ]
        return Conversation(read, "envelope", None)

    def rebuilt(self, body: dict[str, Any], result: list[Message]) -> dict[str, Any]:
        return {**body, "messages": [_with_wire_role(message) for message in result]}


class ResponsesWire(Wire):
    name = "responses"
    history_key = "input"
    header_keys = ("model", "tools", "instructions")

    def conversation(
        self, body: dict[str, Any], source: str, walked: bool = False
    ) -> Conversation | None:
        items = body.get("input")
        if not isinstance(items, list):  # a plain string, or none: no history to compact
            return None
        messages = responses.to_messages(items, source)
        instructions = body.get("instructions")
        system = {"system": instructions} if isinstance(instructions, str) else None
        return Conversation(messages, "envelope", system)

    def rebuilt(self, body: dict[str, Any], result: list[Message]) -> dict[str, Any]:
        return {**body, "input": responses.to_items(result, body["input"])}


WIRES: dict[str, Wire] = {MESSAGES: MessagesWire(), CHAT: ChatWire(), RESPONSES: ResponsesWire()}


def wire_for(method: str, path: str) -> Wire | None:
    """The API a request speaks, if it asks a model for a reply (``POST``); else None.

    The route may sit under a prefix of the upstream's (``/api/v1/chat/completions``).
    """
    if method != "POST":
        return None
    return next((wire for route, wire in WIRES.items() if path.endswith(route)), None)


def _history(
    body: dict[str, Any], key: str, source: str, walked: bool = False
) -> list[Message] | None:
    messages = body.get(key)
    if messages is None:
        return None
    if not isinstance(messages, list):
        raise InputError(f'{source}: "{key}" must be an array, got {json_type(messages)}')
    validate_messages(messages, source, lambda index: f"{key}[{index}]", walked=walked)
    return messages


def _as_system(message: Message) -> Message:
    return {**message, "role": "system", _ROLE: message["role"]}


def _with_wire_role(message: Message) -> Message:
    if _ROLE not in message:
        return message
    restored = {key: value for key, value in message.items() if key != _ROLE}
    restored["role"] = message[_ROLE]
    return restored
