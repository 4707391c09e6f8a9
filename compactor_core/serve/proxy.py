"""The ASGI app of ``ctxpack serve``: model requests compacted on their way to the upstream API.

A ``POST`` to one of the three model APIs (``wire.py``) is read whole (up to ``max_body``
bytes), its history goes through the policy in a worker thread (so that other streams keep
flowing), and the result goes upstream with the caller's own headers. Everything else — other
routes and methods, a body larger than ``max_body`` — is passed through untouched, streamed
both ways. The upstream's reply comes back as it arrives: its status, its headers but the
hop-by-hop ones, its bytes chunk by chunk (an SSE stream event by event). ``GET /ctxpack/stats``
is answered here.

A request is read whole before it takes its place among the ``max_concurrency`` in flight
upstream (the others wait their turn), so a client that sends slowly holds no place; one that
pauses over ``body_timeout`` between two pieces gets a 408. What a browser page or another host
could send is refused before anything is read: a target that is not a path (``@host/…``,
``http://…``, ``*``: 400, the upstream URL is the base joined with a path, never a string that
could name another host), an ``Origin`` that is not this machine's, a ``Host`` that is not an
address serve listens on (DNS rebinding) (403), and a model request whose body is declared as
anything but JSON (415: a page's form or ``text/plain`` fetch). An
upstream that cannot be reached, or says nothing for ``timeout`` seconds before its reply
starts, gets the caller a 502 or 504 with a one-line JSON error; one that fails in the middle of
a reply has the caller's connection closed, so that a cut stream never looks complete. A caller
that goes away ends its upstream request too. Each request is logged in one line through
``log``: never a header, a query string or a body.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..conversation.formats import dumps
from . import limits
from .compaction import AS_IS, COMPACTED, UNCHANGED, Compactor, RequestReport
from .guard import printable, refusal, target_path
from .memory import give_back_memory
from .stats import Stats, billed
from .summaries import KeptSummarizer
from .usage import UsageReader
from .wire import Wire, wire_for

if TYPE_CHECKING:
    import httpx

    from ..replay.cache_rules import (
        Usage,  # imported where it is used: importing it imports its CLI's click
    )

Scope = MutableMapping[str, Any]
Event = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Event]]
Send = Callable[[Event], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

STATS_PATH = "/ctxpack/stats"
# Headers of one connection, not of the request (RFC 9110 §7.6.1), and those the proxy makes
# anew for its own connection upstream.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
_OWN_CONNECTION = frozenset({b"host", b"expect"})


@dataclass(frozen=True)
class ProxySettings:
    upstream: str  # the API's base URL; a request goes to it followed by the request's path
    max_body: int = limits.MAX_BODY
    max_concurrency: int = limits.MAX_CONCURRENCY
    timeout: float = limits.TIMEOUT
    connect_timeout: float = limits.CONNECT_TIMEOUT
    body_timeout: float = limits.CLIENT_TIMEOUT
    max_messages: int = limits.MAX_MESSAGES
    # the Host values a request may carry (the addresses serve listens on); None: any, as
    # for a serve reachable from other machines (--allow-remote)
    hosts: frozenset[str] | None = None


class ClientGone(Exception):
    """The caller closed its connection before its reply was whole."""


class BodyTooSlow(Exception):
    """The caller stopped sending its body for longer than ``body_timeout``."""


class UpstreamFailed(Exception):
    """The upstream's reply broke off: the caller's connection is closed, not ended cleanly."""


@dataclass
class _Done:
    """What became of one request, for its log line and the stats."""

    status: int
    note: str = ""
    report: RequestReport | None = None
    upstream_failed: bool = False  # answered here with 502 or 504
    size: int = 0  # of the body, as far as it was read before it went upstream
    usage: Usage | None = None  # what the upstream's reply says it billed
    measured: str = ""  # the bill next to its untouched estimate, for the log line


class Proxy:
    def __init__(
        self,
        settings: ProxySettings,
        compactor: Compactor,
        log: Callable[[str], None],
        summarizer: KeptSummarizer | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import httpx  # not at the top: httpx imports click, which importing the core never does

        self.settings = settings
        self.compactor = compactor
        self.log = log
        self.summarizer = summarizer  # for its figures in the stats
        self.clock = clock
        self.stats = Stats()
        self._base = settings.upstream.rstrip("/")
        self._upstream = httpx.URL(self._base)
        self._slots = asyncio.Semaphore(settings.max_concurrency)
        threads = min(settings.max_concurrency, limits.COMPACTION_THREADS)
        self._workers = ThreadPoolExecutor(threads, "ctxpack-compact")
        timeout = httpx.Timeout(settings.timeout, connect=settings.connect_timeout, pool=None)
        pool = httpx.Limits(max_connections=settings.max_concurrency)
        self._client = httpx.AsyncClient(transport=transport, timeout=timeout, limits=pool)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http" and await self._http(scope, receive, send):
            # a large request is done and its memory free: give it back to the system
            await asyncio.get_running_loop().run_in_executor(self._workers, give_back_memory)

    def report(self) -> dict[str, Any]:
        figures = self.stats.report()
        if self.summarizer is not None:
            figures["summaries_written"] = self.summarizer.written
            figures["summaries_reused"] = self.summarizer.reused
        return figures

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await self._client.aclose()
                self._workers.shutdown(wait=False, cancel_futures=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- one request -----------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer one request; whether it was a large one."""
        started = self.clock()
        method, path = scope["method"], scope["path"]
        wire = wire_for(method, path)
        refused = refusal(scope, wire, self.settings.hosts)
        if refused is not None:
            status, kind, message = refused
            await _reply(send, status, _error(kind, f"ctxpack serve: {message}"))
            self.log(_line(method, path, _Done(status, message), self.clock() - started))
            return False
        if method == "GET" and path == STATS_PATH:
            await _reply(send, 200, self.report())
            self.log(_line(method, path, _Done(200, "answered here"), self.clock() - started))
            return False
        replying = _Replying(send)
        done = _Done(0)  # filled in as the exchange goes, so that a broken one is logged too
        try:
            # read before taking a place: a client that sends slowly holds none
            body = await _read_body(receive, self.settings.max_body, self.settings.body_timeout)
            done.size = sum(len(chunk) for chunk in body[0])
            async with self._slots:
                await self._exchange(scope, body, receive, replying, wire, done)
        except BodyTooSlow:
            done.status, done.note = 408, "the caller's body stalled"
            message = f"ctxpack serve: no part of the body for {self.settings.body_timeout:g} s"
            await _reply(send, 408, _error("request_timeout", message))
        except ClientGone:
            done.note = "the caller went away"
        except UpstreamFailed as error:
            done.note = f"the upstream's reply broke off: {error}"
            raise  # the connection is closed: a cut stream must not look whole
        except Exception as error:  # a bug of ctxpack: one line, and a 500 if nothing was sent
            done.note = f"internal error: {type(error).__name__}: {_one_line(error)}"
            if replying.started:
                raise
            done.status = 500
            message = "ctxpack serve: internal error (a bug in ctxpack; its log has the line)"
            await _reply(send, 500, _error("internal_error", message))
        finally:
            self._account(wire, done)
            self.log(_line(method, path, done, self.clock() - started))
        return done.size > limits.LARGE_BODY

    async def _exchange(
        self,
        scope: Scope,
        body: tuple[list[bytes], bool],
        receive: Receive,
        send: Send,
        wire: Wire | None,
        done: _Done,
    ) -> None:
        import httpx

        chunks, whole = body
        encoding = _encoding(scope["headers"])
        if whole:
            data = b"".join(chunks)
            if wire is not None and encoding:
                done.report = RequestReport(AS_IS, f"a body in content-encoding {encoding}")
            elif wire is not None:
                data, done.report = await self._compacted(wire, data)
            content: bytes | AsyncIterator[bytes] = data
            headers = _request_headers(scope["headers"], len(data))
        else:
            if wire is not None:
                done.report = RequestReport(AS_IS, f"body over {self.settings.max_body} bytes")
            content = _streamed(chunks, receive, self.settings.body_timeout)
            headers = _request_headers(scope["headers"], None)
        request = httpx.Request(scope["method"], self._url(scope), headers=headers, content=content)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TimeoutException:
            await self._failed(send, done, 504, "upstream_timeout", "did not answer in time")
            return
        except httpx.HTTPError as error:
            reason = f"could not be reached: {_cause(error)}"
            await self._failed(send, done, 502, "upstream_unreachable", reason)
            return
        done.status = response.status_code
        done.note = "" if wire else "passed through"
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        reader = UsageReader(streamed) if wire is not None else None
        try:
            await _relay(response, receive, send, reader)
        except httpx.HTTPError as error:
            raise UpstreamFailed(_cause(error)) from None
        finally:
            await response.aclose()
        done.usage = reader.usage() if reader is not None else None

    async def _compacted(self, wire: Wire, data: bytes) -> tuple[bytes, RequestReport]:
        if data.count(b'"role"') > self.settings.max_messages:  # parsed, it could take gigabytes
            return data, RequestReport(AS_IS, f"over {self.settings.max_messages} messages")
        loop = asyncio.get_running_loop()
        forwarded = await loop.run_in_executor(self._workers, self.compactor.compact, wire, data)
        return forwarded.body, forwarded.report

    async def _failed(self, send: Send, done: _Done, status: int, kind: str, reason: str) -> None:
        """The caller's answer when the upstream gave none: ``status``, one line of JSON."""
        done.status, done.note, done.upstream_failed = status, f"upstream {reason}", True
        message = f"ctxpack serve: the upstream {self._origin()} {reason}"
        await _reply(send, status, _error(kind, message))

    def _url(self, scope: Scope) -> httpx.URL:
        """The upstream's base with the request's path (checked to be one) joined to its own."""
        path = target_path(scope)
        query = scope.get("query_string", b"")
        joined = self._upstream.raw_path.rstrip(b"/") + path + (b"?" + query if query else b"")
        return self._upstream.copy_with(raw_path=joined)

    def _origin(self) -> str:
        """The upstream's scheme, host and port: never a user name or password in its URL."""
        parts = urlsplit(self._base)
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname}{port}"

    def _account(self, wire: Wire | None, done: _Done) -> None:
        stats = self.stats
        stats.requests += 1
        stats.upstream_errors += done.upstream_failed
        if wire is None or done.report is None:
            return
        stats.model_requests += 1
        report = done.report
        if report.outcome == AS_IS:
            stats.as_is += 1
            if done.usage is not None:
                done.measured = self.stats.measure(report, done.usage)
            return
        if report.outcome == COMPACTED:
            stats.compacted += 1
        elif report.outcome == UNCHANGED:
            stats.unchanged += 1
        stats.tokens_in += report.tokens_in
        stats.tokens_out += report.tokens_out
        if report.reuse.previous:
            stats.cache_stable += report.reuse.stable
            stats.cache_breaks += not report.reuse.stable
        stats.billed_in += billed(report.cached_in, report.tokens_in, report.pricing)
        stats.billed_out += billed(report.cached_out, report.tokens_out, report.pricing)
        if done.usage is not None:
            done.measured = self.stats.measure(report, done.usage)


