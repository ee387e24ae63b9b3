"""The optional packages the scenario endpoint needs, checked before it uses them, so that a
missing extra is a message naming it rather than an import traceback."""

from __future__ import annotations

import importlib
from typing import Literal

from agentrig.errors import MissingDependencyError

Extra = Literal["endpoint", "serve", "intercept"]

_MODULES: dict[Extra, tuple[tuple[str, str], ...]] = {
    # (module, the package that installs it)
    "endpoint": (("jsonschema", "jsonschema"), ("httpx", "httpx"), ("httpx2", "httpx2")),
    "serve": (("starlette", "starlette"), ("uvicorn", "uvicorn")),
    "intercept": (("respx", "respx"), ("pytest_httpx2", "pytest-httpx2")),
}
_EXTRA: dict[Extra, str] = {"endpoint": "endpoint", "serve": "serve", "intercept": "endpoint"}


def require_extra(extra: Extra) -> None:
    """Raise ``MissingDependencyError`` naming the first package of ``extra`` that cannot be
    imported and the extra that installs it (``serve`` also needs what ``endpoint`` does)."""
    needed = _MODULES["endpoint"] + (_MODULES[extra] if extra != "endpoint" else ())
    for module, package in needed:
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingDependencyError(package, _EXTRA[extra]) from None
