"""The pytest plugin: scenario collection, domain diffs, options and fixtures (via pytester)."""

from __future__ import annotations

import gc
from textwrap import dedent

import pytest

PASSING = """\
name: {name}
tags: [smoke]
turns:
  - user: hi
    model:
      - say: hello
    expect:
      status: completed
      final_response: {answer}
"""


def add_scenario(pytester: pytest.Pytester, path: str, name: str, answer: str = "hello") -> None:
    target = pytester.path / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(PASSING.format(name=name, answer=answer), encoding="utf-8")


def test_scenarios_are_not_collected_unless_asked(pytester: pytest.Pytester) -> None:
    add_scenario(pytester, "scenarios/a.scenario.yaml", "a")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


FROZEN_IN_A_TEST = """\
import gc

def test_frozen():
    print("frozen while the tests run:", gc.get_freeze_count() > 0)
"""


def count_as_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any collection counts as large (``many_young_objects``): what a collection of about 300
    scenario files does, on one file."""
    monkeypatch.setattr("agentrig.harness.scenarios.loader.MANY_YOUNG_OBJECTS", 0)


@pytest.mark.parametrize(("large", "frozen"), [(True, "True"), (False, "False")])
def test_collected_scenarios_are_frozen_from_the_collector_and_thawed_at_the_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, large: bool, frozen: str
) -> None:
    # A small collection is left to the collector: freezing saves little there.
    if large:
        count_as_large(monkeypatch)
    add_scenario(pytester, "scenarios/a.scenario.yaml", "a")
    pytester.makepyfile(test_frozen=FROZEN_IN_A_TEST)
    gc.unfreeze()  # as in a plain `pytest` process, where nothing was frozen before
    try:
        result = pytester.runpytest("--agentrig-scenarios", "-s")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines([f"*frozen while the tests run: {frozen}*"])
        assert gc.get_freeze_count() == 0
    finally:
        gc.freeze()


def test_a_nested_session_leaves_what_its_host_froze_frozen(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A host process (this suite, a notebook) froze its long-lived objects; a pytest run inside
    # it that thawed them would make every later collection walk them again.
    count_as_large(monkeypatch)
    add_scenario(pytester, "scenarios/a.scenario.yaml", "a")
    gc.freeze()
    frozen = gc.get_freeze_count()
    pytester.runpytest("--agentrig-scenarios").assert_outcomes(passed=1)
    assert gc.get_freeze_count() >= frozen


def test_scenarios_are_collected_and_pass_with_the_option(pytester: pytest.Pytester) -> None:
    add_scenario(pytester, "scenarios/a.scenario.yaml", "a")
    add_scenario(pytester, "scenarios/deep/b.scenario.yaml", "b")
    result = pytester.runpytest("--agentrig-scenarios", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*a.scenario.yaml::a PASSED*", "*b.scenario.yaml::b PASSED*"])


def test_the_ini_option_enables_collection_and_tags_are_keywords(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nagentrig_scenarios = true\n")
    add_scenario(pytester, "s/a.scenario.yaml", "a")
    pytester.path.joinpath("s/b.scenario.yaml").write_text(
        PASSING.format(name="b", answer="hello").replace("[smoke]", "[slow]")
    )
    result = pytester.runpytest("-k", "smoke")
    result.assert_outcomes(passed=1, deselected=1)


def test_a_failure_shows_the_domain_diff_with_file_and_line(pytester: pytest.Pytester) -> None:
    add_scenario(pytester, "scenarios/wrong.scenario.yaml", "wrong", answer="goodbye")
    result = pytester.runpytest("--agentrig-scenarios")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*scenario wrong (*wrong.scenario.yaml:1) failed:*",
            "*[[]expectation[]] turn 1: expect.final_response: final response does not match*",
            "*at *wrong.scenario.yaml:9*",
            '*expected: {"equals": "goodbye"}*',
            '*observed: "hello"*',
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_failing_folders_are_collected_only_when_named(pytester: pytest.Pytester) -> None:
    add_scenario(pytester, "scenarios/ok.scenario.yaml", "ok")
    add_scenario(pytester, "scenarios/failing/bad.scenario.yaml", "bad", answer="nope")
    pytester.runpytest("--agentrig-scenarios", "scenarios").assert_outcomes(passed=1)
    named = pytester.runpytest("--agentrig-scenarios", "scenarios/failing")
    named.assert_outcomes(failed=1)


def test_a_malformed_file_is_a_collection_error_naming_line_and_field(
    pytester: pytest.Pytester,
) -> None:
    target = pytester.path / "bad.scenario.yaml"
    target.write_text("name: bad\nturns:\n  - user: hi\n    expect: {status: nope}\n")
    result = pytester.runpytest("--agentrig-scenarios")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*bad.scenario.yaml:4:*turns[[]0[]].expect.status*"])


def test_report_dir_option_writes_agentrig_reports(pytester: pytest.Pytester) -> None:
    add_scenario(pytester, "a.scenario.yaml", "a")
    pytester.runpytest("--agentrig-scenarios", "--agentrig-report-dir", "out").assert_outcomes(
        passed=1
    )
    written = sorted(p.name for p in (pytester.path / "out").iterdir())
    assert written == ["junit.xml", "report.html", "report.json", "report.md"]


def test_fixtures_script_an_agent_and_check_their_script(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        dedent(
            """
            import agentrig as ar
            from agentrig.fakes import call, reply

            @ar.tool
            def add(a: int, b: int) -> int:
                return a + b

            def build(llm, clock, ids):
                return (ar.AgentBuilder.base().with_tools([add]).with_clock(clock).with_ids(ids)
                        .with_driver(ar.ToolCallingDriver(llm)).build())

            def test_agent(scripted_llm, fake_clock, seeded_ids):
                llm = scripted_llm([call("add", a=1, b=2), reply("3")])
                final = build(llm, fake_clock, seeded_ids).execute(ar.AgentState().with_user_message("1+2?"))
                assert final.final_response().to_text() == "3"

            def test_unused_turn_fails_at_teardown(scripted_llm, fake_clock, seeded_ids):
                llm = scripted_llm([reply("a"), reply("never")])
                build(llm, fake_clock, seeded_ids).execute(ar.AgentState().with_user_message("x"))
            """
        )
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*scripted turn 2 was never used*"])


def test_harness_fixture_runs_a_python_agent_against_a_scenario(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("case.scenario.yaml").write_text(
        dedent(
            """\
            name: py
            turns:
              - user: shout hi
                model:
                  - call: shout(text=hi)
                  - say: HI
                expect: {status: completed, final_response: HI}
            """
        )
    )
    pytester.makepyfile(
        dedent(
            """
            import agentrig as ar

            @ar.tool
            def shout(text: str) -> str:
                return text.upper()

            def test_it(agentrig_harness):
                result = agentrig_harness.assert_passes(
                    "case.scenario.yaml", builder=ar.AgentBuilder.base().with_tools([shout])
                )
                assert result.turns[0].final_response == "HI"
            """
        )
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_the_harness_fixture_runs_the_async_path_when_asked(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("case.scenario.yaml").write_text(
        dedent(
            """\
            name: threads
            turns:
              - user: where do you run?
                model:
                  - call: where()
                  - say: done
                expect: {status: completed}
            """
        )
    )
    pytester.makepyfile(
        dedent(
            """
            import threading
            import agentrig as ar

            seen = []

            @ar.tool
            def where() -> str:
                \"\"\"The async path runs a plain tool in a worker thread.\"\"\"
                seen.append(threading.current_thread() is threading.main_thread())
                return "here"

            def test_it(agentrig_harness):
                builder = ar.AgentBuilder.base().with_tools([where])
                agentrig_harness.assert_passes("case.scenario.yaml", builder=builder)
                agentrig_harness.assert_passes(
                    "case.scenario.yaml", builder=builder, use_async=True
                )
                result = agentrig_harness.run("case.scenario.yaml", builder=builder, use_async=True)
                assert result.passed
                assert seen == [True, False, False]
            """
        )
    )
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.slow
def test_scenarios_run_under_xdist(
    pytester: pytest.Pytester, other_plugins_off: tuple[str, ...]
) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is part of the dev extra")
    for index in range(4):
        add_scenario(pytester, f"scenarios/s{index}.scenario.yaml", f"s{index}")
    result = pytester.runpytest("--agentrig-scenarios", "-n", "2", *other_plugins_off)
    result.assert_outcomes(passed=4)


# --- the user's agent ------------------------------------------------------------------------

AGENT = '''
import agentrig as ar


@ar.tool
def get_weather(city: str) -> str:
    """Current weather (the real tool)."""
    return f"real weather in {city}"


def build():
    return ar.AgentBuilder.base().with_tools([get_weather])
'''

WEATHER = """\
name: {name}
agent:
  trace_mode: inline{builder}
  tools:
    get_weather:
      params: {{city: string}}
      replies: [{{return: scripted weather}}]