# --- the caller's side -------------------------------------------------------------------------


async def _read_body(receive: Receive, limit: int, timeout: float) -> tuple[list[bytes], bool]:
    """The body's chunks, and whether that is all of it (False: it is larger than ``limit``)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await _next(receive, timeout)
        if event["type"] == "http.disconnect":
            raise ClientGone
        chunk = event.get("body", b"")
        if chunk:
            chunks.append(chunk)
            size += len(chunk)
        if not event.get("more_body", False):
            return chunks, True
        if size > limit:
            return chunks, False


async def _streamed(chunks: list[bytes], receive: Receive, timeout: float) -> AsyncIterator[bytes]:
    """The chunks already read, then the rest of the body as it comes."""
    for chunk in chunks:
        yield chunk
    chunks.clear()  # sent: not kept in memory while the rest streams
    while True:
        event = await _next(receive, timeout)
        if event["type"] == "http.disconnect":
            raise ClientGone
        if event.get("body"):
            yield event["body"]
        if not event.get("more_body", False):
            return


async def _next(receive: Receive, timeout: float) -> Event:
    """The caller's next event; BodyTooSlow when none comes within ``timeout`` seconds."""
    try:
        return await asyncio.wait_for(receive(), timeout)
    except TimeoutError:
        raise BodyTooSlow from None


