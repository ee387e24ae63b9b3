"""``agentrig run --live`` refuses, before any trial runs and with exit code 2, what can never
run: each refusal names the scenario file, the line and the key to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrig.errors import ConfigurationError
from agentrig.harness.cli import app
from agentrig.harness.live.options import live_run_options
from agentrig.harness.live.run import LiveRun
from agentrig.harness.live.suite import preflight_live
from agentrig.harness.scenarios.loader import load_scenario

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
