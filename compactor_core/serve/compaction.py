"""One request body through the policy of ``ctxpack auto``, and what became of it.

The body is read as the core reads any JSON (integers beyond 64 bits, lone surrogates survive);
its history goes through ``compactor_core.run`` with the ``auto`` command, as ``ctxpack auto``
sends it; the result is checked before it goes out. What goes out as it came, byte for byte: a
body the policy left alone, one that is not JSON or has no history, and one whose result would
break the conversation (the last turn changed, a tool call or result left without its other
half) — a proxy must never make a request fail that would have gone through without it.

Besides the policy's own rules, one thing is never changed: a tool result that holds a
``cache_control`` marker keeps its content, so no cache breakpoint the caller set disappears.
"""

from __future__ import annotations

import operator
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..compaction.handles import replaced_originals
from ..compaction.memo import Memo
from ..compaction.pipeline import measure, run
from ..compaction.status import Status
from ..conversation.formats import Conversation, Message, dumps, load_body
from ..conversation.tools import blocks, is_block, tool_calls, tool_result_ids
from ..errors import CtxpackError
from ..settings import RunSettings, Settings
from .breakpoints import with_prefix_breakpoint
from .ledger import NEW, Ledger, Reuse
from .memo import KeptResults
from .summaries import KeptSummarizer
from .wire import Wire

if TYPE_CHECKING:
    from ..providers.base import Summarizer
    from ..recall.store import OriginalsStore

COMPACTED = "compacted"  # forwarded smaller
UNCHANGED = "unchanged"  # the policy left it alone: forwarded byte for byte
AS_IS = "as is"  # not compacted, for ``reason``: forwarded byte for byte


@dataclass(frozen=True)
class RequestReport:
    """What became of one request's body on its way upstream (not an input's ``Report``)."""

    outcome: str  # COMPACTED, UNCHANGED or AS_IS
    reason: str = ""  # why a body went as it came
    tokens_in: int = 0  # the estimate of the history (and system prompt) as sent ...
    tokens_out: int = 0  # ... and as forwarded
    truncated: int = 0  # tool results that became markers
    summary: Status = Status.NOT_RUN
    error: str = ""  # why the summary failed
    reuse: Reuse = NEW
    cached_in: int = 0  # of tokens_in, what the cache would read had it gone untouched
    cached_out: int = 0  # of tokens_out, what the cache reads
    pricing: str = "openai"  # the API's cache prices (stats.PRICES)


@dataclass(frozen=True)
class Forwarded:
    body: bytes
    report: RequestReport


@dataclass
class Compactor:
    """The policy of ``ctxpack auto`` with these settings, for any number of requests.

    ``provider`` writes the summaries (None: the built-in extractive one); no snapshots are
    kept: the caller keeps its own history. Safe to call from several threads at once.
    """

    settings: Settings = field(default_factory=Settings)
    provider: Summarizer | None = None
    ledger: Ledger = field(default_factory=Ledger)
    clock: Callable[[], float] = time.monotonic
    # where the originals of markers with a recall handle are kept: markers carry one when the
    # settings say so, or when the request offers the model a recall tool (``ctxpack mcp``)
    originals: OriginalsStore | None = None
    # what the policy computed of the histories before, for the requests that send them again
    _kept: KeptResults = field(init=False, repr=False)

    def __post_init__(self) -> None:
        kept = isinstance(self.provider, KeptSummarizer)
        self._kept = KeptResults(self.provider.compactions() if kept else None)

    def compact(self, wire: Wire, data: bytes) -> Forwarded:
        try:
            return self._compact(wire, data)
        except CtxpackError as error:  # not a conversation; a summarizer that cannot be asked
            return _as_is(data, str(error))
        except Exception as error:  # a bug of ctxpack must not cost the caller its request
            detail = " ".join(str(error).split())[:200]
            return _as_is(data, f"internal error: {type(error).__name__}: {detail}")

    def _compact(self, wire: Wire, data: bytes) -> Forwarded:
        source = f"{wire.name} request"
        body, walked = load_body(data, source)
        if not isinstance(body, dict):
            return _as_is(data, f"{source}: not a JSON object")
        conversation = wire.conversation(body, source, walked)
        if conversation is None or not conversation.messages:
            return _as_is(data, "no history")
        settings = self._settings_for(body, data)
        run_settings = RunSettings("auto", settings, measure=True)
        memo = self._kept.for_request()
        outcome = run(run_settings, conversation, self.provider, memo=memo)
        before = conversation.messages
        tokens_in = outcome.tokens_before or 0
        tokens_out = outcome.tokens_after or 0
        after = before
        if outcome.changed:
            after = _keep_cache_markers(before, outcome.conversation.messages)
            problem = _problem(before, after)
            if problem:
                return _as_is(data, problem)
            if after is not outcome.conversation.messages:
                tokens_out = measure(conversation.with_messages(after), self.settings, memo)
        reuse = self.ledger.record(wire.header(body), before, after, self.clock(), memo.text)
        if outcome.changed and wire.reads_cache_at_breakpoints and not reuse.stable:
            after = with_prefix_breakpoint(body, after, reuse.forwarded_prefix)
        report = RequestReport(
            COMPACTED if outcome.changed else UNCHANGED,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            truncated=outcome.truncated,
            summary=outcome.full,
            error=str(outcome.error) if outcome.error else "",
            reuse=reuse,
            cached_in=self._cached(tokens_in, before, reuse.sent_prefix, reuse, memo),
            cached_out=self._cached(tokens_out, after, reuse.forwarded_prefix, reuse, memo),
            pricing=wire.cache_pricing,
        )
        if not outcome.changed:
            return Forwarded(data, report)
        if settings.recall and self.originals is not None:
            self.originals.keep(replaced_originals(before, after))
        return Forwarded(dumps(wire.rebuilt(body, after)), report)

    def _settings_for(self, body: dict[str, Any], data: bytes) -> Settings:
        """The settings, with recall handles when there is a store and the model can recall."""
        if self.originals is None or self.settings.recall or not offers_recall(body, data):
            return self.settings
        return replace(self.settings, recall=True)

    def _cached(
        self, tokens: int, messages: list[Message], prefix: int, reuse: Reuse, memo: Memo
    ) -> int:
        """Of ``tokens`` (the system prompt and ``messages``), those of the system prompt and the
        first ``prefix`` messages, if the cache holds anything of this conversation: counted as
        what the rest is not, since the rest is the few messages a caller adds each time."""
        if not reuse.previous:
            return 0
        rest = measure(Conversation(messages[prefix:]), self.settings, memo)
        return max(tokens - rest, 0)


