"""``ctxpack report --json``: the schema scripts rely on (issue 33), pinned key by key.

The README documents it: ``{"by", "prices_as_of", "total": {…}, "groups": [{…}]}``, the total
and each group with the same keys. A key added, removed or retyped fails here first, and must
be documented there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers import CORPUS, TESTS, run

from compactor_core.report.causes import CAUSES

CLAUDE = CORPUS / "originals" / "cc_entire_1284c080__full.jsonl"
PI = TESTS / "fixtures" / "more_agents" / "pi.jsonl"  # its test model has no price


def tokens(value: Any) -> bool:
    return type(value) is int and value >= 0


def dollars(value: Any) -> bool:
    return type(value) in (int, float) and value >= 0


def by_cause(kind: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """An object of causes (each a cause the report names) to ``kind`` values."""
    return lambda value: (
        isinstance(value, dict)
        and set(value) <= set(CAUSES)
        and all(kind(figure) for figure in value.values())
    )


def names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


GROUP = {
    "key": lambda value: isinstance(value, str),
    "requests": tokens,
    "sessions": tokens,
    "input": tokens,
    "cache_read": tokens,
    "cache_write": tokens,  # 5-minute and 1-hour writes
    "cache_write_1h": tokens,
    "output": tokens,
    "cost": dollars,
    "causes": by_cause(tokens),
    "causes_cost": by_cause(dollars),
    "with_ctxpack": dollars,
    "unknown_models": names,
}
TOP = {"by", "prices_as_of", "total", "groups"}


def assert_group(group: Any) -> None:
    assert isinstance(group, dict)
    assert list(group) == list(GROUP)  # the keys, in the documented order
    wrong = [key for key, fits in GROUP.items() if not fits(group[key])]
    assert not wrong, {key: group[key] for key in wrong}


@pytest.mark.parametrize("by", ["day", "session", "model"])
@pytest.mark.parametrize("counterfactual", ["--no-with-ctxpack", "--with-ctxpack"])
def test_the_json_has_the_documented_keys_and_types(by: str, counterfactual: str) -> None:
    done = run("report", "--json", "--by", by, counterfactual, CLAUDE, PI, timeout=300)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert set(document) == TOP
    assert document["by"] == by
    assert isinstance(document["prices_as_of"], str) and document["prices_as_of"]
    assert_group(document["total"])
    assert document["total"]["key"] == "total"
    assert len(document["groups"]) >= 2
    for group in document["groups"]:
        assert_group(group)
    total = document["total"]
    assert total["unknown_models"] == ["fake-model"]
    # every written token has a cause: the causes add up to what was sent fresh
    assert sum(total["causes"].values()) == total["cache_write"] + 7000  # pi's plain input
    if counterfactual == "--with-ctxpack":
        assert total["with_ctxpack"] < total["cost"]
    else:
        assert total["with_ctxpack"] == total["cost"]


def test_an_empty_report_is_the_same_shape(tmp_path) -> None:
    done = run("report", "--json", "--no-with-ctxpack", tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert set(document) == TOP and document["groups"] == []
    assert_group(document["total"])
    assert document["total"]["requests"] == 0
