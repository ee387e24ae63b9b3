"""``mixture:``: each session (API key) plays one weighted branch of a turn, drawn from a hash of
the scenario, the key, the turn and the seed, so a simulated model has a known success rate."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest

from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.endpoint.service import ScenarioEndpoint
from agentrig.harness.results import SuiteResult
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.mixture import mixture_draw, pick_branch

openai = pytest.importorskip("openai")

FLAKY = """\
name: flaky-weather
agent: {system_prompt: You answer weather questions.}
turns:
  - user: Weather in Paris?
    mixture:
      - weight: 0.7
        label: right
        model:
          - call: get_weather(city=Paris)
          - say: It is sunny in Paris.
      - weight: 0.2
        label: wrong-city
        model:
          - call: get_weather(city=Rome)
          - say: It is sunny in Rome.
      - weight: 0.1
        model:
          - say: I cannot know the weather.
    expect:
      final_response: {contains: Paris}
"""
BRANCH_NAMES = ("right", "wrong-city", "branch 3")
WEIGHTS = (0.7, 0.2, 0.1)
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _agent(client: object, question: str = "Weather in Paris?", says: str = "sunny") -> str:
    """A plain Chat Completions tool loop; the tool ``says`` it is sunny wherever asked."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": question},
    ]
    while True:
        message = (
            client.chat.completions.create(  # type: ignore[attr-defined]
                model="gpt-test", messages=messages, tools=[WEATHER_TOOL]
            )
            .choices[0]
            .message
        )
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return str(message.content)
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": says})


def _client(handle: EndpointHandle, key: str) -> object:
    return openai.OpenAI(
        api_key=key,
        base_url=handle.openai_base_url,
        http_client=handle.httpx2_client(),
        max_retries=0,
    )


def test_each_key_plays_its_branch_and_the_result_names_it(
    write_scenario: Callable[[str], Path],
) -> None:
    handle = EndpointHandle(write_scenario(FLAKY))
    keys = [f"flaky-weather/trial-{n}" for n in range(1, 13)]
    answers = {key: _agent(_client(handle, key)) for key in keys}
    results = {key: handle.endpoint.session(key).result() for key in keys}
    texts = {
        "right": "It is sunny in Paris.",
        "wrong-city": "It is sunny in Rome.",
        "branch 3": "I cannot know the weather.",
    }
    for key in keys:
        expected = pick_branch(WEIGHTS, mixture_draw("flaky-weather", key, 1, None))
        name = BRANCH_NAMES[expected]
        result = results[key]
        assert result.turns[0].branch == name
        assert answers[key] == texts[name]
        assert result.passed == (name == "right")
        event = result.transcript[0]
        assert (event.kind, event.name) == ("event", name)
        assert event.text.startswith(f"mixture: plays {name} (branch {expected + 1} of 3, share")
    assert len({results[key].turns[0].branch for key in keys}) > 1


def test_the_same_key_plays_the_same_branch_in_another_endpoint(tmp_path: Path) -> None:
    path = tmp_path / "flaky.scenario.yaml"
    path.write_text(FLAKY, encoding="utf-8")
    keys = [f"agent/trial-{n}" for n in range(1, 31)]

    def branches() -> list[str | None]:
        handle = EndpointHandle(path)
        played = []
        for key in keys:
            _agent(_client(handle, key))
            played.append(handle.endpoint.session(key).result().turns[0].branch)
        return played

    first = branches()
    assert branches() == first
    assert set(first) == set(BRANCH_NAMES)


def test_a_failing_branch_fails_at_its_own_lines(write_scenario: Callable[[str], Path]) -> None:
    handle = EndpointHandle(write_scenario(FLAKY))
    scenario = handle.scenario
    key = next(
        f"agent/trial-{n}" for n in range(1, 200) if scenario.branch_for(1, f"agent/trial-{n}") == 1
    )
    client = _client(handle, key)
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    client.chat.completions.create(model="gpt-test", messages=messages, tools=[WEATHER_TOOL])  # type: ignore[attr-defined]
    result = handle.endpoint.session(key).result()
    assert scenario.source is not None
    unused = [f for f in result.failures if f.kind == "script"]
    assert [(f.message, f.location) for f in unused] == [
        ("turn 1: scripted model reply 2 was never used", f"{scenario.source.path}:15")
    ]
    assert [f.field for f in result.failures if f.kind == "expectation"] == [
        "expect.final_response"
    ]


