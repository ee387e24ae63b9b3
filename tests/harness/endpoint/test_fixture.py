"""The ``agentrig_endpoint`` pytest fixture, as a user's test file uses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import WEATHER

pytest.importorskip("openai")

TEST_FILE = """
import openai

def agent(client):
    messages = [{"role": "system", "content": "You answer weather questions."},
                {"role": "user", "content": "Weather in Paris?"}]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    while True:
        message = client.chat.completions.create(
            model=MODEL, messages=messages, tools=tools).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})

def test_in_process(agentrig_endpoint):
    ep = agentrig_endpoint("weather.scenario.yaml")
    with openai.OpenAI(api_key=ep.api_key, base_url=ep.openai_base_url,
                       http_client=ep.httpx2_client()) as client:
        assert "sunny" in agent(client)

def test_live(agentrig_endpoint):
    ep = agentrig_endpoint("weather.scenario.yaml", live=True)
    with openai.OpenAI(api_key=ep.api_key, base_url=ep.openai_base_url) as client:
        assert "sunny" in agent(client)

def test_intercepted(agentrig_endpoint, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    ep = agentrig_endpoint("weather.scenario.yaml")
    with ep.intercept():
        assert "sunny" in agent(openai.OpenAI())
"""

HTTP_AGENT = """
import json
import urllib.request

def agent(ep):
    messages = [{"role": "system", "content": "You answer weather questions."},
                {"role": "user", "content": "Weather in Paris?"}]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    while True:
        body = {"model": "gpt-test", "messages": messages, "tools": tools}
        request = urllib.request.Request(
            ep.openai_base_url + "/chat/completions", data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {ep.api_key}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            message = json.load(response)["choices"][0]["message"]
        messages.append({key: value for key, value in message.items() if value is not None})
        if not message.get("tool_calls"):
            return message["content"]
        for call in message["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "sunny"})
"""
"""The agent of ``TEST_FILE`` over the standard library's HTTP client (``agent(ep)``)."""


def test_a_passing_agent_passes_in_process_live_and_intercepted(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".scenario.yaml", weather=WEATHER)
    pytester.makepyfile(test_agent=TEST_FILE.replace("MODEL", '"gpt-test"'))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_a_broken_agent_fails_with_the_domain_diff(pytester: pytest.Pytester) -> None:
    pytester.makefile(".scenario.yaml", weather=WEATHER)
    pytester.makepyfile(test_agent=TEST_FILE.replace("MODEL", '"gpt-wrong"'))
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "in_process")
    result.assert_outcomes(failed=1)  # a failure of the test, not an error at its teardown
    result.stdout.fnmatch_lines(
        [
            "*scenario weather [[]weather/*[]] (*weather.scenario.yaml:1) failed:*",
            "*[[]invariant: model_named[]] requests 1 and 2: model_named: the request asks for model "
            "'gpt-wrong'*",
            "*at *weather.scenario.yaml:4*",
            '*expected: "gpt-test"*',
            '*observed: "gpt-wrong"*',
        ]
    )


def test_an_agent_that_never_calls_fails_with_the_unused_script(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makefile(".scenario.yaml", weather=WEATHER)
    pytester.makepyfile(
        test_agent="def test_idle(agentrig_endpoint):\n"
        "    agentrig_endpoint('weather.scenario.yaml')\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*turn 1 was never reached: no request carried its user message*"])


@pytest.mark.slow
def test_concurrent_sessions_under_xdist(
    pytester: pytest.Pytester, other_plugins_off: tuple[str, ...]
) -> None:
    """Six live sessions on two workers, each agent speaking the OpenAI wire format over HTTP
    with the standard library: the SDK's path is the other tests' (each worker imported it
    only to send these requests, 0.5 CPU s)."""
    pytester.makefile(".scenario.yaml", weather=WEATHER)
    tests = "".join(
        f"def test_{n}(agentrig_endpoint):\n"
        "    ep = agentrig_endpoint('weather.scenario.yaml', live=True)\n"
        "    assert 'sunny' in agent(ep)\n\n"
        for n in range(6)
    )
    pytester.makepyfile(test_agent=HTTP_AGENT + tests)
    result = pytester.runpytest("-p", "no:cacheprovider", "-n", "2", *other_plugins_off)
    result.assert_outcomes(passed=6)


def test_a_scenario_the_endpoint_cannot_serve_fails_the_test_without_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".scenario.yaml",
        status="name: status\nturns:\n  - user: hi\n    model: [{say: hello}]\n"
        "    expect: {status: completed}\n",
    )
    pytester.makepyfile(
        test_agent="""
def test_mistyped_path(agentrig_endpoint):
    agentrig_endpoint("scenarioz/weather.scenario.yaml")

def test_refused(agentrig_endpoint):
    agentrig_endpoint("status.scenario.yaml")
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    output = result.stdout.str()
    assert "scenarioz/weather.scenario.yaml: cannot read the file" in output
    assert "status.scenario.yaml:5:" in output
    assert "expect.status needs agentrig's own state" in output
    assert "handle.py" not in output  # no traceback into the endpoint
    assert "load_scenario" not in output


MIXTURE = """\
name: flaky
turns:
  - user: Weather in Paris?
    mixture:
      - {weight: 1, label: right, model: [{say: It is sunny in Paris.}]}
      - {weight: 1, label: wrong, model: [{say: It is raining.}]}
    expect:
      final_response: {contains: sunny}
"""

MIXTURE_TESTS = """
import openai

def ask(ep):
    client = openai.OpenAI(api_key=ep.api_key, base_url=ep.openai_base_url,
                           http_client=ep.httpx2_client())
    return client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Weather in Paris?"}]
    ).choices[0].message.content

def test_right(agentrig_endpoint):
    assert "sunny" in ask(agentrig_endpoint("flaky.scenario.yaml", key=RIGHT))

def test_wrong(agentrig_endpoint):
    assert "raining" in ask(agentrig_endpoint("flaky.scenario.yaml", key=WRONG))

def test_default(agentrig_endpoint):
    ep = agentrig_endpoint("flaky.scenario.yaml")
    assert ep.api_key == "flaky"
    assert ask(ep) == ask_again()

def ask_again():
    from agentrig.harness.endpoint.handle import EndpointHandle
    return ask(EndpointHandle("flaky.scenario.yaml"))
"""


def test_the_fixture_plays_the_mixture_branch_of_the_key_it_is_given(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    from agentrig.harness.scenarios.loader import load_scenario

    path = tmp_path / "flaky.scenario.yaml"
    path.write_text(MIXTURE, encoding="utf-8")
    scenario = load_scenario(path)
    keys = [f"flaky/trial-{n}" for n in range(1, 50)]
    right = next(key for key in keys if scenario.branch_for(1, key) == 0)
    wrong = next(key for key in keys if scenario.branch_for(1, key) == 1)
    default_passes = scenario.branch_for(1, "flaky") == 0
    pytester.makefile(".scenario.yaml", flaky=MIXTURE)
    tests = MIXTURE_TESTS.replace("RIGHT", repr(right)).replace("WRONG", repr(wrong))
    pytester.makepyfile(test_agent=tests)
    result = pytester.runpytest("-p", "no:cacheprovider")
    # the wrong branch fails its session's expectation, and so may the default's
    result.assert_outcomes(passed=2 if default_passes else 1, failed=1 if default_passes else 2)
    result.stdout.fnmatch_lines(["*FAILED test_agent.py::test_wrong*"])


ONCE_TESTS = """
import openai
import pytest
from agentrig.harness.endpoint.handle import EndpointCheckFailed

def ask(ep, model="gpt-test"):
    client = openai.OpenAI(api_key=ep.api_key, base_url=ep.openai_base_url,
                           http_client=ep.httpx2_client())
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hi"}]
    ).choices[0].message.content

