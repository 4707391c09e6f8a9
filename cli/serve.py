"""``ctxpack serve``: an API address in front of the model, compacting what the agent sends.

The command resolves its options once, builds the core's ASGI app (``compactor_core.serve``) and
runs it under uvicorn (the ``serve`` extra) on a socket it binds itself, so that ``--port 0``
can print the port it got as its first line on stdout before any request comes.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from compactor_core import defaults, run_request
from compactor_core.disk.private_dir import PrivateDir
from compactor_core.errors import ConfigError
from compactor_core.providers.base import check_ready
from compactor_core.providers.registry import build_provider
from compactor_core.serve import limits
from compactor_core.serve.compaction import Compactor
from compactor_core.serve.connections import guarded_protocol
from compactor_core.serve.guard import local_hosts
from compactor_core.serve.proxy import Proxy, ProxySettings
from compactor_core.serve.summaries import KeptSummarizer, SummaryStore
from compactor_core.settings import RunSettings
from compactor_core.snapshots.locations import user_store

from . import io, options, resolve
from .exit_codes import in_flag_words
from .service import install_service

if TYPE_CHECKING:
    from compactor_core.providers.catalog import ProviderSettings

DEFAULT_PORT = 8765


# What serve does with each request: its own limits, then auto's options (ctxpack run too).
proxy_options = options.bundle(
    click.option(
        "--max-concurrency",
        type=click.IntRange(min=1),
        default=limits.MAX_CONCURRENCY,
        show_default=True,
        help="Requests in flight upstream at once; the others wait their turn.",
    ),
    click.option(
        "--max-body",
        type=click.IntRange(min=0),
        default=limits.MAX_BODY,
        show_default=True,
        metavar="BYTES",
        help="Largest request body read and compacted; a larger one is passed through as it is.",
    ),
    click.option(
        "--upstream-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=limits.TIMEOUT,
        show_default=True,
        metavar="SECONDS",
        help=f"How long the upstream may stay silent (connecting: {limits.CONNECT_TIMEOUT:g} s); "
        "then 504, or the stream is closed.",
    ),
    click.option(
        "--client-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=limits.CLIENT_TIMEOUT,
        show_default=True,
        metavar="SECONDS",
        help="How long a client may take to send its request's headers, or pause in its body; "
        "then its connection is closed, or 408.",
    ),
    click.option(
        "--shutdown-timeout",
        type=click.IntRange(min=0),
        default=30,
        show_default=True,
        metavar="SECONDS",
        help="On SIGTERM, how long requests in flight may take to finish.",
    ),
    options.threshold_option,
    options.policy_options,
    options.micro_options,
    options.compat_option,
    options.prompt_options,
    options.tokenizer_option,
    options.provider_options,
)


@click.command(
    cls=options.RawArgsCommand,
    epilog=options.epilog(
        "ctxpack serve --upstream https://api.anthropic.com  # ANTHROPIC_BASE_URL=http://127.0.0.1:8765",
        "ctxpack serve --upstream https://api.openai.com --port 8766  # OPENAI_BASE_URL=…:8766/v1",
        "ctxpack serve --port 0 --upstream https://api.openai.com  # prints the address it got",
        "ctxpack serve --upstream https://api.anthropic.com --provider anthropic --threshold 80000",
        "ctxpack serve --install --upstream https://api.anthropic.com  # at every log-in",
    ),
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
    help="Address to listen on; one other than this machine's own (127.0.0.1, ::1, localhost) "
    "needs --allow-remote.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Listen where other machines reach serve (--host 0.0.0.0): whoever reaches the port "
    "talks to the upstream as the agent, with any key they send, and uses --provider's key "
    "for summaries.",
)
@click.option(
    "--install",
    is_flag=True,
    help="Install this command, without --install, as a service started at log-in (a systemd "
    "user unit; a launchd agent on macOS), and say how to start it.",
)
@proxy_options
def serve(
    upstream: str,
    port: int,
    host: str,
    allow_remote: bool,
    install: bool,
    max_concurrency: int,
    max_body: int,
    upstream_timeout: float,
    client_timeout: float,
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
    upstream = _checked_upstream(upstream)
    _check_host(host, allow_remote)
    if install:
        return install_service([a for a in options.raw_args() if a != "--install"])
    uvicorn = _uvicorn()
    resolver = resolve.resolver(given)
    told = RunSettings("auto", resolve.settings(given, resolver, summarizing=True))
    tools = resolver.config.get(defaults.TOOLS_TABLE)
    # serve keeps no snapshots (no session id, no store): its settings take the [tools] rules
    settings = run_request.resolve(
        told, tools=tools, config_path=resolver.file_of(defaults.TOOLS_TABLE)
    ).settings
    listening = _listen(host, port)
    address = _address(listening)
    provider = _not_through_itself(resolver.provider(), address, upstream)
    summarizer = _summarizer(provider, _state_folder())
    limits = ProxySettings(
        upstream,
        max_body=max_body,
        max_concurrency=max_concurrency,
        timeout=upstream_timeout,
        body_timeout=client_timeout,
        hosts=None if allow_remote else local_hosts(listening.getsockname()[1], host),
    )
    compactor = Compactor(settings, summarizer, originals=resolve.originals_store())
    app = Proxy(limits, compactor, _log, summarizer)
    server = uvicorn_server(uvicorn, app, shutdown_timeout, client_timeout)
    io.write_stdout(f"{address}\n".encode())
    io.warn(f"serving {address} -> {upstream} (auto, threshold {settings.threshold})")
    server.run(sockets=[listening])


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError:
        raise ConfigError(
            "ctxpack serve needs the serve extra: pip install 'ctxpack[serve]'"
        ) from None
    return uvicorn


def uvicorn_server(uvicorn: Any, app: Any, shutdown_timeout: int, client_timeout: float) -> Any:
    """uvicorn's server of ``app``, which stops at SIGTERM (or Ctrl-C) from now on: it stops
    listening and lets the requests in flight finish, for ``shutdown_timeout`` seconds at most."""
    config = uvicorn.Config(
        app,
        http=guarded_protocol(client_timeout),
        limit_concurrency=limits.MAX_CONNECTIONS,
        lifespan="on",
        ws="none",  # no WebSockets: Codex's upgrade goes upstream as a plain GET, refused there
        log_config=None,
        access_log=False,
        server_header=False,  # the upstream's own headers come back, not uvicorn's
        date_header=False,
        timeout_graceful_shutdown=shutdown_timeout,
    )
    logging.getLogger("uvicorn").setLevel(logging.CRITICAL)  # each request has ctxpack's line
    server = uvicorn.Server(config)
    # uvicorn handles SIGTERM only once it runs: one that comes before (the caller read the
    # address and stopped at once) stops it as soon as it starts, and the one uvicorn raises
    # again once it has stopped comes here too, so that the exit is 0
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    return server


def _checked_upstream(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(f"{url!r} is not an http(s) URL", param_hint="--upstream")
    if parts.username is not None or parts.password is not None:
        # httpx would send it as Basic authorization, over the agent's own key
        raise click.BadParameter(
            "a user name or password in the URL is refused: the agent's own key goes upstream",
            param_hint="--upstream",
        )
    if parts.query or parts.fragment:
        raise click.BadParameter(f"{url!r}: no query or fragment", param_hint="--upstream")
    return url.rstrip("/")


LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _check_host(host: str, allow_remote: bool) -> None:
    if host not in LOOPBACK and not host.startswith("127.") and not allow_remote:
        raise click.BadParameter(
            f"{host} is reachable from other machines: add --allow-remote if that is meant "
            "(whoever reaches it talks to the upstream through serve)",
            param_hint="--host",
        )


def _not_through_itself(
    provider: ProviderSettings, address: str, upstream: str
) -> ProviderSettings:
    """The summary provider, never pointed at serve itself: its base URL defaults to
    ANTHROPIC_BASE_URL / OPENAI_BASE_URL, which point the agent here, and a summary asked of
    serve would wait for itself. The upstream answers instead, and the log says so."""
    if not provider.is_network or not _same_place(provider.base_url, address):
        return provider
    io.warn(f"summaries: {provider.base_url} is serve itself; asking the upstream {upstream}")
    return dataclasses.replace(provider, base_url=upstream)


def _same_place(url: str | None, address: str) -> bool:
    if not url:
        return False
    given, ours = urlsplit(url), urlsplit(address)
    local = {"127.0.0.1", "localhost", "::1", ours.hostname}
    default = 443 if given.scheme == "https" else 80
    return given.hostname in local and (given.port or default) == ours.port


def _state_folder() -> Path:
    """The user's state folder (a relative XDG_STATE_HOME is ignored, as the snapshot store
    ignores it), checked as the snapshot store checks its own: the summaries kept there are
    sent to the model."""
    folder = user_store(os.environ.get("XDG_STATE_HOME"), os.environ.get("HOME"))
    opened = PrivateDir.open(folder, create=True, label=str(folder))  # UnsafeLocation: 77
    if opened is not None:
        opened.close()
    return folder


def _summarizer(provider: ProviderSettings, state_folder: Path) -> KeptSummarizer:
    """The provider's summaries, kept by prefix: a model's on disk too (the same words after a
    restart); the built-in one's in memory only (it writes the same words anyway, but a proxy
    sent the same prefix again and again need not compose them again: a 1 MB history's summary
    takes some 60 ms)."""
    if provider.name == "extractive":
        return KeptSummarizer(build_provider(provider), SummaryStore(None), "extractive")
    built = build_provider(provider)
    check_ready(built)  # a missing key is said now, not at the first long conversation
    identity = f"{provider.model}@{provider.base_url}" if provider.is_network else provider.command
    return KeptSummarizer(built, SummaryStore(state_folder), identity or "")


def _listen(host: str, port: int) -> socket.socket:
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
