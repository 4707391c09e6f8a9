"""HTTP plumbing shared by the network providers: one client, timeouts, retries, one-line errors.

What is retried, up to ``settings.retries`` times after the first attempt: connection errors
(refused, reset, dropped, connect timeouts), HTTP 408, 429 and 5xx (Anthropic's 529 "overloaded"
included). The wait before retry *n* is an exponential backoff (0.5 s, 1 s, 2 s, …, at most 8 s)
with equal jitter, so many agents that failed together do not retry together; when the server says
how long to wait (``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date) that wins.
A server that asks for more than :data:`MAX_RETRY_AFTER` seconds is not waited for: the failure is
reported at once (retryable, exit 75 under --strict), because a filter in an agent's loop must not
hang for minutes.

Not retried: a read timeout (a model too slow for ``--timeout`` would be as slow again; it is
reported as retryable, exit 75, but not asked again in the same run), other 4xx, a 429 that means
an exhausted quota rather than a rate (OpenAI's ``insufficient_quota``, Anthropic's spend limit), a
reply that is not JSON, or an error object in a 200 reply.

Errors are :class:`RetryableProviderError` (timeouts, 429, 5xx, connection: worth trying later) or
:class:`ProviderError` (everything else). Each message is one line: the provider and host, the HTTP
status, the server's own error message (clipped) — and never the API key, which is scrubbed from
anything the server echoes.

httpx is imported on the first request, not before: ``ctxpack auto`` on a small conversation never
asks for a summary and should not pay the ~0.3 s httpx and its TLS context cost.
"""

from __future__ import annotations

import email.utils
import itertools
import json
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import ConfigError, ProviderError, RetryableProviderError, SummaryCutOff
from ..text import clip
from .catalog import ProviderSettings
from .redaction import Redactor

if TYPE_CHECKING:
    import httpx

BACKOFF_FIRST = 0.5  # seconds before the first retry, doubled each time
BACKOFF_MAX = 8.0
MAX_RETRY_AFTER = 60.0  # longer than this, the server is not waited for
RETRYABLE_STATUSES = frozenset({408, 429})  # and every 5xx
QUOTA_CODES = frozenset({"insufficient_quota", "enforced_spend_limit_reached", "billing_error"})
MESSAGE_CHARS = 300  # of a server's error message, in ours

Sleep = Callable[[float], None]
Clock = Callable[[], float]


@dataclass
class _Failure:
    """One failed attempt: what to say, and whether and when it is worth another."""

    cause: str
    retryable: bool
    retry_after: float | None = None  # what the server asked for, in seconds
    again_now: bool = True  # retryable later, but not within this run (a slow model)
    status: int | None = None  # the HTTP status, when the server replied


@dataclass
class _Reply:
    data: Any


