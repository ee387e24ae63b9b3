"""Snapshot text of states and transcripts, the syrupy extension and fixture, and the examples
of docs/snapshots.md (executed here, their output compared with the text the page shows)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from agentrig import (
    AgentBuilder,
    AgentLoop,
    AgentState,
    AgentStop,
    ExecutionBudget,
    InvalidInputError,
    UseGuards,
    UseLlmConfig,
    runtime_context,
    tool,
)
from agentrig.fakes import FakeClock, ScriptedLLM, SeededIds, Turn, calls, reply
from agentrig.harness.results import SuiteResult, TranscriptEntry
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.snapshot import (
    SNAPSHOT_FORMAT_VERSION,
    AgentrigSnapshotExtension,
    state_to_text,
    to_snapshot_text,
    transcript_to_text,
)
from agentrig.harness.suites.suite import run_suite

DOCS = Path(__file__).parents[2] / "docs"

SCENARIO = """\
name: weather-two-cities
agent:
  system_prompt: You answer weather questions.
  budget: {max_steps: 6}
  tools:
    get_weather:
      params: {city: string}
      replies:
        - when: {city: Paris}
          return: sunny, 21C
        - when: {city: Oslo}
          raise: service unavailable
turns:
  - user: Weather in Paris and Oslo?
    model:
      - call: get_weather(city=Paris)
        usage: {input: 40, output: 8}
        latency: 0.5
      - call: get_weather(city=Oslo)
      - say: "Paris is sunny; Oslo's service is down."
  - user: And tomorrow?
    model:
      - say: I cannot tell.
        cost: 0.002
