"""The fuzzing loop: probing the agent, finding and shrinking a failure, the written scenario
replaying it, the hypothesis database trying it first next time."""

from __future__ import annotations

import threading
import unittest
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, Verbosity, settings
from hypothesis.database import DirectoryBasedExampleDatabase, InMemoryExampleDatabase

from agentrig.errors import ConfigurationError, InvalidInputError
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.fuzz import (
    DEFAULT_FAULTS,
    LIVE_DEFAULT_FAULTS,
    Behaviours,
    Fuzzer,
    FuzzFailure,
    fuzz,
    raises_only,
    replay,
)
from agentrig.harness.fuzz.target import FunctionTarget
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import AgentSpec

from .agents import (
    correct,
    crash_on_empty_answer,
    crash_on_refusal,
    crash_on_timeout,
    loops,
    no_tools,
    silent,
)

PROMPT = "Weather in Paris?"
QUIET = settings(database=None, derandomize=True)
REFUSALS = Behaviours(replies={"text", "refusal"}, faults=())


def test_the_probe_reads_the_offered_tools_and_the_user_message():
    with Fuzzer(correct, PROMPT) as fuzzer:
        assert [tool.name for tool in fuzzer.offer.tools] == ["get_weather", "book_flight"]
        assert fuzzer.offer.users == (PROMPT,)
        assert fuzzer.offer.format == "chat"


def test_over_a_live_server_timeouts_are_played_only_when_asked_for():
    with Fuzzer(correct, PROMPT) as in_process:
        assert in_process.behaviours.faults == DEFAULT_FAULTS
    with Fuzzer(correct, PROMPT, live=True) as live:
        assert live.behaviours.faults == LIVE_DEFAULT_FAULTS
        assert "timeout" not in live.behaviours.faults
    asked = Behaviours(faults={"timeout"})
    with Fuzzer(correct, PROMPT, behaviours=asked, live=True) as live:
        assert live.behaviours.faults == {"timeout"}


def test_an_agent_that_never_calls_the_endpoint_is_refused_with_what_to_do():
    with pytest.raises(ConfigurationError, match="sent no request to the endpoint"):
        Fuzzer(silent, PROMPT)


def test_an_agent_that_fails_on_a_plain_answer_is_refused_before_fuzzing():
    def broken(ep: object, prompt: str) -> str:
        correct(ep, prompt)
        raise RuntimeError("always")

    with pytest.raises(ConfigurationError, match="raised RuntimeError: always when the model"):
        Fuzzer(broken, PROMPT)


@pytest.mark.slow
def test_a_planted_bug_is_found_shrunk_and_written_as_a_scenario_that_replays_it(tmp_path):
    with pytest.raises(FuzzFailure) as caught:
        fuzz(
            crash_on_refusal,
            PROMPT,
            behaviours=REFUSALS,
            max_examples=50,
            settings=QUIET,
            folder=tmp_path,
        )
    failure = caught.value
    assert failure.problems == (
        "raises_only: the agent raised builtins.AttributeError: 'NoneType' object has no "
        "attribute 'upper' (documented errors: none)",
    )
    assert failure.path is not None
    assert failure.path.parent == tmp_path
    assert str(failure.path) in str(failure)
    assert failure.command in str(failure)
    written = load_scenario(failure.path)
    replies = written.turns[0].model
    assert len(replies) == 1  # shrunk to the one answer that breaks it
    assert replies[0].refuse is not None
    assert replies[0].repeat
    assert written.agent.adapter is not None
    assert written.agent.adapter.endswith(":crash_on_refusal")
    with pytest.raises(FuzzFailure) as replayed:
        replay(failure.path, crash_on_refusal)
    assert replayed.value.problems == failure.problems


@pytest.mark.slow
def test_a_correct_agent_passes_and_the_report_counts_the_examples(tmp_path):
    report = fuzz(correct, PROMPT, settings=QUIET, folder=tmp_path)
    assert report.examples == 200  # unless told (--max-examples, max_examples=)
    assert not list(tmp_path.iterdir())


def test_documented_errors_are_not_failures(tmp_path):
    report = fuzz(
        crash_on_refusal,
        PROMPT,
        behaviours=REFUSALS,
        properties=[raises_only(AttributeError)],
        max_examples=20,
        settings=QUIET,
        folder=tmp_path,
    )
    assert report.examples == 20


def test_an_agent_that_never_stops_fails_terminates_within(tmp_path):
    behaviours = Behaviours(replies={"text"}, faults=(), max_model_calls=5)
    with pytest.raises(FuzzFailure) as caught:
        fuzz(loops, PROMPT, behaviours=behaviours, max_examples=5, settings=QUIET, folder=tmp_path)
    assert "terminates_within: the agent made 6 model calls, more than 5" in caught.value.problems


