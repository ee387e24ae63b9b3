"""The fuzzing loop: probe the agent once, then let hypothesis draw scripts from what it offers,
play each as a fresh endpoint session, check the properties, shrink a failure and write it as a
scenario file that replays it."""

from __future__ import annotations

import hashlib
import json
import unittest
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given
from hypothesis import settings as Settings
from hypothesis import strategies as st
from hypothesis.errors import FlakyFailure

from agentrig.errors import ConfigurationError, InvalidInputError
from agentrig.harness.endpoint.extras import require_extra
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.fuzz.behaviours import Behaviours, default_faults
from agentrig.harness.fuzz.failure import FuzzFailure, replay_command, scenario_name, write_failure
from agentrig.harness.fuzz.offer import Offer, probe, probe_scenario
from agentrig.harness.fuzz.properties import (
    Property,
    RaisesOnly,
    TerminatesWithin,
    WireInvariants,
    all_problems,
    as_property,
)
from agentrig.harness.fuzz.run import AgentRun, play
from agentrig.harness.fuzz.strategies import model_scripts
from agentrig.harness.fuzz.target import AgentFunction, FunctionTarget, Target, target_of
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario

__all__ = ["DEFAULT_EXAMPLES", "DEFAULT_FOLDER", "FuzzReport", "Fuzzer", "fuzz", "replay"]

DEFAULT_FOLDER = Path(".agentrig/fuzz")
"""Where failing scripts are written by default."""
DEFAULT_EXAMPLES = 200
"""How many scripts a fuzzing run checks unless told."""

PropertyLike = Property | Callable[[AgentRun], Any]
AgentLike = AgentFunction | str | Sequence[str] | Target


@dataclass(frozen=True)
class FuzzReport:
    """A fuzzing run in which no property broke: how many examples ran, and what the agent
    offered."""

    examples: int
    offer: Offer


def default_properties(
    properties: Sequence[PropertyLike], max_model_calls: int
) -> tuple[Property, ...]:
    """``properties`` with the wire invariants first, and ``raises_only()`` (the agent raises
    nothing) and ``terminates_within(max_model_calls)`` unless given."""
    chosen = [as_property(prop) for prop in properties]
    extra: list[Property] = [WireInvariants()]
    if not any(isinstance(prop, RaisesOnly) for prop in chosen):
        extra.append(RaisesOnly())
    if not any(isinstance(prop, TerminatesWithin) for prop in chosen):
        extra.append(TerminatesWithin(max_model_calls))
    return (*extra, *(prop for prop in chosen if not isinstance(prop, WireInvariants)))


