"""From a command's options to what the core is given: its settings, the counter, the provider.

Every command that compacts (``micro``, ``full``, ``auto``, ``serve``) resolves its options here,
through one ``settings.Resolver`` (flag > environment > config file > default), so that one flag
means one thing everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .settings import Resolver

if TYPE_CHECKING:
    from compactor_core.compaction.estimate import Counter
    from compactor_core.settings import Settings


def resolver(flags: Mapping[str, Any]) -> Resolver:
    """The resolver of one command's flags, over this process's environment."""
    return Resolver(flags, os.environ)


def counter(flag: str | None, settings: Resolver | None = None) -> Counter:
    """The counter the flag, CTXPACK_TOKENIZER or the config file names (heuristic: no import)."""
    name = (settings or resolver({"tokenizer": flag})).get("tokenizer")
    if name == "heuristic":
        from compactor_core.compaction.estimate import HEURISTIC

        return HEURISTIC
    from compactor_core.compaction.tokenizers import counter as tokenizer_counter

    return tokenizer_counter(name)


def settings(options: dict[str, Any], given: Resolver, summarizing: bool) -> Settings:
    """The core's compaction settings from the options given (micro has no summary options);
    an unknown tokenizer fails here, before any work."""
    from compactor_core.settings import Settings

    summary: dict[str, Any] = {"min_gain": options["min_gain"]} if "min_gain" in options else {}
    if summarizing:
        summary |= {
            name: options[name]
            for name in ("instructions", "max_tokens", "max_prompt_tokens", "threshold", "policy")
            if name in options
        }
        summary["lang"] = given.get("lang")
        summary["tokenizer"] = counter(options["tokenizer"], given).name
    return Settings(
        keep_recent=options["keep_recent"],
        exclude_tools=tuple(options["exclude_tools"]),
        min_chars=options["min_chars"],
        compat=options["compat"] == "bareagent",
        images=options.get("images", False),
        keep_cut_off=not options.get("strict", False),
        **summary,
    )