def test_checked_in_the_body(agentrig_endpoint):
    ep = agentrig_endpoint("hello.scenario.yaml")
    ask(ep, model="gpt-wrong")
    ep.check()

def test_caught_in_the_body(agentrig_endpoint):
    ep = agentrig_endpoint("hello.scenario.yaml")
    ask(ep, model="gpt-wrong")
    with pytest.raises(EndpointCheckFailed, match="model_named"):
        ep.check()

def test_failing_assertion(agentrig_endpoint):
    ep = agentrig_endpoint("hello.scenario.yaml")
    assert ask(ep, model="gpt-wrong") == "Bye"

def test_unchecked_1(agentrig_endpoint):
    ask(agentrig_endpoint("hello.scenario.yaml"), model="gpt-wrong")

def test_unchecked_2(agentrig_endpoint):
    ask(agentrig_endpoint("hello.scenario.yaml"), model="gpt-wrong")

def test_passes(agentrig_endpoint):
    assert ask(agentrig_endpoint("hello.scenario.yaml")) == "Hello"

def test_skipped(agentrig_endpoint):
    agentrig_endpoint("hello.scenario.yaml")
    pytest.skip("not today")
"""

HELLO = """\
name: hello
agent: {model: gpt-test}
turns:
  - user: Hi
    model: [{say: Hello}]
"""


def test_a_failing_session_is_one_failure_never_a_teardown_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".scenario.yaml", hello=HELLO)
    pytester.makepyfile(test_agent=ONCE_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=4, skipped=1)  # no errors
    output = result.stdout.str()
    assert "ERROR at teardown" not in output
    # each failing test shows the diff once: checked in the body, or found when the body ended
    # (counted above the short summary, which repeats each message in full where CI is set)
    details = output.split("short test summary info")[0]
    assert details.count("the request asks for model 'gpt-wrong'") == 4
    # a test whose own assertion failed shows what the endpoint found first, then the assertion
    section = output.split("test_failing_assertion ___")[1].split("___ test_")[0]
    assert section.index("model_named") < section.index("The test then failed with:")
    assert section.index("The test then failed with:") < section.index("assert 'Hello' == 'Bye'")
