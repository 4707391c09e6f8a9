"""What a model's tokens cost: the package's dated price table (prices.json), or the user's.

A price applies to a model when its name stands in the model's id as a whole version: ``opus-4``
prices ``claude-opus-4-20250514`` but not ``claude-opus-4-9`` (another version) nor ``opus-4.9``;
the first entry that applies wins. A model no entry prices is unknown, and the report says so
rather than price it as another.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ..errors import ConfigError

PER_TOKEN = 1e-6  # the table's prices are per million tokens
_FIELDS = ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output")


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens of each kind."""

    model: str
    input: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float
    output: float

    def cost(self, tokens: dict[str, int]) -> float:
        """What ``tokens`` (by the five kinds' names) cost, in dollars."""
        return sum(getattr(self, kind) * tokens.get(kind, 0) for kind in _FIELDS) * PER_TOKEN


@dataclass(frozen=True)
class PriceTable:
    as_of: str
    prices: tuple[ModelPrice, ...]
    # the price found for each model id asked so far: a report asks once per request
    _found: dict[str, ModelPrice | None] = field(default_factory=dict, compare=False, repr=False)

    def of(self, model: str | None) -> ModelPrice | None:
        """The price of ``model``'s tokens, or None when no entry prices that model."""
        if model is None:
            return None
        if model not in self._found:
            self._found[model] = next((p for p in self.prices if _applies(p, model)), None)
        return self._found[model]


def _applies(price: ModelPrice, model: str) -> bool:
    return re.search(re.escape(price.model) + r"(?![.\d])(?!-\d{1,3}(?!\d))", model) is not None


def bundled() -> PriceTable:
    """The table the package ships."""
    text = resources.files(__package__).joinpath("prices.json").read_text(encoding="utf-8")
    return parse(text, "prices.json")


def parse(text: str, label: str, base: PriceTable | None = None) -> PriceTable:
    """A price table from JSON text (prices.json's shape); its entries go before ``base``'s,
    so a user's file overrides and extends the package's."""
    try:
        document = json.loads(text)
        prices = tuple(_entry(entry) for entry in document["models"])
        as_of = str(document.get("as_of", "unknown"))
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"{label}: not a price table ({_why(error)}): see prices.json") from None
    if base is None:
        return PriceTable(as_of, prices)
    return PriceTable(f"{as_of} ({label}), {base.as_of}", prices + base.prices)


def _entry(entry: Any) -> ModelPrice:
    values = {field: float(entry[field]) for field in _FIELDS}
    if any(value < 0 for value in values.values()):
        raise ValueError(f"a negative price for {entry['model']!r}")
    return ModelPrice(str(entry["model"]), **values)


def _why(error: Exception) -> str:
    return f"missing {error}" if isinstance(error, KeyError) else str(error).split("\n")[0]
