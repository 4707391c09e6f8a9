"""What serve refuses before it reads a request: what a browser page, another host or a broken
client could send (issue 36).

- A target that is not a path (``@127.0.0.1:19002/v1/messages``, ``.evil.example/x``, an
  absolute ``http://…`` or ``*``): 400. The upstream URL is then the base joined with the path.
- An ``Origin`` other than this machine's (a web page in the user's browser): 403.
- A ``Host`` that is not an address serve listens on (a page on a name that resolves to
  127.0.0.1, DNS rebinding): 403, unless serve listens for other machines (``--allow-remote``).
- A model request whose body is declared as anything but JSON (a page's form or ``text/plain``
  fetch, which a browser sends without asking): 415.
- A WebSocket upgrade (Codex's first try, ``GET /v1/responses``): 426, answered here. serve
  speaks HTTP only; passed upstream as a plain ``GET`` it got a 404, on which Codex 0.169.0 tries
  again five times over some 6 s, an error line each; on a 426 it speaks HTTP at once.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any
from urllib.parse import urlsplit

from .wire import Wire

Scope = MutableMapping[str, Any]
Refusal = tuple[int, str, str]  # status, the error's kind, its message


def target_path(scope: Scope) -> bytes:
    """The request target's path, which must be one (``/…``); ValueError for anything else."""
    path = scope.get("raw_path") or scope["path"].encode()
    if not path.startswith(b"/"):
        raise ValueError(path)
    return path


def refusal(scope: Scope, wire: Wire | None, hosts: frozenset[str] | None) -> Refusal | None:
    """Why a request is refused before it is read, as (status, kind, message); None: it is not.

    What a browser page, another host or a broken client could send: a target that is not a
    path, an ``Origin`` other than this machine's, a ``Host`` serve does not listen as, a model
    request declared as anything but JSON; and a WebSocket upgrade, which serve does not speak."""
    try:
        target_path(scope)
    except ValueError:
        return 400, "invalid_request_error", "the request target must be a path (/…)"
    headers = {name.lower(): value for name, value in scope["headers"]}
    origin = headers.get(b"origin")
    if origin is not None and not _is_local_origin(origin):
        return 403, "permission_error", "a request from another origin is refused"
    host = headers.get(b"host", b"").decode("latin-1").lower()
    if hosts is not None and host not in hosts:
        return 403, "permission_error", "a request for another host name is refused"
    kind = headers.get(b"content-type")
    if wire is not None and kind is not None and not _is_json(kind):
        return 415, "invalid_request_error", "a model request's body must be application/json"
    if headers.get(b"upgrade", b"").lower() == b"websocket":
        return 426, "upgrade_required", "no WebSockets here: send the request over HTTP"
    return None


_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def _is_local_origin(origin: bytes) -> bool:
    parts = urlsplit(origin.decode("latin-1"))
    return parts.scheme in ("http", "https") and (parts.hostname or "") in _LOCAL_HOSTS


def _is_json(content_type: bytes) -> bool:
    media = content_type.split(b";")[0].strip().lower()
    return media == b"application/json" or (
        media.startswith(b"application/") and media.endswith(b"+json")
    )


def local_hosts(port: int, host: str) -> frozenset[str]:
    """The Host values a request to serve listening on ``host``:``port`` carries."""
    names = {"localhost", "127.0.0.1", "[::1]", host if ":" not in host else f"[{host}]"}
    return frozenset({*names, *(f"{name}:{port}" for name in names)})


def printable(text: str) -> str:
    """``text`` with control characters escaped: a path's ``%0a`` must not forge a log line."""
    return "".join(char if char.isprintable() else f"\\x{ord(char):02x}" for char in text)
