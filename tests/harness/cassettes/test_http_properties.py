"""The HTTP cassette serializer round-trips: generated cassettes, and every shared real one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("vcr")

from agentrig.harness.cassettes.http import deserialize, serialize

REAL = Path(
    os.environ.get("AGENTRIG_REAL_CASSETTES")
    or Path(__file__).resolve().parents[4] / "shared" / "cassettes" / "real"
)

_json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
_json = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_headers = st.dictionaries(
    st.sampled_from(["content-type", "x-request-id", "Content-Encoding"]),
    st.lists(st.text(max_size=12), min_size=1, max_size=2),
    max_size=3,
)


@st.composite
def interactions(draw: st.DrawFn) -> dict[str, Any]:
    body = draw(st.none() | st.text(max_size=40) | _json.map(repr))
    response_body: str | bytes = draw(st.text(max_size=40) | st.binary(max_size=40))
    return {
        "request": {
            "method": draw(st.sampled_from(["GET", "POST"])),
            "uri": "https://llm.test/v1/" + draw(st.from_regex(r"[a-z/]{0,12}", fullmatch=True)),
            "body": body,
            "headers": draw(_headers),
        },
        "response": {
            "status": {"code": draw(st.sampled_from([200, 400, 429, 500])), "message": "x"},
            "headers": draw(_headers),
            "body": {"string": response_body},
        },
    }


@given(st.lists(interactions(), max_size=4))
def test_generated_cassettes_round_trip(items: list[dict[str, Any]]) -> None:
    cassette = {"interactions": items, "version": 1}
    text = serialize(cassette)
    assert deserialize(text) == cassette
    assert serialize(deserialize(text)) == text


@pytest.mark.parametrize(
    "relative",
    sorted(str(p.relative_to(REAL)) for p in REAL.rglob("*.yaml")) if REAL.is_dir() else [],
)
def test_every_real_cassette_round_trips_through_the_stock_shape(relative: str) -> None:
    loaded = deserialize((REAL / relative).read_text(encoding="utf-8"))
    text = serialize(loaded)
    assert deserialize(text) == loaded
    assert "parsed_body" not in text
