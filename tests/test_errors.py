"""The one error tree: every error agentrig defines derives from ``AgentrigError`` through one
branch, and the tree drawn in ``agentrig.errors``' docstring names each of them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import agentrig
import agentrig.errors
from agentrig.errors import AgentrigError


def _error_classes() -> dict[str, type[AgentrigError]]:
    found: dict[str, type[AgentrigError]] = {}
    for info in pkgutil.walk_packages(agentrig.__path__, "agentrig."):
        if info.name.startswith("agentrig.harness.endpoint"):  # its errors are its own
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, AgentrigError)
                and value.__module__ == module.__name__
            ):
                found[name] = value
    return found


ERRORS = _error_classes()
DRAWN = agentrig.errors.__doc__ or ""


def test_the_modules_were_searched() -> None:
    assert {"AgentrigError", "ScenarioFileError", "CassetteError", "ScriptError"} <= set(ERRORS)


def test_every_error_is_drawn_in_the_tree() -> None:
    drawn = set(re.findall(r"[├└]── (\w+)", DRAWN)) | {"AgentrigError"}
    assert set(ERRORS) - drawn == set()
    assert drawn - set(ERRORS) == set()


def test_the_tree_is_drawn_as_the_classes_inherit() -> None:
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = [(-1, "AgentrigError")]
    for line in DRAWN.splitlines():
        match = re.search(r"[├└]── (\w+)", line)
        if match is None:
            continue
        depth = match.start()
        while stack[-1][0] >= depth:
            stack.pop()
        parents[match[1]] = stack[-1][1]
        stack.append((depth, match[1]))
    for name, parent in parents.items():
        assert ERRORS[parent] in ERRORS[name].__mro__[1:], f"{name} is not below {parent}"


def test_each_error_sits_on_one_branch() -> None:
    for name, error in ERRORS.items():
        bases = [base for base in error.__bases__ if issubclass(base, AgentrigError)]
        assert len(bases) <= 1, f"{name} derives from {bases}"