turns:
  - user: Weather in Paris?
    model:
      - call: get_weather(city=Paris)
      - say: Sunny.
    expect:
      messages: [user, assistant, {{role: tool, contains: {wanted}}}, assistant]
"""


def add_weather(
    pytester: pytest.Pytester, name: str, wanted: str = "real weather", builder: str = ""
) -> None:
    text = WEATHER.format(name=name, wanted=wanted, builder=builder)
    pytester.path.joinpath(f"{name}.scenario.yaml").write_text(text, encoding="utf-8")


def test_the_agentrig_builder_fixture_gives_the_agent_collected_scenarios_run(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(my_agent=AGENT)
    pytester.makeconftest(
        """
        import pytest
        import my_agent


        @pytest.fixture
        def agentrig_builder():
            return my_agent.build()
        """
    )
    add_weather(pytester, "real")
    result = pytester.runpytest("--agentrig-scenarios", "-v")
    result.assert_outcomes(passed=1)


def test_the_fixture_may_choose_a_builder_per_scenario(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(my_agent=AGENT)
    pytester.makeconftest(
        """
        import pytest
        import my_agent


        @pytest.fixture(scope="session")
        def agentrig_builder():
            return lambda scenario: None if "scripted" in scenario.name else my_agent.build()
        """
    )
    add_weather(pytester, "real")
    add_weather(pytester, "only-scripted", wanted="scripted weather")
    pytester.runpytest("--agentrig-scenarios").assert_outcomes(passed=2)


def test_a_file_naming_its_builder_runs_it_under_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(my_agent=AGENT)
    pytester.makeconftest(
        """
        import pytest
        import agentrig as ar


        @pytest.fixture
        def agentrig_builder():
            return ar.AgentBuilder.base()  # scripted tools: the file's builder wins
        """
    )
    add_weather(pytester, "named", builder="\n  builder: my_agent:build")
    pytester.runpytest("--agentrig-scenarios").assert_outcomes(passed=1)


def test_scenario_items_get_module_scoped_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(my_agent=AGENT)
    pytester.makeconftest(
        """
        import pytest
        import my_agent


        @pytest.fixture(scope="module")
        def tools_module(request):
            return my_agent


        @pytest.fixture(autouse=True, scope="module")
        def used_by_every_test(tools_module):
            yield


        @pytest.fixture
        def agentrig_builder(tools_module, tmp_path):
            return tools_module.build()
        """
    )
    add_weather(pytester, "real")
    pytester.runpytest("--agentrig-scenarios").assert_outcomes(passed=1)


def test_a_fixture_giving_something_else_fails_clearly(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest


        @pytest.fixture
        def agentrig_builder():
            return "my_agent:build"
        """
    )
    add_weather(pytester, "real")
    result = pytester.runpytest("--agentrig-scenarios")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*agentrig_builder: the fixture gave str 'my_agent:build'; give an AgentBuilder*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_unused_scripted_turns_fail_at_teardown_without_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        dedent(
            """
            import agentrig as ar
            from agentrig.fakes import reply

            def test_unused(scripted_llm):
                llm = scripted_llm([reply("a"), reply("never")])
                agent = ar.AgentBuilder.base().with_capability(ar.UseLlmConfig(llm)).build()
                agent.execute(agent.new_state("x"))
            """
        )
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    assert "ScriptedLLM: scripted turn 2 was never used; remove it" in output
    assert "parent agent" not in output  # the script has no subagents
    assert "assert_complete" not in output  # no traceback through the fixture and the fake
    assert "pytest_plugin.py" not in output