def test_a_timeout_fires_the_clients_own_timer_and_its_file_replays_it(tmp_path):
    # The client waits 30 s for an answer (ep.httpx2_client()): in process no wait takes time.
    timeouts = Behaviours(replies={"text"}, faults={"timeout"})
    with pytest.raises(FuzzFailure) as caught:
        fuzz(
            crash_on_timeout,
            PROMPT,
            behaviours=timeouts,
            max_examples=10,
            settings=QUIET,
            folder=tmp_path,
        )
    failure = caught.value
    assert failure.problems == (
        "raises_only: the agent raised builtins.TimeoutError: the model took too long "
        "(documented errors: none)",
    )
    assert failure.path is not None
    first, _ = load_scenario(failure.path).turns[0].model
    assert first.fault is not None
    assert first.fault.timeout
    with pytest.raises(FuzzFailure) as replayed:
        replay(failure.path, crash_on_timeout)
    assert replayed.value.problems == failure.problems


def test_an_answer_of_no_text_reaches_the_agent_and_its_file_replays_it(tmp_path):
    with pytest.raises(FuzzFailure) as caught:
        fuzz(
            crash_on_empty_answer,
            PROMPT,
            behaviours=Behaviours(replies={"text"}, faults=()),
            max_examples=100,
            settings=QUIET,
            folder=tmp_path,
        )
    failure = caught.value
    assert failure.problems == (
        "raises_only: the agent raised builtins.IndexError: string index out of range "
        "(documented errors: none)",
    )
    assert failure.path is not None
    (answer,) = load_scenario(failure.path).turns[0].model
    assert answer.say == ""
    assert answer.finish_reason == "stop"
    with pytest.raises(FuzzFailure) as replayed:
        replay(failure.path, crash_on_empty_answer)
    assert replayed.value.problems == failure.problems


def test_a_failure_in_the_database_is_tried_first_next_time(tmp_path):
    database = DirectoryBasedExampleDatabase(tmp_path / "db")
    chosen = settings(database=database, derandomize=False)
    for _ in range(2):
        with pytest.raises(FuzzFailure) as caught:
            fuzz(
                crash_on_refusal,
                PROMPT,
                behaviours=REFUSALS,
                max_examples=100,
                settings=chosen,
                folder=tmp_path,
            )
    assert caught.value.found_at == 1


def test_user_checks_are_properties(tmp_path):
    def answers_in_capitals(run):  # type: ignore[no-untyped-def]
        assert run.returned == str(run.returned).upper(), f"answered {run.returned!r}"

    with pytest.raises(FuzzFailure) as caught:
        fuzz(
            no_tools,
            PROMPT,
            behaviours=Behaviours(replies={"text"}, faults=()),
            properties=[answers_in_capitals],
            max_examples=20,
            settings=QUIET,
            folder=tmp_path,
        )
    assert caught.value.problems[0].startswith("answers_in_capitals: answered ")


@pytest.mark.slow
def test_the_written_scenario_serves_to_the_agent_through_an_endpoint_handle(tmp_path):
    with pytest.raises(FuzzFailure) as caught:
        fuzz(
            crash_on_refusal,
            PROMPT,
            behaviours=REFUSALS,
            max_examples=50,
            settings=QUIET,
            folder=tmp_path,
        )
    assert caught.value.path is not None
    with (
        EndpointHandle(Path(caught.value.path)) as ep,
        pytest.raises(AttributeError, match="upper"),
    ):
        crash_on_refusal(ep, PROMPT)


def test_a_failure_that_does_not_come_back_is_reported_as_flaky(tmp_path):
    seen = []

    def fails_once(ep, prompt):  # type: ignore[no-untyped-def]
        answer = correct(ep, prompt)
        if "can't" in answer and not seen:
            seen.append(answer)
            raise RuntimeError("only the first time")
        return answer

    with pytest.raises(FuzzFailure) as caught:
        fuzz(
            fails_once,
            PROMPT,
            behaviours=REFUSALS,
            max_examples=50,
            settings=QUIET,
            folder=tmp_path,
        )
    assert caught.value.problems[-1] == (
        "(flaky: the script did not break the agent every time it was played; the agent is not "
        "deterministic, so a replay may pass)"
    )


def test_an_empty_prompt_is_refused_naming_it():
    with pytest.raises(InvalidInputError) as caught:
        Fuzzer(correct, " ")
    assert caught.value.field == "prompt"
    assert str(caught.value) == (
        "invalid fuzz: prompt: the user's message to the agent must be some text, got ' '"
    )


