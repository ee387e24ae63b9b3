"""The example agents of examples/endpoint/ import by module name, as in the project a user tests
(the folder is put on ``sys.path`` before the tests here are collected)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "endpoint"

if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


@pytest.fixture
def anyio_backend() -> str:
    """Async tests here run on asyncio (the frameworks' own event loop)."""
    return "asyncio"