def test_a_scenario_file_the_harness_cannot_load_fails_the_test_without_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.path.joinpath("broken.scenario.yaml").write_text(
        "name: broken\nturns:\n  - user: hi\n    model: [{sya: hello}]\n", encoding="utf-8"
    )
    pytester.makepyfile(
        dedent(
            """
            def test_mistyped_path(agentrig_harness):
                agentrig_harness.assert_passes("scenarioz/days.scenario.yaml")

            def test_broken_file(agentrig_harness):
                agentrig_harness.run("broken.scenario.yaml")
            """
        )
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    output = result.stdout.str()
    assert "scenarioz/days.scenario.yaml: cannot read the file" in output
    assert "broken.scenario.yaml:4:" in output
    assert "load_scenario" not in output  # no traceback into the loader
    assert "ScenarioFileError" not in output


def test_the_harness_finds_a_scenario_next_to_the_test_file_from_another_folder(
    pytester: pytest.Pytester,
) -> None:
    """``pytest tests/`` from the project's root: a path written relative to the test file, as
    ``agentrig_endpoint`` and ``agentrig_cassette`` take theirs, is found too."""
    add_scenario(pytester, "tests/scenarios/greet.scenario.yaml", "greet")
    (pytester.path / "tests" / "test_greet.py").write_text(
        dedent(
            """
            def test_greet(agentrig_harness):
                result = agentrig_harness.assert_passes("scenarios/greet.scenario.yaml")
                assert result.name == "greet"
            """
        ),
        encoding="utf-8",
    )
    result = pytester.runpytest("tests")
    result.assert_outcomes(passed=1)


def test_scenario_items_of_a_folder_share_its_fixtures_and_keep_their_own_lists(
    pytester: pytest.Pytester,
) -> None:
    # pytest works the fixture closure out once per folder: each folder's own conftest still
    # reaches its items alone, and one item's fixture names are its own to change.
    add_scenario(pytester, "s/a.scenario.yaml", "a")
    add_scenario(pytester, "s/b.scenario.yaml", "b")
    add_scenario(pytester, "s/deep/c.scenario.yaml", "c")
    pytester.path.joinpath("s/deep/conftest.py").write_text(
        dedent(
            """
            import pytest

            @pytest.fixture(autouse=True)
            def deep_only():
                return "deep"
            """
        )
    )
    pytester.makeconftest(
        dedent(
            """
            def pytest_collection_modifyitems(items):
                items[0].fixturenames.append("changed_for_one")
                for item in items:
                    print(item.name, sorted(n for n in item.fixturenames if n[:4] in ("deep", "chan")))
            """
        )
    )
    result = pytester.runpytest("--agentrig-scenarios", "--collect-only", "-s", "-q")
    result.stdout.fnmatch_lines(["a ['changed_for_one']", "b []", "c ['deep_only']"])
