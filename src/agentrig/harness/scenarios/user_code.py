"""Importing the user's code: the modules ``--plugin`` and a scenario's ``agent.builder`` name."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from types import ModuleType

__all__ = ["describe_failure", "import_user_module", "is_missing_itself"]


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


def is_missing_itself(module: str, error: ModuleNotFoundError) -> bool:
    """Whether ``error`` says ``module`` (or a package holding it) is not found, rather than a
    module that ``module``'s own code imports."""
    missing = error.name
    return missing is None or module == missing or module.startswith(missing + ".")


def describe_failure(error: Exception) -> str:
    """What failed in user code, with the file and line: ``ValueError: bad (conf.py, line 3)``."""
    if isinstance(error, SyntaxError):
        return f"{error.msg} ({error.filename}, line {error.lineno})"
    frames = traceback.extract_tb(error.__traceback__)
    last = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{last}"
