"""Write scenarios as ``*.scenario.yaml`` text that :func:`load_scenario` reads back equal.

Used to turn a drawn script, or a failing example that hypothesis shrank, into a file that
reproduces it under ``agentrig run``::

    scenario = scenario_from_script(name="two-lookups", user="Hi", script=[call("lookup"), reply("ok")])
    write_scenario(scenario, path="scenarios/two-lookups.scenario.yaml")

Only the keys a scenario sets are written; tool calls use the ``name(arg=value)`` shorthand when
it reads back exactly, a mapping otherwise.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentrig import ExecutionBudget, FinishReason
from agentrig.errors import InvalidInputError
from agentrig.fakes import Turn as ScriptTurn
from agentrig.harness.scenarios.loader import SCENARIO_SUFFIX
from agentrig.harness.scenarios.model import (
    SCENARIO_NAME_PATTERN,
    AgentSpec,
    BudgetSpec,
    ModelReply,
    RedactedThink,
    Scenario,
    ScenarioTurn,
    ToolCallSpec,
    ToolReplySpec,
    UsageSpec,
    parse_call_shorthand,
)
from agentrig.harness.scenarios.yaml_source import dump_yaml

__all__ = [
    "budget_spec",
    "reply_from_turn",
    "scenario_from_script",
    "scenario_to_yaml",
    "write_scenario",
]

StrPath = str | os.PathLike[str]

# Characters a YAML reader treats as line breaks or drops: force the escaped, double-quoted style.


def scenario_to_yaml(scenario: Scenario, *, header: str = "") -> str:
    """``scenario`` as YAML text; ``header`` (one or more lines) is written as a leading comment."""
    if not isinstance(scenario, Scenario):
        raise InvalidInputError("scenario", [("", f"expected a Scenario, got {_kind(scenario)}")])
    if not isinstance(header, str):
        raise InvalidInputError("header", [("", f"expected a string, got {_kind(header)}")])
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    return comment + dump_yaml(_dump(scenario))


def write_scenario(scenario: Scenario, *, path: StrPath, header: str = "") -> Path:
    """Write ``scenario`` to ``path`` (which must end in ``.scenario.yaml``); returns the path.

    Parent folders are created; an existing file is replaced.
    """
    target = Path(path)
    if not target.name.endswith(SCENARIO_SUFFIX):
        reason = f"{target.name!r} must end in {SCENARIO_SUFFIX} so that agentrig run finds it"
        raise InvalidInputError("path", [("", reason)])
    text = scenario_to_yaml(scenario, header=header)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def scenario_from_script(
    *,
    name: str,
    user: str,
    script: Sequence[ScriptTurn],
    agent: AgentSpec | None = None,
    description: str = "",
) -> Scenario:
    """A one-turn scenario: ``user`` says something and the model answers with ``script``."""
    if not isinstance(name, str) or not re.match(SCENARIO_NAME_PATTERN, name):
        reason = f"{name!r} is not a scenario name (lowercase letters, digits, '.', '_', '-')"
        raise InvalidInputError("name", [("", reason)])
    replies = tuple(reply_from_turn(turn) for turn in script)
    return Scenario(
        name=name,
        description=description,
        agent=agent if agent is not None else AgentSpec(),
        turns=(ScenarioTurn(user=user, model=replies),),
    )


def reply_from_turn(turn: ScriptTurn) -> ModelReply:
    """A fake LLM ``Turn`` as a scenario model reply (the inverse of ``agent_factory.to_turn``)."""
    if not isinstance(turn, ScriptTurn):
        raise InvalidInputError("turn", [("", f"expected a fakes.Turn, got {_kind(turn)}")])
    problem = turn.problem()
    if problem is not None:
        raise InvalidInputError("turn", [("", problem)])
    if turn.error is not None:
        return ModelReply(error=turn.error, retryable=turn.retryable, latency=turn.latency)
    fields: dict[str, Any] = {"latency": turn.latency} if turn.latency else {}
    if turn.reasoning:
        fields["think"] = turn.reasoning
    elif turn.redacted_reasoning:
        fields["think"] = RedactedThink(redacted=True)
    if turn.text:
        fields["say"] = turn.text
    specs = tuple(ToolCallSpec(name=c.name, args=dict(c.arguments), id=c.id) for c in turn.calls)
    if len(specs) == 1:
        fields["call"] = specs[0]
    elif specs:
        fields["calls"] = specs
    return ModelReply(**fields, **_usage_fields(turn), **_finish(turn))


def budget_spec(budget: ExecutionBudget) -> BudgetSpec | None:
    """An ``ExecutionBudget`` as a scenario budget (None when it has no limit)."""
    if not isinstance(budget, ExecutionBudget):
        raise InvalidInputError(
            "budget", [("", f"expected an ExecutionBudget, got {_kind(budget)}")]
        )
    if budget.is_empty():
        return None
    limits = budget.model_dump(exclude_none=True)
    return BudgetSpec(**limits)


def _usage_fields(turn: ScriptTurn) -> dict[str, Any]:
    usage = turn.usage
    fields: dict[str, Any] = {"cost": usage.cost} if usage.cost else {}
    counts = {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_read": usage.cache_read_tokens,
        "cache_write": usage.cache_write_tokens,
        "reasoning": usage.reasoning_tokens,
    }
    given = {key: value for key, value in counts.items() if value}
    if given:
        fields["usage"] = UsageSpec(**given)
    return fields


def _finish(turn: ScriptTurn) -> dict[str, Any]:
    reason = turn.finish_reason
    return {"finish_reason": FinishReason(reason).value} if reason is not None else {}


# --- dumping ----------------------------------------------------------------------------------


def _dump(value: Any) -> Any:
    """Plain data for YAML: models keep only the fields that were set and differ from defaults."""
    if isinstance(value, ToolCallSpec):
        return _call(value)
    if isinstance(value, BaseModel):
        return _model(value)
    if isinstance(value, Mapping):
        return {str(key): _dump(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_dump(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _model(model: BaseModel) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        if name not in model.model_fields_set:
            continue
        value = getattr(model, name)
        keep = isinstance(model, ToolReplySpec) and name == "return_"
        if (
            not keep
            and not field.is_required()
            and value == field.get_default(call_default_factory=True)
        ):
            continue
        data[field.alias or name] = _dump(value)
    return data


def _call(spec: ToolCallSpec) -> Any:
    """The shorthand ``name(arg=value)`` when it reads back to the same call, else a mapping."""
    if spec.id is None:
        text = spec.shorthand()
        try:
            parsed = parse_call_shorthand(text)
        except InvalidInputError:
            parsed = None
        if parsed is not None and parsed.name == spec.name and _same(parsed.args, spec.args):
            return text
    data: dict[str, Any] = {"name": spec.name}
    if spec.args:
        data["args"] = _dump(spec.args)
    if spec.id is not None:
        data["id"] = spec.id
    return data


def _same(left: Any, right: Any) -> bool:
    """Equal and of the same JSON types (``1``, ``1.0`` and ``true`` differ)."""
    try:
        return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)
    except (TypeError, ValueError):
        return False


def _kind(value: object) -> str:
    return type(value).__name__