# An MCP server's recall tool as Claude Code names it; listed by name alone in a message while
# its schema waits behind the tool search (a deferred tool)
MCP_RECALL = re.compile(rb"mcp__[A-Za-z0-9_-]+__recall\b")


def offers_recall(body: dict[str, Any], data: bytes) -> bool:
    """Whether the request offers the model a recall tool: ``recall``, or an MCP server's
    (``mcp__ctxpack__recall``), among its tools in any API's shape or deferred."""
    tools = body.get("tools")
    if any(name == "recall" for name in _tool_names(tools if isinstance(tools, list) else [])):
        return True
    return MCP_RECALL.search(data) is not None


def _tool_names(tools: list[Any]) -> Iterator[str]:
    """The names of the tools in any API's shape; a Responses namespace's tools too (Codex
    offers an MCP server's tools as one, ``{"type": "namespace", "name": "mcp__ctxpack",
    "tools": [...]}``, and the model calls ``recall`` in it)."""
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            yield name
        inner = tool.get("tools") if tool.get("type") == "namespace" else None
        if isinstance(inner, list):
            yield from _tool_names(inner)


def _as_is(data: bytes, reason: str) -> Forwarded:
    return Forwarded(data, RequestReport(AS_IS, reason))


# --- what must hold of the result ----------------------------------------------------------------


def _problem(before: list[Message], after: list[Message]) -> str | None:
    """Why the result must not go out, or None: the last turn changed, a pair broken."""
    if after is before:
        return None
    if not after or after[-1] != before[-1]:
        return "the policy would change the last turn"
    broken = _unpaired(after)
    if broken:  # (nearly never: the history as sent is looked at only then)
        broken -= _unpaired(before)
    if broken:
        kind, call_id = min(broken)
        return f"the policy would leave tool {kind} {call_id} without its other half"
    return None


def _unpaired(messages: list[Message]) -> set[tuple[str, str]]:
    calls = {call for message in messages for call, _ in tool_calls(message)}
    results = {call for message in messages for call in tool_result_ids(message)}
    calls = {call for call in calls if isinstance(call, str)}
    results = {call for call in results if isinstance(call, str)}
    unanswered = {("call", call) for call in calls - results}
    return unanswered | {("result", call) for call in results - calls}


def _keep_cache_markers(before: list[Message], after: list[Message]) -> list[Message]:
    """``after``, with the content back of every tool result that held a ``cache_control``."""
    held = {
        call: holder["content"]
        for message in before
        for holder, call in _results(message)
        if isinstance(call, str) and _holds_cache_marker(holder.get("content"))
    }
    if not held:
        return after
    restored = [_restored(message, held) for message in after]
    return after if all(map(operator.is_, restored, after)) else restored


def _results(message: Message) -> Iterator[tuple[dict[str, Any], Any]]:
    """The dicts holding the message's tool results, with the call id each answers."""
    if message.get("role") == "tool":
        yield message, message.get("tool_call_id")
    for block in blocks(message):
        if is_block(block, "tool_result"):
            yield block, block.get("tool_use_id")


def _holds_cache_marker(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(part, dict) and "cache_control" in part for part in content
    )


def _restored(message: Message, held: dict[Any, Any]) -> Message:
    def kept(holder: dict[str, Any], call: Any) -> dict[str, Any]:
        if isinstance(call, str) and call in held and holder.get("content") is not held[call]:
            return {**holder, "content": held[call]}
        return holder

    if message.get("role") == "tool":
        return kept(message, message.get("tool_call_id"))
    content = message.get("content")
    if not isinstance(content, list):
        return message
    new = [kept(b, b.get("tool_use_id")) if is_block(b, "tool_result") else b for b in content]
    if all(map(operator.is_, new, content)):
        return message
    return {**message, "content": new}
