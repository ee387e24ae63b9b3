"""The ``agentrig_fuzz`` fixture, and a hand-written ``@given`` test over a ``Fuzzer``, as a
user's test file uses them."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # each test runs pytest and fuzzes: seconds each

AGENT = """
import openai
from hypothesis import given, settings, strategies as st

from agentrig.harness.fuzz import Behaviours, Fuzzer


def agent(ep, prompt):
    with openai.OpenAI(api_key=ep.api_key, base_url=ep.openai_base_url,
                       http_client=ep.httpx2_client(), max_retries=0) as client:
        message = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": prompt}]).choices[0].message
    return ANSWER

BEHAVIOURS = Behaviours(replies={"text", "refusal"}, faults=())
"""

WITH_THE_FIXTURE = """
def test_agent(agentrig_fuzz):
    agentrig_fuzz(agent, "Hi", behaviours=BEHAVIOURS, max_examples=30,
                  settings=settings(database=None, derandomize=True))
"""

WITH_GIVEN = """
@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory):
    with Fuzzer(agent, "Hi", behaviours=BEHAVIOURS,
                folder=tmp_path_factory.mktemp("fuzz")) as made:
        yield made


@settings(max_examples=30, database=None, derandomize=True)
@given(data=st.data())
def test_agent(fuzzer, data):
    fuzzer.check(data.draw(fuzzer.scripts()))
"""


def _file(answer: str, body: str) -> str:
    return "import pytest\n" + AGENT.replace("ANSWER", answer) + body


def test_a_failure_names_the_scenario_file_and_the_command_that_replays_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_agent=_file("message.content.upper()", WITH_THE_FIXTURE))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*agentrig fuzz: a generated script breaks the agent (example *",
            "*raises_only: the agent raised builtins.AttributeError: 'NoneType' object has no "
            "attribute 'upper'*",
            "*Written to */.agentrig/fuzz/fuzz-test_agent-agent.scenario.yaml; replay it with:",
            "*agentrig fuzz --replay */.agentrig/fuzz/fuzz-test_agent-agent.scenario.yaml",
        ]
    )


def test_a_correct_agent_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=_file("message.content or message.refusal", WITH_THE_FIXTURE))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_given_test_over_a_fuzzer_shrinks_and_reports_the_same(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_agent=_file("message.content.upper()", WITH_GIVEN))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FuzzFailure: agentrig fuzz: a generated script breaks*"])