def test_the_branch_is_in_the_report_only_for_a_mixture_turn(
    write_scenario: Callable[[str], Path],
) -> None:
    text = FLAKY + "  - user: Thanks.\n    model: [{say: You are welcome.}]\n"
    handle = EndpointHandle(write_scenario(text))
    _agent(_client(handle, handle.api_key))
    result = handle.result()
    report = SuiteResult(scenarios=(result,), wall_time_s=0.0).to_dict()
    turns = report["scenarios"][0]["turns"]
    assert turns[0]["branch"] == result.turns[0].branch in BRANCH_NAMES
    assert "branch" not in turns[1]
    assert SuiteResult.from_dict(json.loads(json.dumps(report))).scenarios[0] == result


# --- the share of sessions converges to the weights ------------------------------------------


def _binomial_bounds(n: int, p: float, alpha: float) -> tuple[int, int]:
    """The central interval a Binomial(n, p) count leaves with probability at most ``alpha``
    (``alpha / 2`` on each side), from its exact distribution."""

    def pmf(k: int) -> float:
        log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        return math.exp(log + k * math.log(p) + (n - k) * math.log1p(-p))

    masses = [pmf(k) for k in range(n + 1)]
    low, below = 0, 0.0
    while below + masses[low] <= alpha / 2:
        below += masses[low]
        low += 1
    high, above = n, 0.0
    while above + masses[high] <= alpha / 2:
        above += masses[high]
        high -= 1
    return low, high


def _chat_body(messages: list[dict[str, object]]) -> bytes:
    return json.dumps({"model": "gpt-test", "messages": messages, "tools": [WEATHER_TOOL]}).encode()


@pytest.mark.slow
def test_over_many_sessions_each_branch_plays_in_its_weights_share(tmp_path: Path) -> None:
    path = tmp_path / "flaky.scenario.yaml"
    path.write_text(FLAKY, encoding="utf-8")
    endpoint = ScenarioEndpoint([load_scenario(path)])
    sessions = 1000
    played: Counter[str | None] = Counter()
    passed = 0
    for n in range(1, sessions + 1):
        headers = {"authorization": f"Bearer agent/trial-{n}"}
        messages: list[dict[str, object]] = [
            {"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "Weather in Paris?"},
        ]
        while True:  # the agent loop, on the raw wire
            reply = endpoint.handle("POST", "/v1/chat/completions", headers, _chat_body(messages))
            message = json.loads(reply.body)["choices"][0]["message"]
            messages.append(
                {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
            )
            if not message.get("tool_calls"):
                break
            for call in message["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "sunny"})
        result = endpoint.session(f"agent/trial-{n}").result()
        played[result.turns[0].branch] += 1
        passed += result.passed
    # 99.9% overall: each of the three branches' counts (and the pass count) gets 0.1% / 4
    alpha = 0.001 / 4
    for name, weight in zip(BRANCH_NAMES, WEIGHTS, strict=True):
        low, high = _binomial_bounds(sessions, weight, alpha)
        assert low <= played[name] <= high, (name, played[name], (low, high))
    low, high = _binomial_bounds(sessions, WEIGHTS[0], alpha)
    assert low <= passed <= high  # the known success rate: the share of the passing branch
    assert passed == played["right"]


@pytest.mark.parametrize(
    ("n", "p", "alpha"), [(1000, 0.7, 0.001), (1000, 0.1, 0.00025), (40, 0.5, 0.1)]
)
def test_the_binomial_bounds_are_the_tightest_that_keep_the_stated_mass(
    n: int, p: float, alpha: float
) -> None:
    low, high = _binomial_bounds(n, p, alpha)
    # exact integer arithmetic, an oracle independent of the floats: p = a / d
    a, d = Fraction(str(p)).as_integer_ratio()
    terms = [math.comb(n, j) * a**j * (d - a) ** (n - j) for j in range(n + 1)]
    total = d**n
    cumulative = [0]
    for term in terms:
        cumulative.append(cumulative[-1] + term)

    def below(k: int) -> Fraction:  # P(X < k)
        return Fraction(cumulative[k], total)

    half = Fraction(str(alpha)) / 2
    assert below(low) <= half < below(low + 1)
    assert 1 - below(high + 1) <= half < 1 - below(high)


def test_every_session_of_the_bundled_flaky_weather_passes_whichever_branch_it_plays() -> None:
    path = Path(__file__).parents[3] / "scenarios" / "endpoint" / "flaky_weather.scenario.yaml"
    handle = EndpointHandle(path)
    keys = [f"endpoint-flaky-weather/trial-{n}" for n in range(1, 41)]
    for key in keys:
        _agent(_client(handle, key), handle.scenario.turns[0].user, "It is sunny in Paris.")
    results = [handle.endpoint.session(key).result() for key in keys]
    assert all(result.passed for result in results), [r.failures for r in results]
    assert {result.turns[0].branch for result in results} == {"direct", "looks-it-up"}
