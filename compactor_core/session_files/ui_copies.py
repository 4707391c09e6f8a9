"""The agents' UI copies of a tool's output shrink with the result (SPEC §8.3).

Claude Code keeps the output a second time in a record's ``toolUseResult``, Codex in some
``event_msg`` records. Their keys stay (the agent's UI reads them), and every long string becomes
the micro marker with its own length. "Long" is more than LONG_STRING code points: file paths,
commands, flags and short messages stay readable; file contents, stdout and patches go.
"""

from __future__ import annotations

from typing import Any

from ..compaction.micro import is_marker, marker

LONG_STRING = 200


def shrink_strings(value: Any, tool: str) -> tuple[Any, bool]:
    """``value`` with each long string replaced by the marker; and whether anything changed."""
    if isinstance(value, str):
        if len(value) > LONG_STRING and not is_marker(value):
            return marker(tool, len(value)), True
        return value, False
    if isinstance(value, dict):
        changed = False
        for key, item in value.items():
            new, item_changed = shrink_strings(item, tool)
            if item_changed:
                value[key] = new
                changed = True
        return value, changed
    if isinstance(value, list):
        changed = False
        for number, item in enumerate(value):
            new, item_changed = shrink_strings(item, tool)
            if item_changed:
                value[number] = new
                changed = True
        return value, changed
    return value, False