class JsonClient:
    """POSTs JSON to one API and returns the decoded reply, retrying what is worth retrying.

    ``sleep``, ``now`` (wall clock, for ``Retry-After`` dates) and ``jitter`` (a float in [0, 1))
    are parameters so tests can run the retry logic without waiting; ``transport`` lets a test
    hand httpx a transport of its own.
    """

    def __init__(
        self,
        provider: str,
        settings: ProviderSettings,
        headers: Mapping[str, str],
        *,
        sleep: Sleep = time.sleep,
        now: Clock = time.time,
        jitter: Callable[[], float] = random.random,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = _checked_base_url(provider, settings.base_url)
        self.label = f"{provider} ({_host(self.base_url)})"
        self.retries = settings.retries
        self.timeout = settings.timeout or None  # 0 means no limit
        self.attempts = 0  # requests sent, retries included: for reports and tests
        self._headers = dict(headers)
        self._redactor = Redactor(settings.api_key)
        self._check_key = settings.check_key
        self._sleep, self._now, self._jitter = sleep, now, jitter
        self._transport = transport
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def ready(self) -> None:
        """Raise ConfigError if the API cannot be asked at all: a hosted service without its key."""
        self._check_key()

    def post_json(self, path: str, body: Mapping[str, Any]) -> Any:
        """The decoded JSON reply to ``POST {base_url}{path}``; raise ProviderError on failure."""
        self.ready()  # nothing is sent without the key a hosted service needs
        content = _encode(body)
        for retry in itertools.count():
            outcome = self._attempt(path, content)
            if isinstance(outcome, _Reply):
                return outcome.data
            self._sleep(self._wait_before_retry(outcome, retry))
        raise AssertionError("unreachable")

    def _wait_before_retry(self, failure: _Failure, retry: int) -> float:
        """Seconds to wait before trying again; raise the failure when there is no again."""
        if not failure.retryable:
            raise ProviderError(self._say(failure.cause), failure.status)
        if retry >= self.retries or not failure.again_now:
            tries = f" (after {retry + 1} attempts)" if retry else ""
            raise RetryableProviderError(self._say(failure.cause + tries), failure.status)
        if failure.retry_after is not None:
            if failure.retry_after > MAX_RETRY_AFTER:
                asked = f"the server asks to retry after {failure.retry_after:.0f} s"
                raise RetryableProviderError(
                    self._say(f"{failure.cause} ({asked})"), failure.status
                )
            return failure.retry_after
        backoff = min(BACKOFF_MAX, BACKOFF_FIRST * 2**retry)
        return backoff / 2 + self._jitter() * backoff / 2  # equal jitter

    # --- one attempt -----------------------------------------------------------------------------

    def _attempt(self, path: str, content: bytes) -> _Reply | _Failure:
        import httpx

        self.attempts += 1
        try:
            response = self._http().post(self.base_url + path, content=content)
        except httpx.TimeoutException as error:
            # A model too slow for --timeout will be as slow again: asking it twice more would
            # triple the wait in an agent's loop. Only a connection that never opened is retried.
            cause = f"no reply within {self.timeout:g} s ({_timeout_kind(error)})"
            return _Failure(cause, True, again_now=isinstance(error, httpx.ConnectTimeout))
        except httpx.TransportError as error:
            return _Failure(f"connection failed: {_cause(error)}", True)
        if response.is_success:
            return self._decode(response)
        return self._http_failure(response)

    def _http(self) -> httpx.Client:
        import httpx

        with self._client_lock:  # batch threads share one provider, and so one client
            if self._client is None:
                self._client = httpx.Client(
                    headers={**self._headers, "content-type": "application/json"},
                    timeout=httpx.Timeout(self.timeout),
                    transport=self._transport,
                )
            return self._client

    def _decode(self, response: httpx.Response) -> _Reply | _Failure:
        data, raw = self._read(response)
        if data is None:
            text = self._redactor.text(raw)
            kind = response.headers.get("content-type", "no content type")
            return _Failure(f"the reply is not JSON ({kind}): {clip(text, 160)!r}", False)
        message = error_message(data)
        if message is not None:  # some gateways report errors with a 200
            return _Failure(f"the reply is an error: {message}", False)
        return _Reply(data)

    def _http_failure(self, response: httpx.Response) -> _Failure:
        status = response.status_code
        data, raw = self._read(response)
        said = error_message(data) or clip(self._redactor.text(raw), 160) or response.reason_phrase
        cause = f"HTTP {status}: {said}"
        if 300 <= status < 400 and response.headers.get("location"):
            cause += f" (redirected to {response.headers['location']}: check base_url=URL)"
        retryable = status in RETRYABLE_STATUSES or status >= 500
        if status == 429 and _quota_exhausted(data):
            retryable = False  # waiting will not help before the quota is raised
        return _Failure(cause, retryable, retry_after(response.headers, self._now), status=status)

    def _read(self, response: httpx.Response) -> tuple[Any, str]:
        """The body's JSON value, the key redacted (None if it is not JSON), and its raw text:
        redact that before anything clips it."""
        text = response.content.decode("utf-8", "replace")
        try:
            return self._redactor.value(json.loads(text)), text
        except ValueError:
            return None, text

    def _say(self, cause: str) -> str:
        return one_line(f"{self.label}: {cause}", self._redactor)


# --- keys ----------------------------------------------------------------------------------------


def api_key(settings: ProviderSettings) -> str | None:
    """The key as it can go in a header: surrounding whitespace dropped, then checked."""
    if not settings.api_key:
        return None
    key = settings.api_key.strip()
    if not key.isascii() or not key.isprintable():
        # httpx would refuse it with an error that quotes the header, key and all
        raise ConfigError(
            f"the API key in {settings.key_variable or 'the environment'} holds characters an "
            "HTTP header cannot carry (a line break, a non-ASCII quote?)"
        )
    return key


def one_line(text: str, redactor: Redactor | None = None) -> str:
    """``text`` on one line, the key redacted (before joining lines, so none is split)."""
    return " ".join((redactor.text(text) if redactor else text).split())


# --- what replies say ---------------------------------------------------------------------------


def summary_of(
    label: str,
    text: Any,
    *,
    refusal: Any = None,
    cut_off: bool = False,
    max_tokens: int | None = None,
) -> str:
    """The summary in a reply, exactly as the model wrote it; ProviderError if there is none.

    A summary cut off at ``max_tokens`` is raised as SummaryCutOff, which carries it: full
    compaction keeps it with a warning (it is still a summary), unless whole summaries are required.
    """
    if isinstance(refusal, str) and refusal.strip():
        raise ProviderError(f"{label}: the model refused: {clip(refusal, 160)}")
    if refusal is True:
        raise ProviderError(f"{label}: the model refused to summarize")
    if text is not None and not isinstance(text, str):
        raise ProviderError(f"{label}: the reply's text is {type(text).__name__}, not a string")
    cut = f"the summary was cut off at max_tokens ({max_tokens}): raise max_tokens=N"
    if not text or not text.strip():
        raise ProviderError(f"{label}: {cut if cut_off else 'the reply is empty'}")
    if cut_off:
        raise SummaryCutOff(f"{label}: {cut}", text)
    return text


# --- what servers say ----------------------------------------------------------------------------


def error_message(data: Any) -> str | None:
    """The error a reply reports, as ``message (type)``; None when it reports none.

    Shapes seen: OpenAI and llama.cpp ``{"error": {"message", "type", "code"}}``, Anthropic
    ``{"type": "error", "error": {"type", "message"}}``, Ollama ``{"error": "..."}``, vLLM
    ``{"object": "error", "message": ...}``, FastAPI ``{"detail": ...}``.
    """
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type") or error.get("code")
        text = clip(str(message), MESSAGE_CHARS) if message else "no message"
        return f"{text} ({kind})" if isinstance(kind, str) and kind else text
    if isinstance(error, str) and error:
        return clip(error, MESSAGE_CHARS)
    if data.get("type") == "error" or data.get("object") == "error":
        return clip(str(data.get("message") or "no message"), MESSAGE_CHARS)
    if "detail" in data and len(data) == 1:
        return clip(str(data["detail"]), MESSAGE_CHARS)
    return None


def _quota_exhausted(data: Any) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("error"), dict):
        return False
    error = data["error"]
    details = error.get("details") if isinstance(error.get("details"), dict) else {}
    codes = {error.get("code"), error.get("type"), details.get("error_code")}
    return bool(codes & QUOTA_CODES)


