"""agentrig's pytest plugin (registered through the ``pytest11`` entry point); inert until asked."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options live under the ``--agentrig-`` prefix."""
    group = parser.getgroup("agentrig", "agentrig scenario harness")
    group.addoption(
        "--agentrig-deep",
        action="store_true",
        default=False,
        help="run property tests with many more examples",
    )
