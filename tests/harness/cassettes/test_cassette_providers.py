"""Recording and strict replay: modes, mismatch diffs, unused interactions, recorded errors."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

import agentrig as ar
from agentrig.errors import InvalidInputError, ProviderError
from agentrig.fakes import FunctionLLM, ScriptedLLM, fail, reply
from agentrig.harness.cassettes import (
    CassetteError,
    CassetteFileError,
    CassetteMismatchError,
    CassetteNotFoundError,
    RecordingProvider,
    RecordMode,
    ReplayedProviderError,
    ReplayProvider,
    UnusedInteractionsError,
    cassette_provider,
    load_cassette,
)

Build = Callable[..., ar.AgentLoop]
TwoTurns = Callable[[ar.AgentLoop], ar.AgentState]


def request(text: str, *history: str) -> ar.InferenceRequest:
    messages = [ar.Message.user(t) for t in (*history, text)]
    return ar.InferenceRequest(messages=ar.Messages(messages))


@pytest.fixture
def recorded(tmp_path: Path, build: Build, brain: FunctionLLM, two_turns: TwoTurns) -> Path:
    """A cassette of the two-turn weather session."""
    path = tmp_path / "weather.yaml"
    two_turns(build(RecordingProvider(brain, path=path)))
    return path


class TestRecording:
    def test_every_interaction_is_written_as_it_happens(
        self, tmp_path: Path, build: Build, brain: FunctionLLM, two_turns: TwoTurns
    ) -> None:
        path = tmp_path / "deep" / "weather.yaml"
        recorder = RecordingProvider(brain, path=path)
        two_turns(build(recorder))
        assert recorder.recorded == len(brain.calls) == 4
        assert load_cassette(path) == recorder.cassette
        assert recorder.cassette.metadata.recorded_with == "FunctionLLM"
        assert recorder.unused() == []
        recorder.assert_complete()

    def test_without_a_path_nothing_is_written(self, tmp_path: Path, brain: FunctionLLM) -> None:
        recorder = RecordingProvider(brain)
        recorder.infer(request("Thanks"))
        assert len(recorder.cassette.interactions) == 1
        assert list(tmp_path.iterdir()) == []

    def test_a_provider_error_is_recorded_and_raised(self, tmp_path: Path) -> None:
        recorder = RecordingProvider(ScriptedLLM([fail("rate limited", retryable=True)]))
        with pytest.raises(ProviderError, match="rate limited"):
            recorder.infer(request("hi"))
        error = recorder.cassette.interactions[0].error
        assert error is not None
        assert (error.type, error.message, error.retryable) == (
            "ProviderError",
            "rate limited",
            True,
        )

    def test_the_model_and_provider_are_noted_from_the_llm_config(self) -> None:
        recorder = RecordingProvider(ScriptedLLM(["hi"]))
        config = ar.LlmConfig(model="gpt-test", provider="openai", temperature=0.2)
        recorder.infer(ar.InferenceRequest(messages=request("x").messages, llm_config=config))
        metadata = recorder.cassette.metadata
        assert (metadata.provider, metadata.model) == ("openai", "gpt-test")


class TestReplay:
    def test_replay_gives_the_recorded_run_without_the_model(
        self, recorded: Path, build: Build, brain: FunctionLLM, two_turns: TwoTurns
    ) -> None:
        original = two_turns(build(FunctionLLM(brain.function)))
        replay = ReplayProvider(load_cassette(recorded), path=recorded)
        final = two_turns(build(replay))
        assert final.final_response().to_text() == original.final_response().to_text()
        assert [m.content for m in final.messages()] == [m.content for m in original.messages()]
        assert final.usage() == original.usage()
        assert replay.played == (1, 2, 3, 4)
        replay.assert_complete()

    def test_a_changed_request_fails_with_a_diff_naming_file_and_interaction(
        self, recorded: Path, build: Build
    ) -> None:
        replay = ReplayProvider(load_cassette(recorded), path=recorded)
        loop = build(replay)
        state = loop.execute(ar.AgentState().with_user_message("Weather in Paris and Oslo?"))
        final = loop.execute(state.with_user_message("Thanks a lot!"))
        assert final.status() is ar.ExecutionStatus.FAILED
        assert [e.type for e in final.errors()][-1] == "CassetteMismatchError"
        miss = replay.misses[0]
        assert (miss.path, miss.request_number, miss.nearest) == (str(recorded), 4, 4)
        text = str(miss)
        assert f"cassette {recorded}: request 4 does not match the next recorded" in text
        assert "--- recorded interaction 4\n+++ live request" in text
        assert "-  content: Thanks!\n+  content: Thanks a lot!" in text
        assert "mode 'new_episodes'" in text
        with pytest.raises(CassetteMismatchError) as raised:
            replay.assert_complete()
        assert raised.value is miss

    def test_a_miss_is_not_a_provider_error_so_fallbacks_cannot_swallow_it(self) -> None:
        assert not issubclass(CassetteMismatchError, ProviderError)
        assert issubclass(CassetteMismatchError, CassetteError)

    def test_the_nearest_recording_is_the_most_similar_unused_one(self) -> None:
        recorder = RecordingProvider(ScriptedLLM(["a", "b"]))
        recorder.infer(request("What is the weather in Paris today?"))
        recorder.infer(request("Tell me a joke"))
        replay = ReplayProvider(recorder.cassette, any_order=True)
        with pytest.raises(CassetteMismatchError) as raised:
            replay.infer(request("Tell me a joke, please"))
        assert raised.value.nearest == 2
        assert "matches no unused recorded interaction" in str(raised.value)

    def test_requests_must_come_in_recorded_order_unless_any_order(self) -> None:
        recorder = RecordingProvider(ScriptedLLM(["one", "two"]))
        recorder.infer(request("first"))
        recorder.infer(request("second"))
        strict = ReplayProvider(recorder.cassette)
        with pytest.raises(CassetteMismatchError, match=r"next recorded interaction \(1 of 2\)"):
            strict.infer(request("second"))
        relaxed = ReplayProvider(recorder.cassette, any_order=True)
        assert relaxed.infer(request("second")).content == "two"
        assert relaxed.infer(request("first")).content == "one"
        assert relaxed.played == (2, 1)
        relaxed.assert_complete()

    def test_a_request_recorded_later_names_that_interaction_and_diffs_the_expected_one(
        self,
    ) -> None:
        recorder = RecordingProvider(ScriptedLLM(["one", "two", "three"]))
        for text in ("first", "second", "third"):
            recorder.infer(request(text))
        replay = ReplayProvider(recorder.cassette, path="c.yaml")
        replay.infer(request("first"))
        with pytest.raises(CassetteMismatchError) as raised:
            replay.infer(request("third"))
        miss = raised.value
        assert miss.nearest == 2  # the interaction that should have come next
        assert "-  content: second\n+  content: third" in miss.diff
        assert "equals recorded interaction 3, which comes later" in str(miss)
        assert "any_order=True" in str(miss)

    def test_an_extra_request_after_the_last_one_is_a_miss(self) -> None:
        recorder = RecordingProvider(ScriptedLLM(["one"]))
        recorder.infer(request("first"))
        replay = ReplayProvider(recorder.cassette, path="c.yaml")
        replay.infer(request("first"))
        with pytest.raises(CassetteMismatchError) as raised:
            replay.infer(request("again"))
        assert raised.value.request_number == 2
        assert "all 1 recorded interaction(s) were already played" in str(raised.value)

    def test_an_empty_cassette_misses_without_a_diff(self) -> None:
        replay = ReplayProvider(RecordingProvider(ScriptedLLM([])).cassette)
        with pytest.raises(CassetteMismatchError) as raised:
            replay.infer(request("hi"))
        assert raised.value.nearest is None
        assert raised.value.diff == ""

    def test_unused_interactions_are_reported_by_number_and_summary(self, recorded: Path) -> None:
        replay = ReplayProvider(load_cassette(recorded), path=recorded)
        loop_request = load_cassette(recorded).interactions[0].request
        assert loop_request.messages[1].content == "Weather in Paris and Oslo?"
        unused = replay.unused()
        assert [number for number, _ in unused] == [1, 2, 3, 4]
        assert unused[0][1] == "user: 'Weather in Paris and Oslo?' -> get_weather(city='Paris')"
        assert unused[3][1] == "user: 'Thanks!' -> \"You're welcome!\""
        with pytest.raises(UnusedInteractionsError) as raised:
            replay.assert_complete()
        assert raised.value.unused == tuple(unused)
        assert f"cassette {recorded}: 4 recorded interaction(s) never played" in str(raised.value)
        assert "  2: tool: 'sunny in Paris' -> get_weather(city='Oslo')" in str(raised.value)

    def test_recorded_errors_replay_as_provider_errors(self, build: Build) -> None:
        recorder = RecordingProvider(ScriptedLLM([fail("overloaded", retryable=True), "Hello."]))
        recorded_run = build(recorder, max_retries=2).execute(
            ar.AgentState().with_user_message("hi")
        )
        replay = ReplayProvider(recorder.cassette)
        final = build(replay, max_retries=2).execute(ar.AgentState().with_user_message("hi"))
        assert final.final_response().to_text() == recorded_run.final_response().to_text()
        assert final.status() is ar.ExecutionStatus.COMPLETED
        replay.assert_complete()

    def test_a_recorded_error_keeps_its_type_and_status(self) -> None:
        class RateLimited(ProviderError):
            pass

        class Failing:
            def infer(self, request: ar.InferenceRequest) -> ar.InferenceResponse:
                raise RateLimited("slow down", retryable=True, status_code=429, provider="openai")

        recorder = RecordingProvider(Failing())
        with pytest.raises(RateLimited):
            recorder.infer(request("hi"))
        replay = ReplayProvider(recorder.cassette)
        with pytest.raises(ReplayedProviderError) as raised:
            replay.infer(request("hi"))
        error = raised.value
        assert (str(error), error.error_type, error.retryable) == ("slow down", "RateLimited", True)
        assert (error.status_code, error.provider) == (429, "openai")

    def test_the_same_conversation_matches_across_runs_with_system_ids_and_clocks(
        self, tmp_path: Path, build: Build, brain: FunctionLLM, two_turns: TwoTurns
    ) -> None:
        path = tmp_path / "c.yaml"
        two_turns(build(RecordingProvider(brain, path=path)))
        for _ in range(2):
            replay = ReplayProvider(load_cassette(path), path=path)
            two_turns(build(replay))
            replay.assert_complete()


class TestModes:
    def test_none_needs_the_file(self, tmp_path: Path, brain: FunctionLLM) -> None:
        path = tmp_path / "missing.yaml"
        with pytest.raises(CassetteNotFoundError, match="mode 'once'") as raised:
            cassette_provider(path, brain, mode="none")
        assert raised.value.path == str(path)
        assert not path.exists()

    @pytest.mark.parametrize("mode", ["once", "new_episodes", "all", "none"])
    def test_a_path_that_is_not_a_regular_file_is_never_replaced(
        self, tmp_path: Path, brain: FunctionLLM, build: Build, mode: str
    ) -> None:
        """Recording over a FIFO (or, run as root, a device) used to replace it with a file."""
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        fifo = tmp_path / "pipe.yaml"
        os.mkfifo(fifo)
        link = tmp_path / "link.yaml"
        link.symlink_to(fifo)
        for path in (fifo, link):
            with pytest.raises(CassetteFileError, match=r"not a regular file: it is a FIFO"):
                build(cassette_provider(path, brain, mode=mode)).execute(
                    ar.AgentState().with_user_message("hi")
                )
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert link.is_symlink()

    def test_a_recorder_never_replaces_a_path_that_is_not_a_regular_file(
        self, tmp_path: Path, brain: FunctionLLM
    ) -> None:
        folder = tmp_path / "taken.yaml"
        folder.mkdir()
        with pytest.raises(CassetteFileError, match="not a regular file: it is a folder"):
            RecordingProvider(brain, path=folder)
        if hasattr(os, "mkfifo"):
            fifo = tmp_path / "pipe.yaml"
            recorder = RecordingProvider(brain, path=fifo)
            os.mkfifo(fifo)  # made after the recorder was: the write refuses it
            with pytest.raises(OSError, match="not a regular file"):
                recorder.infer(request("hi"))
            assert stat.S_ISFIFO(os.stat(fifo).st_mode)

    def test_none_replays_without_asking_the_inner_provider(
        self, recorded: Path, build: Build, two_turns: TwoTurns
    ) -> None:
        inner = ScriptedLLM([])
        provider = cassette_provider(recorded, inner, mode=RecordMode.NONE)
        assert isinstance(provider, ReplayProvider)
        two_turns(build(provider))
        assert inner.calls == ()
        provider.assert_complete()

    def test_once_records_when_absent_then_replays(
        self, tmp_path: Path, build: Build, brain: FunctionLLM, two_turns: TwoTurns
    ) -> None:
        path = tmp_path / "c.yaml"
        first = cassette_provider(path, brain)
        assert isinstance(first, RecordingProvider)
        two_turns(build(first))
        second = cassette_provider(path, ScriptedLLM([]))
        assert isinstance(second, ReplayProvider)
        two_turns(build(second))
        second.assert_complete()

    def test_new_episodes_replays_matches_and_appends_misses(
        self, recorded: Path, build: Build, brain: FunctionLLM
    ) -> None:
        before = len(brain.calls)
        provider = cassette_provider(recorded, brain, mode="new_episodes")
        loop = build(provider)
        state = loop.execute(ar.AgentState().with_user_message("Weather in Paris and Oslo?"))
        loop.execute(state.with_user_message("Thanks again!"))
        assert len(brain.calls) == before + 1  # only the new request reached the model
        stored = load_cassette(recorded)
        assert len(stored.interactions) == 5
        assert stored.interactions[4].request.messages[-1].content == "Thanks again!"
        assert isinstance(provider, ReplayProvider)
        assert [number for number, _ in provider.unused()] == [4]

    def test_all_records_everything_again(
        self, recorded: Path, build: Build, brain: FunctionLLM
    ) -> None:
        provider = cassette_provider(recorded, brain, mode="all")
        assert isinstance(provider, RecordingProvider)
        build(provider).execute(ar.AgentState().with_user_message("Thanks!"))
        assert len(load_cassette(recorded).interactions) == 1

    def test_recording_needs_a_provider_to_record_from(self, tmp_path: Path) -> None:
        with pytest.raises(CassetteError, match="needs a provider to record from"):
            cassette_provider(tmp_path / "c.yaml", mode="once")

    def test_an_unknown_mode_lists_the_valid_ones(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidInputError, match="valid: none, once, new_episodes, all"):
            cassette_provider(tmp_path / "c.yaml", ScriptedLLM([]), mode="sometimes")

    def test_a_replayed_cassette_is_not_rewritten(self, recorded: Path, build: Build) -> None:
        before = recorded.read_bytes()
        provider = cassette_provider(recorded, ScriptedLLM([reply("unused")]), mode="once")
        build(provider).execute(ar.AgentState().with_user_message("Weather in Paris and Oslo?"))
        assert recorded.read_bytes() == before