def retry_after(headers: Mapping[str, str], now: Clock = time.time) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, else ``Retry-After`` (seconds or date).

    None when it asks nothing readable; a date in the past is 0.
    """
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:  # HTTP dates are GMT
        return None
    return max(0.0, moment.timestamp() - now())


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    if number is None or number != number or number < 0 or number == float("inf"):
        return None
    return number


# --- small helpers -------------------------------------------------------------------------------


def _encode(body: Mapping[str, Any]) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate (valid in JSON input, not in UTF-8): send it escaped
        return json.dumps(body).encode("ascii")


def _checked_base_url(provider: str, url: str | None) -> str:
    if not url:
        raise ConfigError(f"provider {provider!r} needs a base URL: use base_url=URL")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        shown = url.rpartition("@")[2]  # never a user:password part
        raise ConfigError(
            f"base URL {shown!r} for provider {provider!r} must start with http:// or https://"
        )
    return url.rstrip("/")


def _host(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc.rpartition("@")[2] or url  # never the user:password part


def _timeout_kind(error: Exception) -> str:
    name = type(error).__name__  # ConnectTimeout, ReadTimeout, WriteTimeout, PoolTimeout
    return {"ConnectTimeout": "connect", "ReadTimeout": "read", "WriteTimeout": "write"}.get(
        name, name
    ) + " timeout"


def _cause(error: Exception) -> str:
    text = str(error) or type(error).__name__
    return clip(text, 160)
