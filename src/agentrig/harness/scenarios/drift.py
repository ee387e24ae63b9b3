"""Drift between a scenario's tools and the tools of an agent built in Python.

A scenario run against a user's builder uses the builder's own tools. A scenario that declares
a tool the builder lacks, or declares ``params`` the real tool does not take, describes another
agent than the one under test: both are reported here, unless the tool is marked
``scripted: true`` (the scenario plays its scripted stand-in on purpose).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentrig.harness.scenarios.model import Scenario, ToolSpec
from agentrig.harness.scenarios.yaml_source import FieldPath
from agentrig.tools import Tool, Tools

__all__ = ["ToolDrift", "param_problems", "tool_drift"]

_OPT_IN = "or mark the tool scripted: true to play the scripted stand-in on purpose"


@dataclass(frozen=True)
class ToolDrift:
    """One scenario tool that does not describe the agent's own tool."""

    tool: str
    message: str
    declared: dict[str, Any] | None
    """The JSON Schema of the scenario's ``params`` (None when it declares none)."""
    actual: dict[str, Any] | None
    """The real tool's JSON Schema (None when the agent has no such tool)."""

    @property
    def path(self) -> FieldPath:
        """Where the tool is written in the scenario."""
        return ("agent", "tools", self.tool)


def tool_drift(scenario: Scenario, tools: Tools, stand_ins: Mapping[str, Tool]) -> list[ToolDrift]:
    """Every tool of ``scenario`` that does not match the agent's own: ``tools`` are the built
    agent's tools, ``stand_ins`` the scripted tools the scenario added to it by name."""
    drift = []
    for name, spec in scenario.agent.tools.items():
        if spec.scripted:
            continue
        real = tools.get(name)
        if real is None or real is stand_ins.get(name):
            drift.append(_missing(name, spec, tools, stand_ins))
            continue
        problems = param_problems(spec, real.parameters())
        if problems:
            drift.append(_differs(name, spec, real.parameters(), problems))
    return drift


def _missing(name: str, spec: ToolSpec, tools: Tools, stand_ins: Mapping[str, Tool]) -> ToolDrift:
    own = [tool for tool in tools.names() if tools.get(tool) is not stand_ins.get(tool)]
    close = difflib.get_close_matches(name, own, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    has = ", ".join(own) or "none"
    message = (
        f"tool '{name}': the scenario scripts it, but the agent built in Python has no tool of "
        f"that name{hint} (it has: {has}); its scripted stand-in would pass in place of a tool "
        f"that does not exist: add the tool to the builder or fix the name, {_OPT_IN}"
    )
    return ToolDrift(name, message, _declared(spec), None)


def _differs(name: str, spec: ToolSpec, actual: dict[str, Any], problems: list[str]) -> ToolDrift:
    message = (
        f"tool '{name}': the scenario's params differ from the agent's own tool: "
        f"{'; '.join(problems)}. The scenario declares params {_inline(spec.params)}; the real "
        f"tool's schema is {json.dumps(actual, sort_keys=True)}. Fix params and the calls that "
        f"use them, {_OPT_IN}"
    )
    return ToolDrift(name, message, _declared(spec), actual)


def _declared(spec: ToolSpec) -> dict[str, Any] | None:
    return spec.parameters_schema() if "params" in spec.model_fields_set else None


def _inline(params: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{name}: {kind}" for name, kind in params.items()) + "}"


def param_problems(spec: ToolSpec, schema: Mapping[str, Any]) -> list[str]:
    """How the declared ``params`` differ from the real tool's JSON Schema (names, JSON types,
    required or optional); nothing when the scenario declares no params (the real tool's
    signature stands)."""
    if "params" not in spec.model_fields_set:
        return []
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    problems = []
    for param, kind in spec.params.items():
        if param not in properties:
            close = difflib.get_close_matches(param, list(properties), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"parameter {param!r} is not a parameter of the real tool{hint}")
            continue
        problems.extend(_type_problem(param, kind.rstrip("?"), properties[param]))
        declared_required, real_required = not kind.endswith("?"), param in required_names
        if declared_required != real_required:
            problems.append(
                f"parameter {param!r} is {_need(declared_required)} in the scenario but "
                f"{_need(real_required)} in the real tool"
            )
    for param in properties:
        if param in required_names and param not in spec.params:
            problems.append(f"the real tool requires parameter {param!r}, not declared in params")
    return problems


def _need(required: bool) -> str:
    return "required" if required else "optional"


def _type_problem(param: str, declared: str, schema: Any) -> list[str]:
    """A type mismatch, when the real parameter names plain JSON types (``type``)."""
    types = _types(schema)
    if not types:
        return []
    if declared in types or (declared == "integer" and "number" in types):
        return []
    shown = types[0] if len(types) == 1 else " or ".join(str(kind) for kind in types)
    return [f"parameter {param!r} is {declared} in the scenario but {shown} in the real tool"]


def _types(schema: Any) -> list[str]:
    """The JSON types a parameter's schema names (``type``, or each ``anyOf`` branch's); empty
    when it names none (a reference, a constraint only)."""
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [str(item) for item in kind]
    branches = schema.get("anyOf")
    if not isinstance(branches, list):
        return []
    found = [_types(branch) for branch in branches]
    return [] if any(not kinds for kinds in found) else [k for kinds in found for k in kinds]
