"""``PriceTable``: user-supplied prices turn usage into cost."""

from __future__ import annotations

from typing import Any

import pytest

from agentrig import ConfigurationError, InvalidInputError, Usage
from agentrig.drivers import ModelPrice, PriceTable

TABLE = PriceTable(
    {
        "gpt-4o": ModelPrice(input=2.5, output=10.0),
        "gpt-4o-mini": {"input": 0.15, "output": 0.6, "cache_read": 0.075},
    }
)


def test_cost_per_million_tokens_with_cheaper_cache_reads() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000, cache_read_tokens=400_000)
    assert TABLE.cost_of("gpt-4o-mini", usage) == pytest.approx(
        600_000 * 0.15 / 1e6 + 0.4 * 0.075 + 0.5 * 0.6
    )


def test_cache_writes_default_to_the_input_price() -> None:
    usage = Usage(input_tokens=100, cache_write_tokens=100)
    assert TABLE.cost_of("gpt-4o", usage) == pytest.approx(100 * 2.5 / 1e6)


def test_the_longest_matching_prefix_prices_a_dated_model() -> None:
    assert TABLE.price_of("gpt-4o-mini-2024-07-18") == TABLE.price_of("gpt-4o-mini")
    assert TABLE.price_of("gpt-4o-2024-08-06") == TABLE.price_of("gpt-4o")
    assert TABLE.price_of("claude") is None


def test_unknown_models_are_free_unless_strict() -> None:
    usage = Usage(input_tokens=10)
    assert TABLE.priced("claude", usage) is usage
    strict = PriceTable({"gpt-4o": ModelPrice(input=1, output=1)}, strict=True)
    with pytest.raises(ConfigurationError, match=r"No price for model 'claude'.*known: gpt-4o\)"):
        strict.cost_of("claude", usage)


def test_priced_sets_the_cost() -> None:
    assert TABLE.priced("gpt-4o", Usage(output_tokens=1_000)).cost == pytest.approx(0.01)


def test_negative_prices_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="input"):
        ModelPrice(input=-1, output=0)


def test_a_bad_price_given_as_a_dict_names_the_model_and_field() -> None:
    with pytest.raises(InvalidInputError, match=r"gpt-4o.*output") as raised:
        PriceTable({"gpt-4o": {"input": 1, "outptu": 2}})
    assert raised.value.field == "prices['gpt-4o'].output"


@pytest.mark.parametrize("prices", [[("gpt-4o", {"input": 1.0, "output": 2.0})], None, "gpt-4o"])
def test_prices_that_are_not_a_mapping_are_refused_naming_the_argument(prices: Any) -> None:
    with pytest.raises(InvalidInputError, match="prices: expected a mapping of model name"):
        PriceTable(prices)
