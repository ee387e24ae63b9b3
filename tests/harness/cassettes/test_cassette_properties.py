"""Properties: the cassette serializer round-trips, and replay gives back what was recorded."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentrig as ar
from agentrig.errors import InvalidInputError
from agentrig.fakes import ScriptedLLM, SeededIds, Turn
from agentrig.harness.cassettes import (
    Cassette,
    Interaction,
    RecordingProvider,
    ReplayProvider,
    cassette_from_yaml,
    cassette_to_yaml,
)
from agentrig.harness.property import strategies as ars
from agentrig.harness.property.profiles import agentrig_settings


@agentrig_settings(max_examples=60)
@given(cassette=ars.cassettes())
def test_yaml_text_round_trips_and_is_byte_stable(cassette: Cassette) -> None:
    text = cassette_to_yaml(cassette)
    again = cassette_from_yaml(text)
    assert again == cassette
    assert cassette_to_yaml(again) == text


def outcome(provider: ar.InferenceProvider, request: ar.InferenceRequest) -> object:
    try:
        return provider.infer(request)
    except ar.ProviderError as error:
        return ("error", str(error), error.retryable)


@agentrig_settings(max_examples=30)
@given(script=ars.scripts(), users=st.lists(ars.texts(max_size=8), min_size=1, max_size=3))
def test_replaying_a_recorded_script_gives_the_same_answers(
    script: list[Turn], users: list[str]
) -> None:
    requests = [
        ar.InferenceRequest(messages=ar.Messages.of(ar.Message.user(f"{number}: {text}")))
        for number, text in enumerate(users * len(script))
    ][: len(script)]
    recorder = RecordingProvider(ScriptedLLM(script))
    with ar.runtime_context(ids=SeededIds(1)):  # call ids the script leaves out are made up
        recorded = [outcome(recorder, request) for request in requests]
    stored = cassette_from_yaml(cassette_to_yaml(recorder.cassette))
    replay = ReplayProvider(stored)
    with ar.runtime_context(ids=SeededIds(1)):  # and made up again, the same, on replay
        assert [outcome(replay, request) for request in requests] == recorded
    replay.assert_complete()


@agentrig_settings(max_examples=5)
@given(cassette=st.from_type(Cassette), interaction=st.from_type(Interaction))
def test_the_strategies_are_registered(cassette: Cassette, interaction: Interaction) -> None:
    assert cassette.version == 1
    assert (interaction.response is None) != (interaction.error is None)


def test_the_strategies_validate_their_arguments() -> None:
    with pytest.raises(InvalidInputError, match="max_interactions"):
        ars.cassettes(max_interactions=-1)
    with pytest.raises(InvalidInputError, match="errors"):
        ars.interactions(errors="yes")  # type: ignore[arg-type]
