"""The invariant registry and the checker: registering, selecting, running user invariants."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import ClassVar

import pytest

from agentrig import (
    ExecutionBudget,
    TraceMode,
)
from agentrig.fakes import (
    call,
)
from agentrig.harness.checks.invariant import (
    Invariant,
    Observation,
    Violation,
    invariant_names,
    register_invariant,
    select_invariants,
    unregister_invariant,
)
from agentrig.harness.errors import InvariantError

from .conftest import Agent, ForceRouting, assert_violation

# --- the registry and the checker ---------------------------------------------------------------


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Names registered by a test, unregistered afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        unregister_invariant(name)


class TestRegistry:
    def test_user_invariant_runs_in_the_checker(self, registered: list[str]) -> None:
        @register_invariant
        class AtMostOneStep(Invariant):
            name = "at_most_one_step"
            description = "Agents answer straight away."

            def check(self, observation: Observation) -> Iterable[str]:
                if observation.step > 1:
                    yield f"{observation.step} steps"

        registered.append(AtMostOneStep.name)
        assert invariant_names()[-1] == "at_most_one_step"
        agent = Agent([call("lookup", q="a"), "done"])
        agent.say("hi")
        assert_violation(agent, "at_most_one_step", turn=1, step=2, contains="2 steps")
        assert agent.checker.checks["at_most_one_step"] == 2
        assert agent.checker.failures["at_most_one_step"] == 1

    def test_name_and_description_default_to_the_class_name_and_docstring(self) -> None:
        class NoHTTPSecretsInOutput(Invariant):
            """No answer quotes
            a secret."""

            def check(self, observation: Observation) -> Iterable[str]:
                return ()

        class Named(NoHTTPSecretsInOutput):
            name = "named_by_hand"
            description = "said outright"

        assert NoHTTPSecretsInOutput.name == "no_http_secrets_in_output"
        assert NoHTTPSecretsInOutput.description == "No answer quotes a secret."
        assert (Named.name, Named.description) == ("named_by_hand", "said outright")

    def test_duplicate_name_raises(self, registered: list[str]) -> None:
        class Clean(Invariant):
            name = "clean_messages"
            description = "an impostor"

            def check(self, observation: Observation) -> Iterable[str]:
                return ()

        with pytest.raises(InvariantError, match="'clean_messages' is already registered"):
            register_invariant(Clean)
        assert select_invariants(["clean_messages"])[0].description != "an impostor"

    def test_registering_the_same_class_twice_is_harmless(self, registered: list[str]) -> None:
        class Twice(Invariant):
            name = "registered_twice"
            description = "twice"

            def check(self, observation: Observation) -> Iterable[str]:
                return ()

        registered.append(Twice.name)
        register_invariant(Twice)
        assert register_invariant(Twice) is Twice
        assert invariant_names().count("registered_twice") == 1

    def test_unregister(self, registered: list[str]) -> None:
        class Gone(Invariant):
            name = "gone_soon"
            description = "gone"

            def check(self, observation: Observation) -> Iterable[str]:
                return ()

        register_invariant(Gone)
        unregister_invariant("gone_soon")
        unregister_invariant("gone_soon")  # unknown names are ignored
        assert "gone_soon" not in invariant_names()

    def test_select_only_and_exclude(self) -> None:
        only = select_invariants(only=["event_sequence", "clean_messages"])
        assert [inv.name for inv in only] == ["event_sequence", "clean_messages"]
        rest = select_invariants(exclude=["event_sequence"])
        assert [inv.name for inv in rest] == [n for n in invariant_names() if n != "event_sequence"]
        both = select_invariants(
            only=["event_sequence", "clean_messages"], exclude=["clean_messages"]
        )
        assert [inv.name for inv in both] == ["event_sequence"]
        assert [inv.name for inv in select_invariants()] == list(invariant_names())

    @pytest.mark.parametrize(
        ("only", "exclude", "unknown"),
        [
            (["clean_mesages"], (), "clean_mesages"),
            (None, ["no_such_check"], "no_such_check"),
            (["clean_messages", "typo_one"], ["typo_two"], "typo_one, typo_two"),
        ],
    )
    def test_unknown_names_list_the_valid_ones(
        self, only: list[str] | None, exclude: Sequence[str], unknown: str
    ) -> None:
        with pytest.raises(InvariantError) as error:
            select_invariants(only, exclude)
        message = str(error.value)
        assert f"unknown invariant(s): {unknown};" in message
        assert "valid: " + ", ".join(invariant_names()) in message

    def test_checker_runs_only_the_selected_invariants(self) -> None:
        agent = Agent(
            [call("lookup", q="a"), "done"],
            wrap_driver=lambda inner: ForceRouting(inner, TraceMode.INLINE),
            invariants=select_invariants(exclude=["clean_messages", "buffer_holds_current_trace"]),
        )
        agent.say("hi")
        assert "clean_messages" not in agent.checker.checks
        assert agent.violations == []

    def test_a_check_that_raises_is_a_violation(self) -> None:
        class Fragile(Invariant):
            name = "fragile"
            description = "raises on the second step"

            def check(self, observation: Observation) -> Iterable[str]:
                if observation.step == 2:
                    raise ValueError("cannot cope")
                return ()

        agent = Agent(
            [call("lookup", q="a"), call("lookup", q="b"), "done"],
            invariants=[Fragile(), *select_invariants(["clean_messages"])],
        )
        agent.say("hi")
        assert [str(v) for v in agent.violations] == [
            "[fragile] turn 1, step 2: the check itself raised ValueError: cannot cope"
        ]
        assert agent.checker.checks == {"fragile": 3, "clean_messages": 3}
        assert agent.checker.failures == {"fragile": 1, "clean_messages": 0}

    def test_final_only_runs_on_the_final_state(self) -> None:
        seen: list[tuple[int, bool]] = []

        class Spy(Invariant):
            name = "spy"
            description = "records what it sees"
            final_only: ClassVar[bool] = True

            def check(self, observation: Observation) -> Iterable[str]:
                seen.append((observation.step, observation.is_final))
                return ()

        agent = Agent(
            [call("lookup", q="a"), call("lookup", q="b"), "one", "two"], invariants=[Spy()]
        )
        agent.say("first")
        agent.say("second")
        assert seen == [(3, True), (1, True)]
        assert agent.checker.checks == {"spy": 2}

    def test_observation_exposes_the_execution(self) -> None:
        seen: list[Observation] = []

        class Spy(Invariant):
            name = "spy"
            description = "keeps observations"

            def check(self, observation: Observation) -> Iterable[str]:
                seen.append(dataclasses.replace(observation, states=list(observation.states)))
                return ()

        budget = ExecutionBudget(max_steps=5)
        agent = Agent(
            [call("lookup", q="a"), "done"], invariants=[Spy()], budget=budget, inline=True
        )
        agent.say("hi")
        first, last = seen
        assert (first.turn, first.step, first.is_final, first.previous) == (1, 1, False, None)
        assert (last.step, last.is_final, last.previous) == (2, True, first.state)
        assert first.initial is last.initial
        assert first.initial.step_count() == 0
        assert (last.trace_mode, last.budget) == (TraceMode.INLINE, budget)
        assert [s.step_count() for s in last.states] == [1, 2]
        assert len(last.all_steps()) == 2
        assert all(e.agent_id == last.state.agent_id for e in last.own_events())

    def test_begin_resets_the_execution(self) -> None:
        agent = Agent(["one", "two"], invariants=[])
        agent.say("first")
        first_events = list(agent.checker.events)
        agent.say("second")
        assert first_events
        assert agent.checker.events
        assert {e.execution_id for e in agent.checker.events}.isdisjoint(
            {e.execution_id for e in first_events}
        )


class TestViolation:
    def test_str_names_invariant_turn_and_step(self) -> None:
        violation = Violation("clean_messages", 2, 3, "it broke")
        assert str(violation) == "[clean_messages] turn 2, step 3: it broke"


class TestRegistryMessages:
    def test_an_unknown_name_suggests_the_close_one_and_how_to_register(self) -> None:
        with pytest.raises(InvariantError) as error:
            select_invariants(["clean_mesages", "my_custom_check"])
        message = str(error.value)
        assert "did you mean 'clean_messages'?" in message
        assert message.endswith(
            "; a custom invariant must be registered with @register_invariant in a module that "
            "is imported first (agentrig run --plugin MODULE, or conftest.py under pytest)"
        )

    def test_a_duplicate_name_says_who_has_it_and_what_to_do(self) -> None:
        class Clean(Invariant):
            name = "clean_messages"
            description = "an impostor"

            def check(self, observation: Observation) -> Iterable[str]:
                return ()

        with pytest.raises(InvariantError) as error:
            register_invariant(Clean)
        message = str(error.value)
        assert "agentrig.harness.checks.builtin_invariants.CleanMessages" in message
        assert "give yours another name" in message


class TestCheckResults:
    """A user's ``check`` may return instead of yielding: the natural slips must not mislead."""

    def run_check(self, result: object) -> list[Violation]:
        class Returning(Invariant):
            name = "returning"
            description = "returns a fixed value"
            final_only: ClassVar[bool] = True

            def check(self, observation: Observation) -> Iterable[str]:
                return result  # type: ignore[return-value]

        agent = Agent(["done"], invariants=[Returning()])
        agent.say("hi")
        return agent.violations

    def test_a_returned_string_is_one_problem_not_one_per_character(self) -> None:
        [violation] = self.run_check("bad answer")
        assert str(violation) == "[returning] turn 1, step 1: bad answer"

    def test_returning_none_means_it_holds(self) -> None:
        assert self.run_check(None) == []

    def test_a_problem_that_is_not_text_is_reported_as_text(self) -> None:
        assert [v.message for v in self.run_check([42])] == ["42"]