LOOPING = Behaviours(replies={"text"}, faults=(), max_model_calls=5)


def loop_failure(folder: Path, **options: Any) -> FuzzFailure:
    """The failure of fuzzing ``loops`` (terminates_within, on its first example)."""
    with pytest.raises(FuzzFailure) as caught:
        fuzz(loops, PROMPT, behaviours=LOOPING, max_examples=5, folder=folder, **options)
    return caught.value


def fuzzed(agent: Any, *, max_examples: int = 3, **options: Any) -> Any:
    """``fuzz(agent)`` over text answers, which must pass."""
    return fuzz(
        agent,
        PROMPT,
        behaviours=Behaviours(replies={"text"}, faults=()),
        max_examples=max_examples,
        **{"settings": QUIET, **options},
    )


def test_settings_that_generate_nothing_are_an_error_not_a_silent_skip(tmp_path):
    # hypothesis skips a test told to run no example; a fuzzing that checked nothing must not
    # pass (or skip the user's test) unnoticed
    for generating_nothing in (
        settings(QUIET, phases=[Phase.explicit]),
        settings(QUIET, phases=[Phase.reuse], database=InMemoryExampleDatabase()),
    ):
        try:
            with pytest.raises(ConfigurationError, match=r"ran no example.*Phase\.generate"):
                fuzz(
                    correct,
                    PROMPT,
                    behaviours=REFUSALS,
                    settings=generating_nothing,
                    folder=tmp_path,
                )
        except unittest.SkipTest:
            pytest.fail("the fuzzing that ran no example skipped the test")


def test_a_named_fuzzing_writes_its_failure_under_that_name_in_the_folder(tmp_path):
    failure = loop_failure(tmp_path, settings=QUIET, name="looping")
    assert failure.path == tmp_path / "looping.scenario.yaml"
    assert load_scenario(failure.path).name == "looping"


def test_the_settings_given_are_the_ones_fuzzing_starts_from(tmp_path):
    database = InMemoryExampleDatabase()
    unshrunk = loop_failure(tmp_path, settings=settings(database=database, phases=[Phase.generate]))
    assert database.data  # the failure is kept in the database given, to be tried first
    shrunk = loop_failure(tmp_path, settings=QUIET)
    assert unshrunk.found_at == shrunk.found_at == 1
    assert unshrunk.runs is not None
    assert shrunk.runs is not None
    assert unshrunk.runs < shrunk.runs  # no shrinking phase: fewer runs
    # without hypothesis's explain phase (its notes would go nowhere), which takes dozens
    assert shrunk.runs < 10


def test_each_passing_fuzzing_of_one_fuzzer_reports_its_own_examples_and_the_offer(tmp_path):
    with Fuzzer(correct, PROMPT, behaviours=REFUSALS, folder=tmp_path) as fuzzer:
        reports = [fuzzer.fuzz(max_examples=3, settings=QUIET) for _ in range(2)]
    assert [report.examples for report in reports] == [3, 3]
    assert all(report.offer is fuzzer.offer for report in reports)


def test_each_fuzzing_of_one_fuzzer_counts_its_own_examples(tmp_path):
    with Fuzzer(loops, PROMPT, behaviours=LOOPING, folder=tmp_path) as fuzzer:
        assert fuzzer.runs == 0  # the probe is not an example
        failures = []
        for _ in range(2):
            with pytest.raises(FuzzFailure) as caught:
                fuzzer.fuzz(max_examples=5, settings=QUIET)
            failures.append(caught.value)
    first, second = failures
    assert first.runs is not None
    assert second.runs is not None
    assert (second.found_at, second.runs) == (first.found_at, first.runs)
    assert fuzzer.runs == first.runs + second.runs


def test_a_replayed_failure_names_its_file_and_a_replayed_scenario_none(tmp_path):
    failure = loop_failure(tmp_path, settings=QUIET)
    assert failure.path is not None
    with pytest.raises(FuzzFailure) as replayed:
        replay(failure.path, loops, max_model_calls=5)
    again = replayed.value
    assert again.replayed
    assert (again.path, again.problems, again.command) == (
        failure.path,
        failure.problems,
        failure.command,
    )
    assert str(again).splitlines()[0] == (
        f"agentrig fuzz: the script of {failure.path} breaks the agent:"
    )
    with pytest.raises(FuzzFailure) as from_scenario:
        replay(load_scenario(failure.path), loops, max_model_calls=5)
    assert (from_scenario.value.path, from_scenario.value.command) == (None, "")
    assert from_scenario.value.problems == failure.problems