"""


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    if city == "Oslo":
        raise RuntimeError("service unavailable")
    return {"Paris": "sunny, 21C"}.get(city, "unknown")


def weather_agent(script: list[Turn], *, inline: bool = False) -> tuple[AgentLoop, AgentState]:
    clock, ids = FakeClock(), SeededIds(0)
    agent = (
        AgentBuilder.base()
        .with_clock(clock)
        .with_ids(ids)
        .with_capability(UseLlmConfig(ScriptedLLM(script, clock=clock)))
        .with_capability(UseGuards(ExecutionBudget(max_steps=4)))
        .with_tools([get_weather])
        .with_separated_tool_trace(not inline)
        .build()
    )
    with runtime_context(clock=clock, ids=ids):
        return agent, AgentState().with_system_prompt("Be brief.").with_user_message("Weather?")


SCRIPT = [
    calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"}), text="Checking."),
    Turn(text="Paris is sunny.\nOslo is down.", latency=1.25),
]


def scenario_result(tmp_path: Path) -> object:
    path = tmp_path / "weather.scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return run_scenario(load_scenario(path))


# --- snapshots kept in __snapshots__/ ---------------------------------------------------------


def test_a_scenario_transcript(tmp_path: Path, agentrig_snapshot: object) -> None:
    assert scenario_result(tmp_path) == agentrig_snapshot


def test_an_agent_state_in_separated_mode(agentrig_snapshot: object) -> None:
    agent, state = weather_agent(SCRIPT)
    assert agent.execute(state) == agentrig_snapshot


def test_an_agent_state_in_inline_mode_mid_execution(agentrig_snapshot: object) -> None:
    agent, state = weather_agent(SCRIPT, inline=True)
    first_step = next(iter(agent.iterate(state)))
    assert first_step == agentrig_snapshot


# --- the text form ----------------------------------------------------------------------------


class TestText:
    def test_calls_cut_short_by_agent_stop_read_stopped(self) -> None:
        @tool
        def escalate() -> str:
            """Hand over to a human."""
            raise AgentStop("human needed")

        clock, ids = FakeClock(), SeededIds(0)
        agent = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(ids)
            .with_capability(
                UseLlmConfig(
                    ScriptedLLM([calls(("escalate", {}), ("get_weather", {"city": "Oslo"}))])
                )
            )
            .with_tools([escalate, get_weather])
            .build()
        )
        with runtime_context(clock=clock, ids=ids):
            state = AgentState().with_user_message("Refund?")
        calls_text = [
            line for line in state_to_text(agent.execute(state)).splitlines() if "call 1." in line
        ]
        assert [line.split(" | ")[2] for line in calls_text] == ["stopped", "stopped"]

    def test_a_state_is_one_line_per_message_step_and_call(self) -> None:
        agent, state = weather_agent(SCRIPT)
        lines = state_to_text(agent.execute(state)).splitlines()
        assert lines[0] == f"# agentrig state v{SNAPSHOT_FORMAT_VERSION}"
        assert [line.split(" |")[0] for line in lines[1:]] == [
            "agent e3e70682",
            "execution eb1167b3",
            "section messages",
            "  user",
            "  assistant",
            "section execution_buffer",
            "step 1",
            "  call 1.1",
            "  call 1.2",
            "step 2",
            "signal",
        ]
        assert '  assistant | step 2 | "Paris is sunny.\\nOslo is down."' in lines

    def test_a_state_renders_the_same_in_another_process(self, tmp_path: Path) -> None:
        code = dedent(
            """
            import sys
            sys.path.insert(0, sys.argv[1])
            from test_snapshot import SCRIPT, state_to_text, weather_agent
            agent, state = weather_agent(SCRIPT)
            sys.stdout.write(state_to_text(agent.execute(state)))
            """
        )
        agent, state = weather_agent(SCRIPT)
        here = str(Path(__file__).parent)
        env = {**os.environ, "PYTHONHASHSEED": "12345"}
        other = subprocess.run(
            [sys.executable, "-c", code, here], capture_output=True, text=True, env=env, check=True
        )
        assert other.stdout == state_to_text(agent.execute(state))

    def test_a_transcript_lists_entries_outcomes_and_failures(self, tmp_path: Path) -> None:
        broken = SCENARIO.replace(
            "  - user: And tomorrow?", "  - user: And tomorrow?\n    expect: {steps: 5}"
        )
        path = tmp_path / "broken.scenario.yaml"
        path.write_text(broken, encoding="utf-8")
        text = transcript_to_text(run_scenario(load_scenario(path)))
        # The scenario's verdict and the agent's end state are told apart: here the agent
        # completed its turn, and the scenario failed.
        assert text.splitlines()[1] == "scenario weather-two-cities | verdict FAIL"
        assert (
            "turn 2 | agent ended | status completed | stop completed | steps 1 | tokens 0 | "
            "cost 0.002" in text
        )
        assert 'turn 2 | stop | "agent status completed, stop reason completed"' in text
        assert re.search(
            r"^failure \| expectation \| turn 2, at .*broken\.scenario\.yaml:\d+ \| ", text, re.M
        )

    def test_a_suite_is_its_scenarios_in_order(self, tmp_path: Path) -> None:
        path = tmp_path / "weather.scenario.yaml"
        path.write_text(SCENARIO, encoding="utf-8")
        suite = run_suite([load_scenario(path)])
        assert isinstance(suite, SuiteResult)
        assert to_snapshot_text(suite) == to_snapshot_text(suite.scenarios[0])

    def test_transcript_entries_alone(self) -> None:
        entries = [TranscriptEntry(turn=1, step=None, kind="user", role="user", text="hi")]
        assert to_snapshot_text(entries) == '# agentrig transcript v2\nturn 1 | user | "hi"\n'

    def test_text_is_kept_with_a_final_newline(self) -> None:
        assert to_snapshot_text("already text") == "already text\n"

    def test_anything_else_is_refused(self) -> None:
        with pytest.raises(InvalidInputError, match="expected AgentState, ScenarioResult"):
            to_snapshot_text({"status": "completed"})


class TestExtension:
    def test_stores_agentrig_text_files(self) -> None:
        extension = AgentrigSnapshotExtension()
        assert extension.file_extension == "agentrig.txt"
        agent, state = weather_agent([reply("hi")])
        final = agent.execute(state)
        assert extension.serialize(final) == state_to_text(final)

    def test_property_filters_are_refused(self) -> None:
        with pytest.raises(InvalidInputError, match="exclude/include filters do not apply"):
            AgentrigSnapshotExtension().serialize("x", exclude=lambda **_: True)

    def test_a_matcher_is_refused_not_ignored(self) -> None:
        with pytest.raises(InvalidInputError, match="matchers do not apply"):
            AgentrigSnapshotExtension().serialize("x", matcher=lambda data, path: data)

    def test_the_fixture_refuses_a_matcher_and_takes_none(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(
            test_matcher="""
            def test_plain(agentrig_snapshot):
                assert "x" == agentrig_snapshot

            def test_matcher(agentrig_snapshot):
                assert "x" == agentrig_snapshot(matcher=lambda data, path: data)
            """
        )
        result = pytester.runpytest("--snapshot-update")
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(["*matchers do not apply to agentrig text snapshots*"])


class TestAwkwardText:
    def test_every_entry_stays_on_one_line_and_the_text_is_utf8(self) -> None:
        awkward = "a\u2028b\u2029c\x85d\ud800e é 🎉"
        agent, state = weather_agent([reply(awkward)])
        text = state_to_text(agent.execute(state))
        text.encode("utf-8")
        assert text.splitlines() == text.split("\n")[:-1]
        assert '"a\\u2028b\\u2029c\\u0085d\\ud800e é 🎉"' in text

    def test_long_and_tiny_times_keep_every_digit(self) -> None:
        agent, state = weather_agent([Turn(text="late", latency=123456.7)])
        lines = state_to_text(agent.execute(state)).splitlines()
        assert "step 1 | final_response | +0s..+123456.7s" in "\n".join(lines)
        agent, state = weather_agent([Turn(text="soon", latency=0.000004)])
        assert "+0s..+0.000004s" in state_to_text(agent.execute(state))


# --- docs/snapshots.md ------------------------------------------------------------------------


def blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page, re.DOTALL)


def test_the_documented_examples_run_and_store_what_the_page_shows(
    pytester: pytest.Pytester,
) -> None:
    page = (DOCS / "snapshots.md").read_text(encoding="utf-8")
    examples, shown = blocks(page, "python"), blocks(page, "text")
    assert len(examples) == len(shown) == 2
    for number, example in enumerate(examples):
        pytester.makepyfile(**{f"test_example_{number}": example})
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=2)
    stored = sorted((pytester.path / "__snapshots__").rglob("*.agentrig.txt"))
    assert [p.read_text(encoding="utf-8") for p in stored] == shown
    pytester.runpytest().assert_outcomes(passed=2)
    stored[0].write_text(shown[0].replace("Paris is sunny.", "Paris is rainy."), encoding="utf-8")
    changed = pytester.runpytest()
    changed.assert_outcomes(passed=1, failed=1)
    changed.stdout.fnmatch_lines(["*Paris is rainy.*", "*Paris is sunny.*"])


def test_the_snapshot_fixture_without_syrupy_fails_saying_what_to_install(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import sys

        import pytest

        @pytest.fixture(autouse=True)
        def without_syrupy(monkeypatch):
            monkeypatch.setitem(sys.modules, "syrupy", None)
        """
    )
    pytester.makepyfile("def test_it(agentrig_snapshot):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert (
        "syrupy is not installed: pip install 'syrupy', or agentrig with its extra: "
        "pip install './agentrig[syrupy]'"
    ) in output
    assert "MissingDependencyError" not in output  # a message, not a traceback