class Fuzzer:
    """An agent under test on an endpoint that stays up: probed once for what it offers, then
    checked against any number of scripts, each a fresh endpoint session.

    ``agent``: a function ``agent(ep, prompt)`` (sync or async), ``'package.module:function'``,
    or a command (run on a live endpoint). ``properties``: ready-made ones
    (:mod:`~agentrig.harness.fuzz.properties`) or functions of the :class:`AgentRun`.
    ``folder``: where a failing script is written.

    For a test of your own, draw with ``scripts()`` and check with ``check()``::

        @given(script=fuzzer.scripts())
        def test_agent(script):
            fuzzer.check(script)
    """

    def __init__(
        self,
        agent: AgentLike,
        prompt: str,
        *,
        behaviours: Behaviours | None = None,
        properties: Sequence[PropertyLike] = (),
        folder: str | Path = DEFAULT_FOLDER,
        name: str | None = None,
        live: bool = False,
    ) -> None:
        if not isinstance(prompt, str) or not prompt.strip():
            reason = f"the user's message to the agent must be some text, got {prompt!r}"
            raise InvalidInputError("fuzz", [("prompt", reason)])
        self.target = target_of(agent)
        self.prompt = prompt
        live = live or self.target.needs_live
        self.behaviours = behaviours or Behaviours(faults=default_faults(live))
        self.properties = default_properties(properties, self.behaviours.max_model_calls)
        self.folder = Path(folder)
        if live:
            require_extra("serve")
        self.ep = EndpointHandle(probe_scenario(prompt), live=live)
        try:
            self.offer = probe(
                self.ep, self.target, prompt, max_model_calls=self.behaviours.max_model_calls
            )
        except BaseException:
            self.ep.close()
            raise
        self.name = scenario_name(self.target, name)
        self.runs = 0
        self._first_failure: int | None = None  # pragma: no mutate (fuzz() sets it, then reads)
        self._scripts: st.SearchStrategy[Scenario] | None = None

    # --- one example -----------------------------------------------------------------------

    def scripts(self) -> st.SearchStrategy[Scenario]:
        """Scripts drawn from what the agent offers, as ``behaviours`` allows (one strategy,
        made on the first call)."""
        if self._scripts is None:
            target = self.target
            adapter = target.reference if isinstance(target, FunctionTarget) else None
            self._scripts = model_scripts(
                self.offer, self.behaviours, name=self.name, adapter=adapter
            )
        return self._scripts

    def run(self, scenario: Scenario) -> AgentRun:
        """Play ``scenario`` to the agent as a fresh session (no checks)."""
        for prop in self.properties:
            prop.begin()
        self.runs += 1
        return play(
            self.ep,
            self.target,
            scenario,
            self.prompt,
            max_model_calls=self.behaviours.max_model_calls,
        )

    def check(self, scenario: Scenario) -> AgentRun:
        """Play ``scenario`` and check every property; ``FuzzFailure`` (an ``AssertionError``)
        when one breaks, after writing the scenario (the last one written is the one
        hypothesis shrank)."""
        run = self.run(scenario)
        problems = all_problems(run, self.properties)
        if problems:
            if self._first_failure is None:
                self._first_failure = self.runs
            path, command = write_failure(
                scenario,
                problems,
                self.folder,
                lambda at: replay_command(self.target, at, self.prompt, scenario),
            )
            raise FuzzFailure(problems, scenario=scenario, path=path, command=command)
        return run

    # --- many examples ---------------------------------------------------------------------

    def fuzz(
        self,
        *,
        max_examples: int = DEFAULT_EXAMPLES,
        settings: Settings | None = None,
        seed: int | None = None,
    ) -> FuzzReport:
        """Check up to ``max_examples`` drawn scripts; on a failure hypothesis shrinks it and
        ``FuzzFailure`` names the scenario file written. ``settings``: hypothesis settings to
        start from (default: the active profile's, whose database, if any, keeps the failure
        to try first next time); ``seed`` fixes the draws."""

        def example(script: Scenario) -> None:
            self.check(script)

        example._hypothesis_internal_add_digest = self._digest()  # type: ignore[attr-defined]
        test = given(self.scripts())(self._settings(max_examples, settings)(example))
        if seed is not None:
            test = hypothesis.seed(seed)(test)
        start, self._first_failure = self.runs, None
        try:
            test()
        except unittest.SkipTest:  # hypothesis's word for "told to run no example"
            raise ConfigurationError(
                "fuzzing ran no example: the hypothesis settings it started from (the active "
                "profile's, or settings=) leave out the generate phase, and the database held "
                "no failure to replay; add Phase.generate to their phases"
            ) from None
        except FuzzFailure as failure:
            raise self._found(failure, start) from None
        except FlakyFailure as flaky:  # the shrunk script did not fail again when replayed
            found = flaky.subgroup(FuzzFailure)
            if found is None:
                raise
            raise self._found(found.exceptions[0], start, flaky=True) from None  # type: ignore[arg-type]
        return FuzzReport(examples=self.runs - start, offer=self.offer)

    def _found(self, failure: FuzzFailure, start: int, *, flaky: bool = False) -> FuzzFailure:
        first = self._first_failure
        assert first is not None  # check() set it before it raised
        problems = failure.problems
        if flaky:
            problems = (
                *problems,
                "(flaky: the script did not break the agent every time it was played; the "
                "agent is not deterministic, so a replay may pass)",
            )
        return FuzzFailure(
            problems,
            scenario=failure.scenario,
            path=failure.path,
            command=failure.command,
            found_at=first - start,
            runs=self.runs - start,
        )

    def _settings(self, max_examples: int, given_settings: Settings | None) -> Settings:
        parent = given_settings if given_settings is not None else Settings()
        return Settings(
            parent,
            max_examples=max_examples,
            deadline=None,
            report_multiple_bugs=False,  # pragma: no mutate (every failure is check()'s: one bug)
            print_blob=False,  # pragma: no mutate (its note is on an exception `from None` hides)
            verbosity=Verbosity.quiet if given_settings is None else parent.verbosity,
            phases=[phase for phase in parent.phases if phase is not Phase.explain],
            # Hypothesis's health checks judge data generation, and here the agent's runs are
            # the test: kept off so that none ever blames an agent's pace or size on the
            # strategies. No script the fuzzer draws was found to set one off (tools whose
            # schemas filter most values, arrays of 1,000 objects), so no test observes them.
            suppress_health_check=[  # pragma: no mutate (see above)
                *parent.suppress_health_check,
                HealthCheck.too_slow,
                HealthCheck.data_too_large,
                HealthCheck.filter_too_much,
                HealthCheck.large_base_example,
            ],
        )

    def _digest(self) -> bytes:
        """What the hypothesis database keys this fuzzing by: target, prompt, offer and
        behaviours (the same choices then draw the same scripts)."""
        # pragma: no mutate block (a key of hypothesis's database, built in one order: any
        # spelling of its parts serves, as long as other choices give another key)
        described = {
            "target": self.target.reference,
            "prompt": self.prompt,
            "tools": [tool.to_dict() for tool in self.offer.tools],
            "users": list(self.offer.users),
            "behaviours": _described(self.behaviours),
        }
        text = json.dumps(described, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).digest()

    def close(self) -> None:
        """Stop the live server, if any."""
        self.ep.close()

    def __enter__(self) -> Fuzzer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _described(behaviours: Behaviours) -> dict[str, Any]:  # pragma: no mutate block (as _digest)
    return {
        "tools": behaviours.tools,
        "replies": sorted(behaviours.replies),
        "arguments": sorted(behaviours.arguments),
        "faults": sorted(behaviours.faults),
        "max_steps": behaviours.max_steps,
        "max_model_calls": behaviours.max_model_calls,
        "before": [reply.model_dump(mode="json") for reply in behaviours.before],
        "after": [reply.model_dump(mode="json") for reply in behaviours.after],
    }


