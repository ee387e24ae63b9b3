"""The text helper the runtime and the harness quote long values with."""

from __future__ import annotations

import pytest

from agentrig._text import clipped


@pytest.mark.parametrize(
    ("text", "limit", "shown"),
    [
        ("", 5, ""),
        ("hello", 5, "hello"),
        ("hello!", 5, "he..."),
        ("a" * 100, 40, "a" * 37 + "..."),
    ],
)
def test_a_long_text_is_cut_to_its_limit_with_an_ellipsis(
    text: str, limit: int, shown: str
) -> None:
    assert clipped(text, limit) == shown
    assert len(clipped(text, limit)) <= limit
