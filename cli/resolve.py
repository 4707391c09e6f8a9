"""From a command's options to what the core is given: its settings, the counter, the provider.

Every command that compacts (``micro``, ``full``, ``auto``, ``serve``) resolves its options here,
so that one flag means one thing everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compactor_core.estimate import Counter
    from compactor_core.providers.settings import ProviderSettings
    from compactor_core.settings import Settings


def counter(flag: str | None) -> Counter:
    """The counter the flag, CTXPACK_TOKENIZER or the config file names (heuristic: no import)."""
    from .config import environment, resolve_tokenizer

    name = resolve_tokenizer(flag, environment())
    if name == "heuristic":
        from compactor_core.estimate import HEURISTIC

        return HEURISTIC
    from compactor_core.tokenizers import counter as tokenizer_counter

    return tokenizer_counter(name)


def settings(options: dict[str, Any]) -> Settings:
    """The core's settings from the options given (micro has no summary options)."""
    from compactor_core.settings import Settings

    summary = {
        name: options[name]
        for name in (
            "lang",
            "instructions",
            "max_tokens",
            "max_prompt_tokens",
            "threshold",
            "tokenizer",
        )
        if name in options
    }
    return Settings(
        keep_recent=options["keep_recent"],
        exclude_tools=tuple(options["exclude_tools"]),
        min_chars=options["min_chars"],
        compat=options["compat"] == "bareagent",
        keep_cut_off=not options.get("strict", False),
        **summary,
    )


def summarizing(options: dict[str, Any]) -> tuple[Settings, ProviderSettings]:
    """The settings and the provider of a command that may summarize: flag > environment >
    config file > default; an unknown tokenizer fails here, before any work."""
    from .config import environment, resolve_lang, resolve_provider

    environ = environment()
    resolved = {
        **options,
        "lang": resolve_lang(options["lang"], environ),
        "tokenizer": counter(options["tokenizer"]).name,
    }
    return settings(resolved), resolve_provider(options, environ)
