"""ctxpack's own version, as installed: part of what decides a batch result's bytes
(``batch.start.settings_key``) and what ``ctxpack mcp`` tells its client."""

from __future__ import annotations


def release() -> str:
    """The installed version; "unknown" from a tree never installed."""
    # importlib.metadata takes ~20 ms to import: only the callers that need it pay for it
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctxpack")
    except PackageNotFoundError:
        return "unknown"
