"""Live scenarios in a suite. ``agentrig run --live`` refuses, before any trial runs and with
exit code 2, what can never run: each refusal names the scenario file, the line and the key to
change. The scenarios that can run run together, each ending as a result that passes exactly
when its verdict is PASS (``refund_app`` plays every model)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import refund_app
import yaml
from typer.testing import CliRunner

from agentrig.errors import ConfigurationError
from agentrig.fakes import FunctionLLM
from agentrig.harness.cli import app
from agentrig.harness.live.limits import ProviderLimits, Traffic
from agentrig.harness.live.options import live_run_options
from agentrig.harness.live.run import LiveRun, RoleModels
from agentrig.harness.live.suite import preflight_live, run_live_suite
from agentrig.harness.live.trial import TrialOutcome, TrialSetup, run_trial
from agentrig.harness.results import Failure, ScenarioResult
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario

SCENARIO = """\
name: refund
agent:
  builder: refund_app:build
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  model:
    provider: openai
    name: gpt-4.1-mini
    api_key_env: LIVE_USER_KEY
judge:
  criteria:
    - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}
trials:
  require: {metric: rate, at_least: 0.7}
  max: 20
"""
LINES = {
    "builder": 3,
    "user.model": 7,
    "api_key_env": 10,
    "require": 15,
    "max": 16,
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder, the current one, with the user model's key set."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LIVE_USER_KEY", "sk-test")
    return tmp_path


def run_live(project: Path, old: str = "", new: str = "", *options: str) -> tuple[int, str, Path]:
    """Write the scenario (``old`` replaced by ``new``), run it with --live and ``options``:
    the exit code, what was printed, and the scenario's path."""
    assert old in SCENARIO
    path = project / "refund.scenario.yaml"
    path.write_text(SCENARIO.replace(old, new, 1), encoding="utf-8")
    args = ["run", "--live", str(path), "--report-dir", "reports", "--cache", "cache", *options]
    result = CliRunner().invoke(app, args)
    output = result.output
    assert "Traceback" not in output
    assert "Task exception" not in output
    assert not (project / "cache").exists(), "a trial ran"
    assert not (project / "reports").exists()
    return result.exit_code, " ".join(output.split()), path


