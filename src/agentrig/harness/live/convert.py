"""A recorded live trial as a deterministic scenario: the agent's model calls and tool results
replayed by a scripted model and scripted tools, the agent's own builder (or adapter) around
them, and the judge's deterministic criteria as expectations, so that a trial that failed live
fails the same way under ``agentrig run`` (and a success passes).

What converts: ``check`` criteria (``tool_called``, ``final_response``, ``said``). What does
not: ``never`` rules and rubrics (a rubric needs a model); the scenario's description lists
them. An ``agent.adapter`` trial converts when its model calls passed the trial's gate
(``current_trial().http_client()``): the scenario names the adapter, and ``agentrig run`` plays
its model through the scenario endpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentrig.harness.cassettes.convert import cassette_to_scenario
from agentrig.harness.cassettes.errors import CassetteConversionError
from agentrig.harness.cassettes.files import load_cassette
from agentrig.harness.checks.trajectory import partial_args
from agentrig.harness.scenarios.live_model import CriterionSpec, LiveCheck
from agentrig.harness.scenarios.model import Scenario

__all__ = ["is_trial_folder", "trial_to_scenario"]


def is_trial_folder(path: Path) -> bool:
    """Whether ``path`` is a recorded trial's folder (it holds ``outcome.json``)."""
    return path.is_dir() and (path / "outcome.json").is_file()


def trial_to_scenario(folder: Path, *, name: str) -> Scenario:
    """The scenario that replays the trial recorded in ``folder``; raises
    :class:`~agentrig.harness.cassettes.errors.CassetteConversionError` naming the folder."""
    where = str(folder)
    try:
        # marked: on a UTF-8 locale (CI's, this machine's) the default encoding reads alike
        outcome = (folder / "outcome.json").read_text(encoding="utf-8")  # pragma: no mutate
        kept = json.loads(outcome)
        live = kept["scenario"]
        agent = live["agent"]
        title, status, reason = live["name"], kept["status"], kept["reason"]
        criteria = [CriterionSpec.model_validate(c) for c in live["judge"]["criteria"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CassetteConversionError(where, None, f"not a recorded trial: {error}") from None
    cassette = _agent_cassette(folder, agent)
    recorded = cassette_to_scenario(load_cassette(cassette), name=name, path=str(cassette))
    replay = recorded.model_dump(
        exclude_unset=True,
        # marked: validated again below, field names and python's values read alike
        by_alias=True,  # pragma: no mutate
        mode="json",  # pragma: no mutate
    )
    # cassette_to_scenario always gives an agent (maybe {}) and at least one turn
    if agent.get("adapter"):
        replay["agent"] = {"adapter": agent["adapter"], **replay["agent"]}
    else:
        replay["agent"] = _around_builder(replay["agent"], agent.get("builder"))
    turns = replay["turns"]
    calls = _calls_by_turn(turns)
    left_out = [c.id for c in criteria if c.check is None]
    for criterion in criteria:
        if criterion.check is not None:
            _expect(turns, calls, criterion.check)
    replay["description"] = (
        f"Live trial {folder.name} of {title} ({status}: {reason}), "
        "converted by agentrig convert; its deterministic criteria are expectations"
        + (f"; not converted: {', '.join(left_out)} (never rules and rubrics)" if left_out else "")
        + "."
    )
    try:
        return Scenario.model_validate(replay)
    except ValidationError as error:
        raise CassetteConversionError(where, None, f"the scenario is invalid: {error}") from None


def _agent_cassette(folder: Path, agent: dict[str, Any]) -> Path:
    """The agent's model calls in ``folder``; an adapter's only when they passed the trial's
    gate, in one conversation."""
    cassette = folder / "agent.cassette.yaml"
    if not agent.get("adapter"):
        return cassette
    where = str(folder)
    if not cassette.is_file():
        raise CassetteConversionError(
            where,
            None,
            "the adapter's model calls did not pass the trial's gate, so the trial holds its "
            "replies, not its model calls: build the agent's SDK client with "
            "current_trial().http_client() (docs/live.md) and run the trial again",
        )
    more = sorted(p.name for p in folder.glob("agent-*.cassette.yaml"))
    if more:
        raise CassetteConversionError(
            where,
            None,
            f"the adapter's model calls were {len(more) + 1} conversations (agent.cassette."
            f"yaml, {', '.join(more)}); a scenario replays one: convert each cassette with "
            "agentrig convert FOLDER/agent-N.cassette.yaml",
        )
    return cassette


def _around_builder(agent: dict[str, Any], builder: str | None) -> dict[str, Any]:
    """The converted agent: the live agent's builder, with every recorded tool scripted (its
    real tools are not called) and the builder's own system prompt."""
    if builder is None:
        return agent
    kept = {k: v for k, v in agent.items() if k != "system_prompt"}
    if "tools" in kept:
        kept["tools"] = {name: {**spec, "scripted": True} for name, spec in kept["tools"].items()}
    return {"builder": builder, **kept}


def _calls_by_turn(turns: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    out: list[list[dict[str, Any]]] = []
    for turn in turns:
        made = []
        for reply in turn["model"]:  # every converted turn has its model's replies
            for call in [reply.get("call")] if reply.get("call") else reply.get("calls", []):
                if isinstance(call, dict):
                    made.append(call)
        out.append(made)
    return out


def _expect(
    turns: list[dict[str, Any]], calls: list[list[dict[str, Any]]], check: LiveCheck
) -> None:
    if not turns:
        return
    final_turn = turns[-1]
    # marked: every converted turn expects its answer or its calls (an empty answer does not
    # convert), so the default is never made
    last = final_turn.setdefault("expect", {})  # pragma: no mutate
    if check.tool_called is not None:
        wanted = check.tool_called
        for made in calls:  # a converted call always has its name and args
            if any(c["name"] == wanted.name and partial_args(wanted.args, c["args"]) for c in made):
                return  # made in that turn: its recorded trajectory already expects it
        last["tool_calls"] = {
            "mode": "superset",
            "args": "partial",
            "calls": [{"name": wanted.name, "args": dict(wanted.args)}],
        }
        return
    if check.said is not None:
        said = [r.get("say") for turn in turns for r in turn["model"]]
        if any(isinstance(text, str) and check.said.matches(text) for text in said):
            return  # said in the recording: the turns' recorded answers replay it
        last["final_response"] = check.said  # the same TextMatchSpec: validated as it is
        return
    assert check.final_response is not None
    last["final_response"] = check.final_response
