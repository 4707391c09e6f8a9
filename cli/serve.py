"""``ctxpack serve``: an API address in front of the model, compacting what the agent sends.

The command resolves its options once, builds the core's ASGI app (``compactor_core.serve``) and
runs it under uvicorn (the ``serve`` extra) on a socket it binds itself, so that ``--port 0``
can print the port it got as its first line on stdout before any request comes.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from compactor_core.serve import limits

from . import io, options, resolve
from .exit_codes import in_flag_words

if TYPE_CHECKING:
    from compactor_core.providers.catalog import ProviderSettings
    from compactor_core.serve.summaries import KeptSummarizer

DEFAULT_PORT = 8765


@click.command(
    epilog=options.epilog(
        "ctxpack serve --upstream https://api.anthropic.com  # ANTHROPIC_BASE_URL=http://127.0.0.1:8765",
        "ctxpack serve --upstream https://api.openai.com --port 8766  # OPENAI_BASE_URL=…:8766/v1",
        "ctxpack serve --port 0 --upstream https://api.openai.com  # prints the address it got",
        "ctxpack serve --upstream https://api.anthropic.com --provider anthropic --threshold 80000",
    )
)
@click.option(
    "--upstream",
    required=True,
    metavar="URL",
    help="The API to forward to, e.g. https://api.anthropic.com or https://api.openai.com; "
    "each request goes to URL followed by its own path.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on; 0 picks a free one. The first line on stdout is the address.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (0.0.0.0: every interface, reachable from other machines).",
)
@click.option(
    "--max-concurrency",
    type=click.IntRange(min=1),
    default=limits.MAX_CONCURRENCY,
    show_default=True,
    help="Requests in flight upstream at once; the others wait their turn.",
)
@click.option(
    "--max-body",
    type=click.IntRange(min=0),
    default=limits.MAX_BODY,
    show_default=True,
    metavar="BYTES",
    help="Largest request body read and compacted; a larger one is passed through as it is.",
)
@click.option(
    "--upstream-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=limits.TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help=f"How long the upstream may stay silent (connecting: {limits.CONNECT_TIMEOUT:g} s); "
    "then 504, or the stream is closed.",
)
@click.option(
    "--shutdown-timeout",
    type=click.IntRange(min=0),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="On SIGTERM, how long requests in flight may take to finish.",
)
@options.threshold_option
@options.policy_options
@options.micro_options
@options.compat_option
@options.prompt_options
@options.tokenizer_option
@options.provider_options
def serve(
    upstream: str,
    port: int,
    host: str,
    max_concurrency: int,
    max_body: int,
    upstream_timeout: float,
    shutdown_timeout: int,
    **given: Any,
) -> None:
    """Compact each request an agent sends its model, on the way: point the agent here.

    Serves the Anthropic Messages API (/v1/messages, streamed or not) and the OpenAI Chat
    Completions and Responses APIs (/v1/chat/completions, /v1/responses): each request's history
    goes through the policy of `ctxpack auto`, then to --upstream with the agent's own headers
    and key; the reply streams back unchanged. Everything else passes through untouched. One
    line per request on stderr; figures at /ctxpack/stats. Needs ctxpack[serve].
    """
    from compactor_core.serve.compaction import Compactor
    from compactor_core.serve.proxy import Proxy, ProxySettings

    uvicorn = _uvicorn()
    upstream = _checked_upstream(upstream)
    resolver = resolve.resolver(given)
    settings = resolve.settings(given, resolver, summarizing=True)
    summarizer = _summarizer(resolver.provider(), Path(resolver.state_folder))
    limits = ProxySettings(
        upstream, max_body=max_body, max_concurrency=max_concurrency, timeout=upstream_timeout
    )
    app = Proxy(limits, Compactor(settings, summarizer), _log, summarizer)
    listening = _listen(host, port)
    address = _address(listening)
    io.write_stdout(f"{address}\n".encode())
    io.warn(f"serving {address} -> {upstream} (auto, threshold {settings.threshold})")
    _run(uvicorn, app, listening, shutdown_timeout)


def _uvicorn() -> Any:
    from compactor_core.errors import ConfigError

    try:
        import uvicorn
    except ImportError:
        raise ConfigError(
            "ctxpack serve needs the serve extra: pip install 'ctxpack[serve]'"
        ) from None
    return uvicorn


def _run(uvicorn: Any, app: Any, listening: socket.socket, shutdown_timeout: int) -> None:
    """Serve until SIGTERM (or Ctrl-C): uvicorn then stops listening and lets the requests in
    flight finish, for ``shutdown_timeout`` seconds at most."""
    import logging

    config = uvicorn.Config(
        app,
        lifespan="on",
        ws="none",  # no WebSockets: Codex's upgrade goes upstream as a plain GET, refused there
        log_config=None,
        access_log=False,
        server_header=False,  # the upstream's own headers come back, not uvicorn's
        date_header=False,
        timeout_graceful_shutdown=shutdown_timeout,
    )
    logging.getLogger("uvicorn").setLevel(logging.CRITICAL)  # each request has ctxpack's line
    # uvicorn raises SIGTERM again once it has stopped: ignored then, so that the exit is 0
    signal.signal(signal.SIGTERM, lambda *_: None)
    uvicorn.Server(config).run(sockets=[listening])


def _checked_upstream(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(f"{url!r} is not an http(s) URL", param_hint="--upstream")
    return url.rstrip("/")


def _summarizer(provider: ProviderSettings, state_folder: Path) -> KeptSummarizer | None:
    """A model provider's summaries, kept by prefix; None for the built-in one (it needs none)."""
    if provider.name == "extractive":
        return None
    from compactor_core.providers.base import check_ready
    from compactor_core.providers.registry import build_provider
    from compactor_core.serve.summaries import KeptSummarizer, SummaryStore

    built = build_provider(provider)
    check_ready(built)  # a missing key is said now, not at the first long conversation
    identity = f"{provider.model}@{provider.base_url}" if provider.is_network else provider.command
    return KeptSummarizer(built, SummaryStore(state_folder), identity or "")


def _listen(host: str, port: int) -> socket.socket:
    from compactor_core.errors import ConfigError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        raise ConfigError(f"cannot listen on {host}:{port}: {reason}") from None


def _address(listening: socket.socket) -> str:
    host, port = listening.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _log(line: str) -> None:
    """A request's log line, its reasons in the command line's words."""
    io.warn(in_flag_words(line))