def test_a_missing_api_key_names_the_variable_where_it_is_named(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIVE_USER_KEY")
    code, output, path = run_live(project)
    assert code == 2, output
    assert f"error: {path}:{LINES['api_key_env']}: the openai model 'gpt-4.1-mini' needs an " in (
        output
    )
    assert "set LIVE_USER_KEY" in output


def test_a_missing_default_api_key_names_the_variable_and_the_model(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, output, path = run_live(project, "    api_key_env: LIVE_USER_KEY\n", "")
    assert code == 2, output
    assert f"error: {path}:{LINES['user.model']}: " in output
    assert "set OPENAI_API_KEY" in output


def test_a_requirement_max_trials_cannot_show_names_trials_max(project: Path) -> None:
    code, output, path = run_live(
        project,
        "{metric: rate, at_least: 0.7}\n  max: 20",
        '{metric: "pass^4", at_least: 0.99}\n  max: 10',
    )
    assert code == 2, output
    assert f"error: {path}:{LINES['max']}: pass^4 >= 0.99 at confidence 0.95 needs at least " in (
        output
    )
    assert "max is 10: raise trials.max or lower the requirement" in output


UNDECIDABLE = [
    pytest.param(
        "{metric: rate, at_least: 0.9999999999999999}",
        "trials.require.at_least: rate >= 0.9999999999999999 needs a success rate of "
        "0.9999999999999999, which double precision cannot tell from 1: no number of trials can "
        "decide it; lower at_least",
        id="rate-next-to-1",  # was a hang
    ),
    pytest.param(
        '{metric: "pass^100000000000000000000", at_least: 0.7}',
        "trials.require.at_least: pass^100000000000000000000 >= 0.7 needs a success rate of "
        "1.0, which double precision cannot tell from 1: no number of trials can decide it; "
        "lower at_least or k",
        id="huge-k",  # was a ZeroDivisionError
    ),
    pytest.param(
        "{metric: rate, at_least: 0.7, indifference: 1.0e-17}",
        "trials.require.indifference: 1e-17 is too small next to the success rate 0.7 the "
        "requirement asks for: the sequential test cannot tell the rates on either side of it "
        "apart; raise it (the default is 0.05)",
        id="tiny-indifference",  # was a ZeroDivisionError
    ),
]


def _undecidable(require: str) -> str:
    return SCENARIO.replace(
        "{metric: rate, at_least: 0.7}\n  max: 20", f"{require}\n  max: 100000000000000000000"
    )


@pytest.mark.parametrize(("require", "words"), UNDECIDABLE)
def test_a_requirement_no_trials_can_decide_is_refused_at_once(
    project: Path, bounded: Any, require: str, words: str
) -> None:
    path = project / "refund.scenario.yaml"
    path.write_text(_undecidable(require), encoding="utf-8")
    scenario = load_scenario(path)
    with pytest.raises(ConfigurationError) as caught:
        bounded(lambda: preflight_live([scenario], LiveRun()))
    assert str(caught.value) == f"{path}:{LINES['require']}: {words}"


@pytest.mark.parametrize(("require", "words"), UNDECIDABLE[1:])  # the hang is tested above
def test_run_live_refuses_a_requirement_no_trials_can_decide(
    project: Path, require: str, words: str
) -> None:
    code, output, path = run_live(
        project,
        "{metric: rate, at_least: 0.7}\n  max: 20",
        f"{require}\n  max: 100000000000000000000",
    )
    assert code == 2, output
    assert f"error: {path}:{LINES['require']}: {words}" in output


@pytest.mark.parametrize(
    ("reference", "words"),
    [
        pytest.param(
            "builder: no_such_module:build", "cannot import module 'no_such_module'", id="absent"
        ),
        pytest.param(
            "builder: refund_app:no_such_function",
            "module 'refund_app' has no 'no_such_function'",
            id="no-function",
        ),
        pytest.param(
            "adapter: broken_module:reply",
            "module 'broken_module' failed to import: ModuleNotFoundError",
            id="adapter-import-fails",
        ),
        pytest.param(
            "builder: refund_app:SUCCESS_RATE",
            "is float 1.0: name a function that returns an AgentBuilder",
            id="not-a-function",
        ),
        pytest.param(
            "builder: refund_app:build_without_model",
            "a live trial needs the agent's model",
            id="no-model",
        ),
    ],
)
def test_an_agent_that_cannot_be_made_names_its_reference(
    project: Path, monkeypatch: pytest.MonkeyPatch, reference: str, words: str
) -> None:
    (project / "broken_module.py").write_text("import module_that_is_not_installed\n")
    monkeypatch.syspath_prepend(str(project))
    code, output, path = run_live(project, "builder: refund_app:build", reference)
    assert code == 2, output
    assert f"error: {path}:{LINES['builder']}: " in output
    assert words in output


SCRIPTED = """\
name: scripted
agent: {builder: "marker_app:build"}
turns:
  - user: ping
    model:
      - say: pong
"""


def test_no_scenario_runs_when_a_live_one_cannot(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "marker_app.py").write_text(
        "from pathlib import Path\n"
        "from agentrig import AgentBuilder\n"
        "def build():\n"
        "    Path('scripted-ran').touch()\n"
        "    return AgentBuilder.base()\n"
    )
    monkeypatch.syspath_prepend(str(project))
    (project / "scripted.scenario.yaml").write_text(SCRIPTED, encoding="utf-8")
    monkeypatch.delenv("LIVE_USER_KEY")
    path = project / "refund.scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "--live", str(project), "-n", "1", "-q"])
    assert result.exit_code == 2, result.output
    assert "set LIVE_USER_KEY" in result.output
    assert not (project / "scripted-ran").exists()


def test_a_limit_for_a_provider_no_scenario_calls_is_refused_with_a_suggestion(
    project: Path,
) -> None:
    code, output, _ = run_live(project, "", "", "--limit", "opneai=2")
    assert code == 2, output
    assert "--limit opneai: no live scenario of this run calls 'opneai'" in output
    assert "did you mean 'openai'?" in output


@pytest.mark.parametrize("limit", ["openai=2", "agent_model=1"])
def test_a_limit_for_a_called_provider_is_accepted(project: Path, limit: str) -> None:
    # The user's model is OpenAI's; the agent's (refund_app) is a function named agent_model.
    scenario = load_scenario_text(project, SCENARIO)
    run = live_run_options(limits=[limit])
    preflight_live([scenario], run)


def test_the_responses_api_is_capped_as_openai(project: Path) -> None:
    text = SCENARIO.replace("provider: openai", "provider: openai-responses")
    preflight_live([load_scenario_text(project, text)], live_run_options(limits=["openai=2"]))
    with pytest.raises(ConfigurationError, match="--limit openai-responses"):
        preflight_live(
            [load_scenario_text(project, text)], live_run_options(limits=["openai-responses=2"])
        )


def load_scenario_text(project: Path, text: str) -> Any:
    path = project / "refund.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return load_scenario(path)


def test_a_cap_from_the_run_that_cannot_show_the_requirement_names_max_trials(
    project: Path,
) -> None:
    scenario = load_scenario_text(project, SCENARIO)  # 20 trials: enough for rate >= 0.7
    preflight_live([scenario], LiveRun(max_trials=20))
    with pytest.raises(ConfigurationError) as raised:
        preflight_live([scenario], LiveRun(max_trials=3))
    assert str(raised.value) == (
        f"{project / 'refund.scenario.yaml'}:{LINES['require']}: rate >= 0.7 at confidence 0.95 "
        "needs at least 9 trials to pass (all successes); the run allows 3 (--max-trials 3, "
        "over trials.max): raise it or lower the requirement"
    )


def test_every_problem_is_listed_once_on_a_line_of_its_own(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIVE_USER_KEY")
    scenario = load_scenario_text(project, SCENARIO)
    with pytest.raises(ConfigurationError) as raised:  # the same scenario twice: listed once
        preflight_live([scenario, scenario], live_run_options(limits=["opneai=2"]))
    key, limit = str(raised.value).split("\n")
    assert key == (
        f"{project / 'refund.scenario.yaml'}:{LINES['api_key_env']}: the openai model "
        "'gpt-4.1-mini' needs an API key: set LIVE_USER_KEY (or name another variable with "
        "api_key_env)"
    )
    assert limit == (
        "--limit opneai: no live scenario of this run calls 'opneai'; did you mean 'openai'? "
        "the providers called are: agent_model, openai"
    )


LIVE = """\
name: {NAME}
description: refunds, live
tags: [refunds, live]
agent: {builder: "refund_app:build"}
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  knows: {order_id: A-1029}
  stop: {max_turns: 3, not_before_tool: [issue_refund]}
  model: {provider: openai, name: gpt-4.1-mini}
judge:
  criteria:
    - {id: refunded, check: {tool_called: "issue_refund(order_id={ORDER})"}}
trials:
  require: {metric: rate, at_least: 0.5}
  max: 10
"""


def live_scenario(project: Path, name: str, order: str = "A-1029", trials: str = "") -> Scenario:
    """A live scenario of refund_app, in its own file (``trials`` added to its ``trials``);
    its agent fails every trial unless ``order`` is the order the user has."""
    path = project / f"{name}.scenario.yaml"
    text = LIVE.replace("{NAME}", name).replace("{ORDER}", order) + trials
    path.write_text(text, encoding="utf-8")
    return load_scenario(path)


def in_process(**options: Any) -> LiveRun:
    """A run whose user and judge are refund_app's functions."""
    models = RoleModels(
        user=lambda _: FunctionLLM(refund_app.user_model),
        judge=lambda _: FunctionLLM(refund_app.judge_model),
    )
    return LiveRun(models=models, **options)


def test_a_suite_runs_its_scenarios_and_each_passes_exactly_when_its_verdict_is_pass(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    scenarios = [live_scenario(project, "fails", order="Z-9"), live_scenario(project, "passes")]
    reported: list[ScenarioResult] = []
    started = time.perf_counter()
    results = asyncio.run(run_live_suite(scenarios, in_process(), reported.append))
    elapsed = time.perf_counter() - started
    assert [result.name for result in results] == ["fails", "passes"]  # the scenarios' order
    assert sorted(map(id, reported)) == sorted(map(id, results))  # each reported as it ends
    fails, passes = results
    for result, name in ((fails, "fails"), (passes, "passes")):
        assert (result.file, result.line) == (str(project / f"{name}.scenario.yaml"), 1)
        assert (result.tags, result.description) == (("refunds", "live"), "refunds, live")
        assert (result.turns, result.invariants, result.transcript) == ((), (), ())
        assert 0 < result.wall_time_s <= elapsed  # each scenario's own, within the suite's
    assert passes.live is not None
    assert (passes.passed, passes.failures, passes.live.verdict) == (True, (), "PASS")
    assert fails.live is not None
    assert (fails.passed, fails.live.verdict) == (False, "FAIL")
    assert fails.failures == (
        Failure(
            kind="verdict",
            message=f"FAIL: {fails.live.reason}",
            field="trials.require",
            expected="rate >= 0.5",
            observed=f"0/{fails.live.trials} successes",
            location=f"{project / 'fails.scenario.yaml'}:15",
        ),
    )


def test_an_inconclusive_verdict_fails_the_scenario(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    scenario = live_scenario(project, "refund", trials="  budget_usd: 0.0005\n")
    (result,) = asyncio.run(run_live_suite([scenario], in_process()))
    assert result.live is not None
    assert (result.live.verdict, result.live.partial) == ("INCONCLUSIVE", "the budget is spent")
    assert not result.passed
    (failure,) = result.failures
    assert failure.message == f"INCONCLUSIVE: {result.live.reason}"
    trials = result.live.trials
    assert failure.observed == f"{trials}/{trials} successes"


def test_a_scenario_made_in_memory_has_no_file_or_line(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 0.0)
    text = LIVE.replace("{NAME}", "memory").replace("{ORDER}", "A-1029")
    scenario = Scenario.model_validate(yaml.safe_load(text))
    (result,) = asyncio.run(run_live_suite([scenario], in_process()))
    assert (result.file, result.line, result.passed) == ("<memory>", None, False)
    assert result.failures[0].location is None


def test_the_suite_is_checked_before_any_trial_runs_unless_the_caller_did(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    scenario = live_scenario(project, "refund")
    ran: list[int] = []

    async def launcher(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        ran.append(index)
        return await run_trial(setup, index, attempt)

    def misspelt() -> LiveRun:  # a --limit for a provider no scenario calls
        return in_process(control=Traffic(ProviderLimits({"opneai": 2})), launcher=launcher)

    with pytest.raises(ConfigurationError, match=r"^--limit opneai: no live scenario"):
        asyncio.run(run_live_suite([scenario], misspelt()))
    assert ran == []
    (result,) = asyncio.run(run_live_suite([scenario], misspelt(), checked=True))
    assert result.passed
    assert ran


def test_an_interrupted_suite_returns_each_scenarios_partial_verdict(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C cancels the suite's task once each scenario has ended a trial: each scenario
    # cancels the trials still going and ends with a partial verdict, which the suite returns.
    monkeypatch.setattr(refund_app, "SUCCESS_RATE", 1.0)
    scenarios = [live_scenario(project, "first"), live_scenario(project, "second")]
    reported: list[ScenarioResult] = []

    async def main() -> list[ScenarioResult]:
        ended: set[str] = set()

        async def launcher(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
            if index > 0:
                await asyncio.Event().wait()  # never ends, unless cancelled
            outcome = await run_trial(setup, index, attempt)
            ended.add(setup.scenario.name)
            if len(ended) == 2:
                suite.cancel()
            return outcome

        run = in_process(launcher=launcher)
        suite = asyncio.ensure_future(run_live_suite(scenarios, run, reported.append))
        return await suite

    results = asyncio.run(main())
    assert [result.name for result in results] == ["first", "second"]
    for result in results:
        assert result.live is not None
        assert result.live.partial == "interrupted"
        assert (result.live.trials, result.live.successes) == (1, 1)
    assert sorted(map(id, reported)) == sorted(map(id, results))


def test_a_suite_interrupted_before_its_scenarios_started_returns_no_result(
    project: Path,
) -> None:
    ran: list[int] = []

    async def launcher(setup: TrialSetup, index: int, attempt: int) -> TrialOutcome:
        ran.append(index)
        return await run_trial(setup, index, attempt)

    async def main() -> list[ScenarioResult]:
        run = in_process(launcher=launcher)
        scenarios = [live_scenario(project, "first"), live_scenario(project, "second")]
        suite = asyncio.ensure_future(run_live_suite(scenarios, run))
        await asyncio.sleep(0)  # the suite starts its scenarios' tasks, which have not run yet
        suite.cancel()
        return await suite

    assert asyncio.run(main()) == []
    assert ran == []


ONE_TURN = """\
name: refund
agent:
  builder: refund_app:build
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  opening: My mug arrived broken; order A-1029. I want a refund.
  stop: {max_turns: 1}
judge:
  criteria:
    - {id: polite, rubric: the agent never blames the customer}
  model:
    provider: openai
    name: gpt-4.1
    api_key_env: LIVE_JUDGE_KEY
trials:
  require: {metric: rate, at_least: 0.7}
  max: 20
"""


def test_a_judges_missing_key_is_named_where_it_is_named_when_the_user_has_no_model(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIVE_JUDGE_KEY", raising=False)
    scenario = load_scenario_text(project, ONE_TURN)  # a scripted opening: no user model
    with pytest.raises(ConfigurationError) as raised:
        preflight_live([scenario], LiveRun())
    assert str(raised.value) == (
        f"{project / 'refund.scenario.yaml'}:15: the openai model 'gpt-4.1' needs an API key: "
        "set LIVE_JUDGE_KEY (or name another variable with api_key_env)"
    )
    monkeypatch.setenv("LIVE_JUDGE_KEY", "sk-test")
    preflight_live([scenario], live_run_options(limits=["openai=2"]))  # the judge's provider


@pytest.mark.parametrize(("user", "limit"), [("openai", "anthropic=2"), ("anthropic", "openai=2")])
def test_an_adapters_calls_may_be_capped_under_either_provider(
    project: Path, user: str, limit: str
) -> None:
    text = SCENARIO.replace("builder: refund_app:build", "adapter: refund_app:adapter")
    scenario = load_scenario_text(project, text.replace("provider: openai", f"provider: {user}"))
    preflight_live([scenario], live_run_options(limits=[limit]))
    with pytest.raises(ConfigurationError, match=r"^--limit mistral: .* are: anthropic, openai$"):
        preflight_live([scenario], live_run_options(limits=["mistral=2"]))


def test_a_limit_in_a_run_of_no_live_scenario_names_no_provider() -> None:
    with pytest.raises(ConfigurationError) as raised:
        preflight_live([], live_run_options(limits=["openai=2"]))
    assert str(raised.value) == (
        "--limit openai: no live scenario of this run calls 'openai'; the providers called are: "
        "none"
    )


def test_a_judges_key_is_checked_when_the_users_model_is_given(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIVE_JUDGE_KEY", raising=False)
    judged = SCENARIO.replace(
        '    - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}\n',
        "    - {id: polite, rubric: the agent never blames the customer}\n"
        "  model: {provider: anthropic, name: claude-sonnet-4, api_key_env: LIVE_JUDGE_KEY}\n",
    )
    scenario = load_scenario_text(project, judged)
    given = RoleModels(user=lambda _: FunctionLLM(refund_app.user_model))
    with pytest.raises(ConfigurationError) as raised:
        preflight_live([scenario], LiveRun(models=given))
    assert str(raised.value) == (
        f"{project / 'refund.scenario.yaml'}:14: the anthropic model 'claude-sonnet-4' needs an "
        "API key: set LIVE_JUDGE_KEY (or name another variable with api_key_env)"
    )
    monkeypatch.setenv("LIVE_JUDGE_KEY", "sk-test")
    preflight_live([scenario], live_run_options(limits=["anthropic=1"]))  # the judge's provider
