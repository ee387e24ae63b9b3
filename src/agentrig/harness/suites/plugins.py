"""Import plugin modules: modules that register invariants or report writers when imported."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Iterable
from types import ModuleType

from agentrig.errors import AgentrigError
from agentrig.harness.errors import PluginError

__all__ = ["describe_failure", "import_user_module", "load_plugins"]


def load_plugins(modules: Iterable[str]) -> None:
    """Import modules that register invariants or report writers; raises
    :class:`~agentrig.harness.errors.PluginError` naming the module and what failed."""
    for module in modules:
        try:
            import_user_module(module)
        except ModuleNotFoundError as error:
            raise PluginError(
                f"cannot import plugin module {module!r}: {error}; give its dotted import name, "
                "and run agentrig from the folder that holds it or add that folder to PYTHONPATH"
            ) from error
        except AgentrigError:
            raise
        except Exception as error:  # the plugin's own code failed: say where, not a traceback
            raise PluginError(
                f"plugin module {module!r} failed to import: {describe_failure(error)}; "
                "fix the module and run again"
            ) from error


def import_user_module(module: str) -> ModuleType:
    """Import ``module`` of the user's code; like ``python -m``, the current folder is searched
    too (and stays on the path, so spawned workers find the module as well)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        here = os.getcwd()
        top = module.partition(".")[0]
        if error.name != top or here in sys.path or "" in sys.path:
            raise
        sys.path.insert(0, here)  # kept: spawned workers inherit it and import the module too
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError:
            sys.path.remove(here)
            raise


def describe_failure(error: Exception) -> str:
    """What failed in user code, with the file and line: ``ValueError: bad (conf.py, line 3)``."""
    if isinstance(error, SyntaxError):
        return f"{error.msg} ({error.filename}, line {error.lineno})"
    frames = traceback.extract_tb(error.__traceback__)
    last = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{last}"