def fuzz(
    agent: AgentLike,
    prompt: str,
    *,
    behaviours: Behaviours | None = None,
    properties: Sequence[PropertyLike] = (),
    max_examples: int = DEFAULT_EXAMPLES,
    settings: Settings | None = None,
    seed: int | None = None,
    folder: str | Path = DEFAULT_FOLDER,
    name: str | None = None,
    live: bool = False,
) -> FuzzReport:
    """Fuzz ``agent`` on ``prompt`` (see :class:`Fuzzer` and :meth:`Fuzzer.fuzz`)."""
    with Fuzzer(
        agent,
        prompt,
        behaviours=behaviours,
        properties=properties,
        folder=folder,
        name=name,
        live=live,
    ) as fuzzer:
        return fuzzer.fuzz(max_examples=max_examples, settings=settings, seed=seed)


def replay(
    scenario: str | Path | Scenario,
    agent: AgentLike | None = None,
    *,
    prompt: str | None = None,
    properties: Sequence[PropertyLike] = (),
    max_model_calls: int | None = None,
    live: bool = False,
) -> AgentRun:
    """Play a written script (a file or a scenario) to ``agent`` (default: the function its
    ``agent.adapter`` names) and check the properties; ``FuzzFailure`` when one breaks."""
    loaded = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    if agent is None:
        if loaded.agent.adapter is None:
            raise ConfigurationError(
                f"replay {loaded.name}: the scenario names no agent.adapter: give the agent"
            )
        agent = loaded.agent.adapter
    target = target_of(agent)
    prompt = prompt if prompt is not None else loaded.turns[-1].user
    limit = max_model_calls or Behaviours().max_model_calls
    chosen = default_properties(properties, limit)
    with EndpointHandle(loaded, live=live or target.needs_live) as ep:
        for prop in chosen:
            prop.begin()
        run = play(ep, target, loaded, prompt, max_model_calls=limit)
    problems = all_problems(run, chosen)
    if problems:
        path = Path(scenario) if not isinstance(scenario, Scenario) else None
        command = replay_command(target, path, prompt, loaded) if path else ""
        raise FuzzFailure(problems, scenario=loaded, path=path, command=command, replayed=True)
    return run