def test_a_replay_without_an_agent_plays_the_files_adapter_or_says_it_has_none(tmp_path):
    failure = loop_failure(tmp_path, settings=QUIET)
    assert failure.path is not None
    written = load_scenario(failure.path)
    assert written.agent.adapter is not None
    assert written.agent.adapter.endswith(":loops")
    with pytest.raises(FuzzFailure) as replayed:
        replay(failure.path, max_model_calls=5)
    assert replayed.value.problems == failure.problems
    anonymous = written.model_copy(update={"agent": AgentSpec()})
    with pytest.raises(ConfigurationError) as caught:
        replay(anonymous)
    assert str(caught.value) == (
        f"replay {written.name}: the scenario names no agent.adapter: give the agent"
    )


def test_without_settings_fuzzing_starts_from_the_active_profile(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default profile keeps its database in .hypothesis/
    failure = loop_failure(tmp_path / "fuzz")
    assert failure.found_at == 1
    assert failure.path is not None
    assert failure.path.parent == tmp_path / "fuzz"


def test_a_seed_draws_the_same_scripts_again(tmp_path):
    def scripts_of(seed: int) -> list[Any]:
        seen: list[Any] = []
        fuzz(
            correct,
            PROMPT,
            behaviours=REFUSALS,
            properties=[lambda run: seen.append(run.scenario)],
            max_examples=5,
            settings=settings(database=None),
            seed=seed,
            folder=tmp_path,
        )
        return seen

    first = scripts_of(3)
    assert len(first) == 5
    assert scripts_of(3) == first
    assert scripts_of(4) != first


def test_a_replay_plays_the_prompt_given_instead_of_the_files(tmp_path):
    failure = loop_failure(tmp_path, settings=QUIET)
    assert failure.path is not None
    prompts: list[str] = []

    def recording(ep: Any, prompt: str) -> str:
        prompts.append(prompt)
        return correct(ep, prompt)

    run = replay(failure.path, recording)
    assert (prompts, run.prompt) == ([PROMPT], PROMPT)
    with pytest.raises(FuzzFailure) as other:
        replay(failure.path, recording, prompt="Rain in Oslo?")
    assert prompts[-1] == "Rain in Oslo?"
    assert "--prompt 'Rain in Oslo?'" in other.value.command


def test_fuzzing_plays_in_process_unless_asked_to_serve_live(tmp_path):
    served: list[bool] = []

    def noting(ep: EndpointHandle, prompt: str) -> str:
        served.append(ep.live)
        return correct(ep, prompt)

    fuzzed(noting, max_examples=1, folder=tmp_path)
    assert set(served) == {False}
    served.clear()
    fuzzed(noting, max_examples=1, folder=tmp_path, live=True)
    assert set(served) == {True}  # the probe and the examples alike


def test_a_replay_serves_live_when_asked_or_when_the_target_needs_it(tmp_path):
    failure = loop_failure(tmp_path, settings=QUIET)
    assert failure.path is not None
    served: list[bool] = []

    def noting(ep: EndpointHandle, prompt: str) -> str:
        served.append(ep.live)
        return correct(ep, prompt)

    replay(failure.path, noting)
    replay(failure.path, noting, live=True)
    replay(failure.path, FunctionTarget(noting, needs_live=True))
    assert served == [False, True, True]


def test_fuzzing_has_no_deadline_an_example_may_take_its_time(tmp_path):
    def slow(ep: EndpointHandle, prompt: str) -> str:
        threading.Event().wait(0.25)  # over hypothesis's default deadline of 200 ms
        return correct(ep, prompt)

    assert fuzzed(slow, max_examples=1, folder=tmp_path).examples == 1


def test_fuzzing_is_quiet_unless_the_settings_given_say_otherwise(tmp_path, capsys):
    fuzzed(correct, max_examples=1, folder=tmp_path)
    assert capsys.readouterr().out == ""
    verbose = settings(database=None, derandomize=True, verbosity=Verbosity.verbose)
    fuzzed(correct, max_examples=1, folder=tmp_path, settings=verbose)
    assert "Test case: example(" in capsys.readouterr().out


def test_without_settings_fuzzing_is_quiet_whatever_the_active_profile(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    previous = settings.get_current_profile_name()
    settings.register_profile("agentrig-test-verbose", verbosity=Verbosity.verbose, database=None)
    settings.load_profile("agentrig-test-verbose")
    try:
        fuzzed(correct, max_examples=1, folder=tmp_path, settings=None)
    finally:
        settings.load_profile(previous)
    assert capsys.readouterr().out == ""
