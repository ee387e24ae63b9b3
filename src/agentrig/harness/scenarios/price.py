"""A model's price in a scenario file: USD per million tokens, ``{input: 0.4, output: 1.6}``
(and optionally ``cache_read``, ``cache_write``), as the live roles and an adapter agent give it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict
from pydantic.config import JsonDict

__all__ = ["PRICE_KEYS", "Money", "Price", "price_problem", "price_schema"]

Money = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
Price = dict[Literal["input", "output", "cache_read", "cache_write"], Money]
"""USD per million tokens of each kind."""


def price_schema(schema: JsonDict) -> None:
    """A price's JSON Schema: a mapping of the four prices, input and output required (the
    models check the same as a rule, so that a missing one is named)."""
    price: JsonDict = {
        "type": "object",
        "properties": {key: {"type": "number", "minimum": 0} for key in PRICE_KEYS},
        "required": ["input", "output"],
        "additionalProperties": False,
    }
    schema.pop("additionalProperties", None)
    schema["anyOf"] = [price, {"type": "null"}]


def price_problem(price: Price | None) -> str | None:
    """Why ``price`` is incomplete, or None."""
    if price is not None and not {"input", "output"} <= set(price):
        return "a price needs input and output (USD per million tokens)"
    return None
