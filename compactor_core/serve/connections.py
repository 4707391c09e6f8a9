"""Connections that cannot hold serve: a client gets ``header_timeout`` seconds from opening a
connection to sending its request's headers, then the connection is closed.

uvicorn (on h11) times out only a connection idle between two requests; one that opens and sends
nothing, or a byte a second, would keep its descriptor for ever, and a thousand of them would
exhaust serve's. This is uvicorn's own HTTP protocol with that one timer more.
"""

from __future__ import annotations

import asyncio
from typing import Any


def guarded_protocol(header_timeout: float) -> type:
    """uvicorn's h11 protocol, closing a connection whose request headers take too long."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedProtocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._header_timer: asyncio.TimerHandle | None = self.loop.call_later(
                header_timeout, self._too_slow
            )

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and self._header_timer is not None:
                self._header_timer.cancel()  # a request arrived whole: its headers did
                self._header_timer = None

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            super().connection_lost(exc)

        def _too_slow(self) -> None:
            if self.cycle is None:
                self.transport.close()

    return GuardedProtocol
