"""The gate every model call of a live trial passes (``RoleProvider``): replayed or asked under
the run's traffic control, recorded, and charged to its role in the trial's ``Ledger``; and
how a failed call is told apart (the infrastructure's, refused credentials, the agent's)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from agentrig import InferenceRequest, InferenceResponse, Message, Messages, ProviderError, Usage
from agentrig.fakes.llm import ScriptedLLM, reply
from agentrig.harness.cassettes.errors import CassetteMismatchError
from agentrig.harness.cassettes.model import Cassette
from agentrig.harness.cassettes.normalize import normalize_request
from agentrig.harness.live.budget import Budget, BudgetExhausted
from agentrig.harness.live.gateway import (
    Ledger,
    RoleName,
    RoleProvider,
    Unlimited,
    access_denied_status,
    is_infrastructure_error,
    is_infrastructure_status,
    limit_name,
    provider_name_of,
)
from agentrig.harness.live.limits import ProviderLimits, Traffic

T = TypeVar("T")


def request(text: str = "hi") -> InferenceRequest:
    return InferenceRequest(messages=Messages([Message.user(text)]))


def answer(text: str = "hello", cost: float = 0.25) -> InferenceResponse:
    return InferenceResponse(content=text, usage=Usage(input_tokens=10, output_tokens=2, cost=cost))


class Control:
    """A call control that sends every call at once and notes what it was asked: the provider
    name, and what ``cost_of`` says each answer cost."""

    def __init__(self) -> None:
        self.providers: list[str] = []
        self.costs: list[float] = []

    async def call(
        self, provider: str, make_call: Callable[[], Awaitable[T]], cost_of: Callable[[T], float]
    ) -> T:
        self.providers.append(provider)
        result = await make_call()
        self.costs.append(cost_of(result))
        return result


class Refusing:
    """A call control whose budget is spent: it refuses every call."""

    async def call(
        self, provider: str, make_call: Callable[[], Awaitable[T]], cost_of: Callable[[T], float]
    ) -> T:
        raise BudgetExhausted("the run's budget", 1.0, 1.5)


class AsyncOnly:
    """A provider with only ``ainfer``, answering in turn."""

    name = "anthropic"

    def __init__(self, *answers: InferenceResponse | BaseException) -> None:
        self.answers = list(answers)
        self.asked: list[InferenceRequest] = []

    async def ainfer(self, request: InferenceRequest) -> InferenceResponse:
        self.asked.append(request)
        given = self.answers.pop(0)
        if isinstance(given, BaseException):
            raise given
        return given


class SyncOnly:
    """A provider with only ``infer``: the gate runs it in a thread."""

    def __init__(self, *answers: InferenceResponse) -> None:
        self.answers = list(answers)
        self.asked: list[InferenceRequest] = []
        self.threads: list[bool] = []

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        self.asked.append(request)
        try:
            asyncio.get_running_loop()
            self.threads.append(False)
        except RuntimeError:
            self.threads.append(True)  # no event loop: a worker thread
        return self.answers.pop(0)


def role(
    inner: Any,
    *,
    name: RoleName = "agent",
    provider: str = "openai",
    control: Any = None,
    replay: Cassette | None = None,
    record: bool = True,
) -> RoleProvider:
    return RoleProvider(
        inner,
        role=name,
        provider_name=provider,
        control=control or Unlimited(),
        ledger=Ledger(),
        replay=replay,
        record=record,
    )


def ask(provider: RoleProvider, text: str = "hi") -> InferenceResponse:
    return asyncio.run(provider.ainfer(request(text)))


class TestNames:
    def test_a_provider_is_named_by_its_name_else_by_its_class(self) -> None:
        assert provider_name_of(AsyncOnly()) == "anthropic"
        assert provider_name_of(ScriptedLLM([], name="scripted")) == "scripted"
        assert provider_name_of(SyncOnly()) == "SyncOnly"
        nameless = AsyncOnly()
        nameless.name = ""
        assert provider_name_of(nameless) == "AsyncOnly"

    def test_the_responses_api_shares_the_openai_cap_and_others_keep_their_own(self) -> None:
        assert limit_name("openai-responses") == "openai"
        assert [limit_name(name) for name in ("openai", "anthropic", "gemini")] == [
            "openai",
            "anthropic",
            "gemini",
        ]


class TestFailures:
    @pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 529, 599])
    def test_infrastructure_statuses(self, status: int) -> None:
        assert is_infrastructure_status(status)
        assert is_infrastructure_error(ProviderError("x", status_code=status))

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 407, 410, 422, 428, 430, 499])
    def test_the_agents_statuses(self, status: int) -> None:
        assert not is_infrastructure_status(status)
        # the status decides, whatever the error says of retrying
        assert not is_infrastructure_error(ProviderError("x", status_code=status, retryable=True))

    def test_with_no_status_a_retryable_error_is_the_infrastructures(self) -> None:
        assert is_infrastructure_error(ProviderError("connection reset", retryable=True))
        assert not is_infrastructure_error(ProviderError("bad tool call", retryable=False))

    def test_an_error_that_is_no_provider_error_is_never_the_infrastructures(self) -> None:
        error = RuntimeError("boom")
        error.status_code = 503  # type: ignore[attr-defined]
        error.retryable = True  # type: ignore[attr-defined]
        assert not is_infrastructure_error(error)

    @pytest.mark.parametrize(
        ("status", "denied"), [(401, 401), (403, 403), (400, None), (404, None)]
    )
    def test_refused_credentials_are_401_and_403(self, status: int, denied: int | None) -> None:
        assert access_denied_status(ProviderError("x", status_code=status)) == denied

    def test_the_status_is_found_on_a_cause_or_a_context(self) -> None:
        def raised(make: Callable[[], None]) -> BaseException:
            try:
                make()
            except BaseException as error:
                return error
            raise AssertionError("nothing raised")

        def caused() -> None:
            try:
                raise ProviderError("denied", status_code=403)
            except ProviderError as error:
                raise RuntimeError("the SDK's error") from error

        def during() -> None:
            try:
                raise ProviderError("denied", status_code=401)
            except ProviderError:
                raise RuntimeError("while handling it") from None

        def within() -> None:
            try:
                raise ProviderError("denied", status_code=401)
            except ProviderError:
                raise RuntimeError("while handling it")  # noqa: B904

        assert access_denied_status(raised(caused)) == 403
        assert access_denied_status(raised(within)) == 401
        # `from None` keeps the context (only hides it in tracebacks): still found
        assert access_denied_status(raised(during)) == 401
        assert access_denied_status(RuntimeError("no status anywhere")) is None

    def test_the_cause_comes_before_the_context_and_the_first_status_decides(self) -> None:
        error = RuntimeError("outer")
        error.__cause__ = ProviderError("denied", status_code=401)
        error.__context__ = ProviderError("overloaded", status_code=503)
        assert access_denied_status(error) == 401
        # the outermost status found decides: a 500 raised while handling a 401 is no refusal
        server = ProviderError("server error", status_code=500)
        server.__cause__ = ProviderError("denied", status_code=401)
        assert access_denied_status(server) is None

    def test_a_status_that_is_not_a_whole_number_is_looked_past(self) -> None:
        error = RuntimeError("outer")
        error.status_code = True  # type: ignore[attr-defined]
        error.__cause__ = ProviderError("denied", status_code=403)
        assert access_denied_status(error) == 403
        text = RuntimeError("outer")
        text.status_code = "401"  # type: ignore[attr-defined]
        assert access_denied_status(text) is None

    def test_a_cycle_of_causes_ends(self) -> None:
        first, second = RuntimeError("first"), RuntimeError("second")
        first.__cause__, second.__cause__ = second, first
        assert access_denied_status(first) is None
        itself = RuntimeError("its own cause")
        itself.__cause__ = itself
        assert access_denied_status(itself) is None


class TestLedger:
    def test_a_new_ledger_has_nothing_for_each_role(self) -> None:
        ledger = Ledger()
        for name in ("agent", "user", "judge"):
            assert (ledger.usage[name], ledger.sent[name], ledger.replayed[name]) == (
                Usage(),
                0,
                0,
            )
            assert ledger.cost(name) == 0.0
        assert (ledger.infrastructure_errors, ledger.access_errors, ledger.refused) == (
            [],
            [],
            None,
        )

    def test_calls_are_charged_to_their_role_sent_or_replayed(self) -> None:
        ledger = Ledger()
        ledger.charge("agent", Usage(input_tokens=3, cost=0.5), replayed=False)
        ledger.charge("agent", Usage(output_tokens=4, cost=0.25), replayed=True)
        ledger.charge("judge", Usage(cost=0.125), replayed=False)
        assert ledger.usage["agent"] == Usage(input_tokens=3, output_tokens=4, cost=0.75)
        assert (ledger.cost("agent"), ledger.cost("judge"), ledger.cost("user")) == (
            0.75,
            0.125,
            0.0,
        )
        assert ledger.sent == {"agent": 1, "user": 0, "judge": 1}
        assert ledger.replayed == {"agent": 1, "user": 0, "judge": 0}

    def test_a_ledger_adds_another_role_by_role(self) -> None:
        total, trial = Ledger(), Ledger()
        total.charge("agent", Usage(cost=1.0), replayed=False)
        trial.charge("agent", Usage(cost=0.5), replayed=False)
        trial.charge("user", Usage(cost=0.25), replayed=True)
        trial.charge("judge", Usage(cost=0.125), replayed=False)
        trial.charge("judge", Usage(cost=0.125), replayed=True)
        total.add(trial)
        total.add(Ledger())
        assert [total.cost(name) for name in ("agent", "user", "judge")] == [1.5, 0.25, 0.25]
        assert total.sent == {"agent": 2, "user": 0, "judge": 1}
        assert total.replayed == {"agent": 0, "user": 1, "judge": 1}
        assert trial.sent == {"agent": 1, "user": 0, "judge": 1}  # the other is left as it was


class TestAsked:
    def test_an_answer_is_charged_to_the_role_and_recorded(self) -> None:
        inner = AsyncOnly(answer("first", cost=0.25), answer("second", cost=0.5))
        provider = role(inner, name="judge", provider="anthropic")
        assert ask(provider, "one").content == "first"
        assert ask(provider, "two").content == "second"
        assert [r.messages[-1].content for r in inner.asked] == ["one", "two"]
        assert provider.ledger.usage["judge"] == Usage(input_tokens=20, output_tokens=4, cost=0.75)
        assert (provider.ledger.sent["judge"], provider.ledger.replayed["judge"]) == (2, 0)
        assert provider.ledger.sent["agent"] == 0
        cassette = provider.cassette("claude-sonnet-4")
        assert (cassette.metadata.provider, cassette.metadata.model) == (
            "anthropic",
            "claude-sonnet-4",
        )
        assert [i.request for i in cassette.interactions] == [
            normalize_request(request("one")),
            normalize_request(request("two")),
        ]
        assert [i.response.content for i in cassette.interactions if i.response] == [
            "first",
            "second",
        ]
        assert role(None).cassette().metadata.model == ""

    def test_a_provider_with_only_infer_is_asked_in_a_thread(self) -> None:
        inner = SyncOnly(answer("from a thread"))
        provider = role(inner, name="user")
        assert ask(provider, "in a thread").content == "from a thread"
        assert [normalize_request(asked) for asked in inner.asked] == [
            normalize_request(request("in a thread"))
        ]
        assert inner.threads == [True]
        assert provider.ledger.sent["user"] == 1

    def test_a_scripted_model_with_both_is_asked_through_ainfer(self) -> None:
        inner = ScriptedLLM([reply("scripted")])
        assert ask(role(inner)).content == "scripted"
        assert inner.exhausted

    def test_the_call_goes_through_the_control_under_the_providers_cap_name(self) -> None:
        control = Control()
        provider = role(AsyncOnly(answer(cost=0.375)), provider="openai-responses", control=control)
        ask(provider)
        assert provider.limit_name == "openai"
        assert control.providers == ["openai"]
        assert control.costs == [0.375]  # what the answer cost, for the budget

    def test_the_traffic_control_charges_the_cost_and_counts_the_call(self) -> None:
        traffic = Traffic(ProviderLimits({"anthropic": 1}), Budget(1.0))
        provider = role(AsyncOnly(answer(cost=0.375)), provider="anthropic", control=traffic)
        ask(provider)
        assert traffic.stats()["anthropic"].cost == 0.375
        assert traffic.budget is not None
        assert traffic.budget.spent == 0.375

    def test_every_call_is_recorded_unless_asked_not_to(self) -> None:
        provider = RoleProvider(
            AsyncOnly(answer()),
            role="agent",
            provider_name="openai",
            control=Unlimited(),
            ledger=Ledger(),
        )
        ask(provider)
        assert len(provider.cassette().interactions) == 1

    def test_without_record_nothing_is_kept(self) -> None:
        provider = role(AsyncOnly(answer(), ProviderError("bad", status_code=400)), record=False)
        ask(provider)
        with pytest.raises(ProviderError):
            ask(provider)
        assert provider.interactions == []
        assert provider.ledger.sent["agent"] == 1

    def test_a_role_without_a_model_says_which(self) -> None:
        with pytest.raises(RuntimeError, match=r"^the judge has no model to ask$"):
            ask(role(None, name="judge"))

    def test_only_replays_answer_synchronously(self) -> None:
        with pytest.raises(
            RuntimeError, match=r"^a live trial's provider is asked through ainfer$"
        ):
            role(SyncOnly(answer())).infer(request())


class TestFailed:
    def test_a_failure_is_recorded_raised_and_not_charged(self) -> None:
        error = ProviderError("bad request", status_code=400)
        provider = role(AsyncOnly(error))
        with pytest.raises(ProviderError) as raised:
            ask(provider)
        assert raised.value is error
        (interaction,) = provider.interactions
        assert interaction.request == normalize_request(request())
        assert interaction.response is None
        assert interaction.error is not None
        assert (
            interaction.error.type,
            interaction.error.message,
            interaction.error.status_code,
        ) == (
            "ProviderError",
            "bad request",
            400,
        )
        ledger = provider.ledger
        assert (ledger.sent["agent"], ledger.cost("agent")) == (0, 0.0)
        assert (ledger.infrastructure_errors, ledger.access_errors) == ([], [])

    @pytest.mark.parametrize(
        "error",
        [ProviderError("overloaded", status_code=529), ProviderError("reset", retryable=True)],
    )
    def test_the_infrastructures_failure_is_noted_as_such(self, error: ProviderError) -> None:
        provider = role(AsyncOnly(error))
        with pytest.raises(ProviderError):
            ask(provider)
        assert provider.ledger.infrastructure_errors == [error]
        assert provider.ledger.access_errors == []

    def test_refused_credentials_are_noted_as_such(self) -> None:
        error = ProviderError("invalid api key", status_code=401)
        provider = role(AsyncOnly(error))
        with pytest.raises(ProviderError):
            ask(provider)
        assert provider.ledger.access_errors == [error]
        assert provider.ledger.infrastructure_errors == []

    def test_a_budget_refusal_is_noted_and_raised(self) -> None:
        provider = role(AsyncOnly(answer()), control=Refusing())
        with pytest.raises(BudgetExhausted) as raised:
            ask(provider)
        assert provider.ledger.refused is raised.value
        assert provider.interactions == []
        assert provider.ledger.sent["agent"] == 0

    def test_another_error_passes_through_unnoted(self) -> None:
        provider = role(AsyncOnly(ValueError("a bug")))
        with pytest.raises(ValueError, match="a bug"):
            ask(provider)
        assert provider.interactions == []
        ledger = provider.ledger
        assert (ledger.infrastructure_errors, ledger.access_errors, ledger.refused) == (
            [],
            [],
            None,
        )


class TestReplayed:
    def recorded(self) -> Cassette:
        provider = role(AsyncOnly(answer("one", cost=0.25), answer("two", cost=0.5)))
        ask(provider, "first")
        ask(provider, "second")
        return provider.cassette()

    def test_a_recorded_trial_is_replayed_without_its_model(self) -> None:
        control = Control()
        provider = role(None, name="user", control=control, replay=self.recorded())
        assert ask(provider, "first").content == "one"
        assert provider.infer(request("second")).content == "two"
        assert control.providers == []  # nothing passed the traffic control
        ledger = provider.ledger
        assert (ledger.replayed["user"], ledger.sent["user"], ledger.cost("user")) == (2, 0, 0.75)
        assert provider.interactions == []  # a replay records nothing again

    def test_a_request_the_recording_does_not_have_names_the_roles_cassette(self) -> None:
        provider = role(None, name="user", replay=self.recorded())
        with pytest.raises(CassetteMismatchError) as raised:
            ask(provider, "something else")
        assert str(raised.value).startswith(
            "cassette <user>: request 1 does not match the next recorded interaction (1 of 2)"
        )
        assert provider.ledger.replayed["user"] == 0

    def test_a_replayed_failure_is_raised_again(self) -> None:
        provider = role(AsyncOnly(ProviderError("bad", status_code=400)))
        with pytest.raises(ProviderError):
            ask(provider)
        again = role(None, replay=provider.cassette())
        with pytest.raises(ProviderError, match="bad"):
            ask(again)