def _request_headers(headers: Headers, length: int | None) -> Headers:
    """The caller's headers for the upstream; ``length``: the body's, when it is sent whole."""
    drop = HOP_BY_HOP | _OWN_CONNECTION | _named_by_connection(headers)
    if length is not None:
        drop |= {b"content-length"}
    kept = [(name, value) for name, value in headers if name.lower() not in drop]
    had_length = any(name.lower() == b"content-length" for name, _ in headers)
    if length is not None and (length or had_length):
        kept.append((b"content-length", str(length).encode()))
    return kept


def _encoding(headers: Headers) -> str:
    """The request body's content coding (gzip, zstd, …), or "" when it is as it is."""
    for name, value in headers:
        if name.lower() == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
            return value.decode("latin-1").strip()
    return ""


def _named_by_connection(headers: Headers) -> frozenset[bytes]:
    """Headers that ``Connection`` names are hop-by-hop too."""
    named = (value for name, value in headers if name.lower() == b"connection")
    return frozenset(token.strip().lower() for value in named for token in value.split(b","))


class _Replying:
    """The ASGI ``send`` of one request, remembering whether its reply has started."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def __call__(self, event: Event) -> None:
        self.started = True
        await self._send(event)


def _error(kind: str, message: str) -> dict[str, Any]:
    """An error body that Anthropic's and OpenAI's clients both read (``error.message``)."""
    return {"type": "error", "error": {"type": kind, "message": message}}


async def _reply(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = dumps(payload) + b"\n"
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


# --- the upstream's side -----------------------------------------------------------------------


async def _relay(
    response: httpx.Response, receive: Receive, send: Send, reader: UsageReader | None
) -> None:
    """The upstream's reply to the caller, as it arrives; ClientGone if the caller leaves first.
    ``reader`` sees each chunk as it goes."""
    headers = [
        (name, value)
        for name, value in response.headers.raw
        if name.lower() not in HOP_BY_HOP | _named_by_connection(response.headers.raw)
    ]
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    relay = asyncio.ensure_future(_body(response, send, reader))
    gone = asyncio.ensure_future(_disconnect(receive))
    try:
        await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (relay, gone):
            task.cancel()
    if relay.done() and not relay.cancelled():
        relay.result()  # an upstream that broke off raises here
        return
    raise ClientGone


async def _body(response: httpx.Response, send: Send, reader: UsageReader | None) -> None:
    async for chunk in response.aiter_raw():
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if reader is not None:
            reader.feed(chunk)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _cause(error: httpx.HTTPError) -> str:
    return _one_line(error) or type(error).__name__


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:300]


# --- the log line ------------------------------------------------------------------------------


def _line(method: str, path: str, done: _Done, seconds: float) -> str:
    """E.g. ``POST /v1/messages 200: tokens 48213 -> 12004, 14 results truncated, 0.84s``."""
    parts = [_report_text(done.report)] if done.report is not None else []
    if done.measured:
        parts.append(done.measured)
    if done.note:
        parts.append(done.note)
    parts.append(f"{seconds:.2f}s")
    status = done.status or "-"
    return f"{method} {printable(path)} {status}: {', '.join(parts)}"


def _report_text(report: RequestReport) -> str:
    if report.outcome == AS_IS:
        return f"forwarded as is ({report.reason})"
    parts = [f"tokens {report.tokens_in} -> {report.tokens_out}"]
    if report.truncated:
        parts.append(f"{report.truncated} results truncated")
    if report.summary.value in ("compacted", "failed"):
        parts.append(f"summary {report.summary.value}")
    if report.error:
        parts.append(f"({report.error})")
    reuse = report.reuse
    if not reuse.previous:
        parts.append("new conversation")
    elif reuse.stable:
        parts.append("cache-stable")
    else:
        parts.append(f"cache broken after message {reuse.forwarded_prefix}")
    return ", ".join(parts)
