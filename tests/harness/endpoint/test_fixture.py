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
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*scenario weather (*weather.scenario.yaml:1) failed:*",
            "*[[]invariant: model_named[]] request 1: model_named: the request asks for model "
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
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*turn 1 was never reached: no request carried its user message*"])


def test_concurrent_sessions_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makefile(".scenario.yaml", weather=WEATHER)
    body = TEST_FILE.replace("MODEL", '"gpt-test"').split("def test_in_process")[0]
    tests = "".join(
        f"def test_{n}(agentrig_endpoint):\n"
        "    ep = agentrig_endpoint('weather.scenario.yaml', live=True)\n"
        "    client = openai.OpenAI(api_key=ep.api_key, base_url=ep.openai_base_url)\n"
        "    assert 'sunny' in agent(client)\n\n"
        for n in range(6)
    )
    pytester.makepyfile(test_agent=body + tests)
    result = pytester.runpytest("-p", "no:cacheprovider", "-n", "2")
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
