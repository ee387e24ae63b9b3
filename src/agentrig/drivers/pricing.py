"""A user-supplied price table: what one inference call cost, in the table's currency.

agentrig ships no prices (they change too often); give real providers a ``PriceTable`` and the
cost lands in ``Usage.cost``, where ``ExecutionBudget(max_cost=...)`` sees it::

    prices = PriceTable({"gpt-4o-mini": ModelPrice(input=0.15, output=0.60)})
    OpenAIProvider(model="gpt-4o-mini", prices=prices)

Token counts follow ``Usage``: ``input_tokens`` counts every prompt token, cached ones included;
``cache_read_tokens`` and ``cache_write_tokens`` are the parts of it read from or written to the
provider's prompt cache; ``reasoning_tokens`` are part of ``output_tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field, ValidationError

from agentrig._model import FrozenModel, problems_of
from agentrig.errors import ConfigurationError, InvalidInputError
from agentrig.state.usage import MAX_COST, Usage

PER = 1_000_000
"""Prices are per million tokens."""


class ModelPrice(FrozenModel):
    """Prices per million tokens. Cache prices default to the input price."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)

    def cost_of(self, usage: Usage) -> float:
        """The cost of ``usage`` at these prices."""
        cached = usage.cache_read_tokens + usage.cache_write_tokens
        fresh = max(usage.input_tokens - cached, 0)
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        total = (
            fresh * self.input
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
            + usage.output_tokens * self.output
        )
        return total / PER


def _model_price(model: str, price: ModelPrice | Mapping[str, float]) -> ModelPrice:
    if isinstance(price, ModelPrice):
        return price
    try:
        return ModelPrice.model_validate(price)
    except ValidationError as error:
        problems = [
            (f"prices[{model!r}]" + (f".{field}" if field else ""), reason)
            for field, reason in problems_of(error)
        ]
        raise InvalidInputError("PriceTable", problems) from None


class PriceTable:
    """Model name → ``ModelPrice``. A model is found by its exact name, else by the longest
    table key it starts with (``gpt-4o-mini`` prices ``gpt-4o-mini-2024-07-18``).

    ``strict=True`` raises ``ConfigurationError`` for a model the table does not know;
    otherwise such a call costs 0.
    """

    def __init__(
        self, prices: Mapping[str, ModelPrice | Mapping[str, float]], *, strict: bool = False
    ) -> None:
        if not isinstance(prices, Mapping):
            problem = "expected a mapping of model name to price, such as {'gpt-4o-mini': "
            problem += f"{{'input': 0.15, 'output': 0.6}}}}, got {type(prices).__name__}"
            raise InvalidInputError("PriceTable", [("prices", problem)])
        self._prices = {model: _model_price(model, price) for model, price in prices.items()}
        self._by_length = sorted(self._prices, key=len, reverse=True)
        self.strict = strict

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of ``model``, or None when the table does not know it."""
        found = self._prices.get(model)
        if found is not None:
            return found
        prefix = next((key for key in self._by_length if model.startswith(key)), None)
        return None if prefix is None else self._prices[prefix]

    def cost_of(self, model: str, usage: Usage) -> float:
        """The cost of ``usage`` on ``model``."""
        price = self.price_of(model)
        if price is not None:
            return price.cost_of(usage)
        if self.strict:
            known = ", ".join(sorted(self._prices)) or "(none)"
            raise ConfigurationError(
                f"No price for model '{model}' in the PriceTable (known: {known}). "
                "Add it, or build the table with strict=False to count it as free."
            )
        return 0.0

    def priced(self, model: str, usage: Usage) -> Usage:
        """``usage`` with its ``cost`` set."""
        cost = min(self.cost_of(model, usage), MAX_COST)  # a huge price times many tokens: inf
        return usage if cost == usage.cost else usage.evolve(cost=cost)

    def __repr__(self) -> str:
        return f"PriceTable({sorted(self._prices)!r}, strict={self.strict})"
