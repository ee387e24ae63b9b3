"""The tool calls a scenario scripts, checked against the agent's tools without running them.

A scripted call of a tool the agent lacks, or with an argument the tool does not take (or
without one it requires), fails under ``agentrig run`` unless the turn lists the error under
``expect.errors``. :func:`script_call_problems` finds those calls from the built agent's tools
and their JSON Schemas, so ``agentrig validate`` reports them before anything runs. Argument
types are left to the run: a tool's validation may coerce (``"3"`` for an integer).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrig.harness.scenarios.model import ModelReply, Scenario
from agentrig.harness.scenarios.yaml_source import FieldPath
from agentrig.tools import Tools

__all__ = ["ScriptCallProblem", "argument_problems", "script_call_problems"]


@dataclass(frozen=True)
class ScriptCallProblem:
    """One scripted call that the agent's tools would refuse."""

    path: FieldPath
    """Where the call is written (``turns[i].model[j].call``)."""
    message: str


def script_call_problems(scenario: Scenario, tools: Tools) -> list[ScriptCallProblem]:
    """Every call the top-level script of ``scenario`` makes that ``tools`` would refuse: an
    unknown tool, an argument the tool's schema does not take, a required argument missing.
    A turn that lists errors under ``expect.errors`` is left to the run (it may intend them),
    and so is an agent without any tool: a file the scenario endpoint plays to a client that
    brings its own tools."""
    problems: list[ScriptCallProblem] = []
    if not len(tools):
        return problems
    for index, turn in enumerate(scenario.turns):
        if turn.expect.errors:
            continue
        scripts: list[tuple[FieldPath, Sequence[ModelReply]]] = [
            (("turns", index, "model"), turn.replies)
        ]
        scripts += [
            (("turns", index, "mixture", number, "model"), branch.model)
            for number, branch in enumerate(turn.mixture or ())
        ]
        for script_path, replies in scripts:
            for reply_index, reply in enumerate(replies):
                for path, name, args in _calls((*script_path, reply_index), reply):
                    label = f"turn {index + 1}, reply {reply_index + 1}"
                    problems += [
                        ScriptCallProblem(path, f"{label}: {problem}")
                        for problem in _call_problems(name, args, tools)
                    ]
    return problems


def _calls(base: FieldPath, reply: ModelReply) -> Iterator[tuple[FieldPath, str, dict[str, Any]]]:
    if reply.call is not None:
        yield (*base, "call"), reply.call.name, dict(reply.call.args)
    for number, call in enumerate(reply.calls or ()):
        yield (*base, "calls", number), call.name, dict(call.args)


def _call_problems(name: str, args: Mapping[str, Any], tools: Tools) -> list[str]:
    tool = tools.get(name)
    if tool is None:
        close = difflib.get_close_matches(name, tools.names(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        has = ", ".join(tools.names()) or "none"
        return [
            f"the script calls tool {name!r}, which the agent does not have{hint} (it has: "
            f"{has}); fix the name, or list the error under expect.errors if this is intended"
        ]
    return [
        f"the call of tool {name!r} {problem}; fix the call, or list the error under "
        "expect.errors if this is intended"
        for problem in argument_problems(args, tool.parameters())
    ]


def argument_problems(args: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The arguments ``schema`` (a tool's JSON Schema) would refuse by name: one it does not
    take (when it allows no others), one it requires that is missing."""
    properties = schema.get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    problems = []
    if schema.get("additionalProperties") is False:
        for arg in args:
            if arg not in names:
                close = difflib.get_close_matches(arg, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                takes = ", ".join(names) or "none"
                problems.append(
                    f"passes {arg!r}, which the tool does not take{hint} (it takes: {takes})"
                )
    required = schema.get("required")
    for arg in required if isinstance(required, list) else ():
        if arg not in args:
            problems.append(f"lacks {arg!r}, which the tool requires")
    return problems
