"""The options of ``agentrig run --live``: a bad value exits 2 before anything runs, naming the
option and saying what to write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentrig.errors import InvalidInputError
from agentrig.harness.cli import app
from agentrig.harness.live.options import live_run_options, parse_limits
from agentrig.harness.property.profiles import agentrig_settings

SCENARIO = """\
name: refund
agent: {builder: "refund_app:build"}
user:
  persona: Dana, terse
  goal: a refund for her broken mug
  model: {provider: openai, name: gpt-4.1-mini}
judge:
  criteria:
    - {id: refunded, check: {tool_called: "issue_refund(order_id=A-1029)"}}
trials: {require: {metric: rate, at_least: 0.7}, max: 20}
"""


@pytest.mark.parametrize(
    ("options", "words"),
    [
        pytest.param(
            ["--limit", "openai=0"], "invalid --limit: openai=0: write PROVIDER=N", id="0"
        ),
        pytest.param(["--limit", "foo"], "invalid --limit: foo: write PROVIDER=N", id="no-equals"),
        pytest.param(["--limit", "=3"], "invalid --limit: =3: write PROVIDER=N", id="no-name"),
        pytest.param(["--limit", "openai=²"], "invalid --limit: openai=²: write", id="superscript"),
        pytest.param(["--limit", "openai=" + "9" * 5000], "invalid --limit: openai=999", id="huge"),
        pytest.param(["--limit", "openai=-1"], "invalid --limit: openai=-1", id="negative"),
        pytest.param(["--budget-usd", "-1"], "--budget-usd", id="negative-budget"),
        pytest.param(["--budget-usd", "inf"], "--budget-usd: expected a finite", id="inf"),
        pytest.param(["--budget-usd", "nan"], "--budget-usd", id="nan"),
        pytest.param(["--max-trials", "0"], "--max-trials", id="no-trials"),
        pytest.param(["--cache", "a-file"], "--cache: a-file is not a folder", id="cache-file"),
    ],
)
def test_a_bad_option_exits_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str], words: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "a-file").write_text("not a folder\n")
    (tmp_path / "refund.scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    args = ["run", "--live", "refund.scenario.yaml", "--report-dir", "reports", *options]
    result = CliRunner().invoke(app, args)
    output = " ".join(result.output.split())
    assert result.exit_code == 2, output
    assert words in output
    assert "Traceback" not in result.output
    assert not (tmp_path / "reports").exists()
    assert not (tmp_path / ".agentrig").exists()


def test_limits_are_read_per_provider() -> None:
    assert parse_limits(["openai=8", " anthropic = 4 ", "openai=2", "gemini=1"]) == {
        "openai": 2,
        "anthropic": 4,
        "gemini": 1,
    }


def test_every_bad_limit_is_named_at_once() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_limits(["foo", "openai=2", "openai=x=3", "=3"])
    assert raised.value.problems == [
        (item, "write PROVIDER=N with N >= 1, e.g. openai=8")
        for item in ("foo", "openai=x=3", "=3")
    ]


@pytest.mark.parametrize("item", ["openai=²", "openai=١٢", "openai=" + "9" * 5000, "openai=0"])
def test_a_limit_that_is_not_a_plain_count_is_an_invalid_input_error(item: str) -> None:
    with pytest.raises(InvalidInputError, match="write PROVIDER=N with N"):
        parse_limits([item])


def test_a_run_budget_that_is_not_finite_names_the_option() -> None:
    with pytest.raises(InvalidInputError, match=r"--budget-usd: expected a finite"):
        live_run_options(budget_usd=float("inf"))


@agentrig_settings(max_examples=100)
@given(items=st.lists(st.text(max_size=12) | st.from_regex(r"[a-z]{1,6}=[0-9]{1,12}"), max_size=4))
def test_any_limit_text_is_caps_or_an_invalid_input_error(items: list[str]) -> None:
    refused: InvalidInputError | None = None
    try:
        caps = parse_limits(items)
    except InvalidInputError as error:
        refused, caps = error, {}
    if refused is not None:
        assert refused.what == "--limit"
        assert {field for field, _ in refused.problems} <= set(items)
    assert all(name == name.strip() and name for name in caps)
    assert all(isinstance(cap, int) and 1 <= cap < 10**9 for cap in caps.values())
    assert len(caps) <= len(items)


def test_the_options_make_one_run_with_its_traffic_control_cache_and_limits(
    tmp_path: Path,
) -> None:
    from agentrig.harness.live.limits import Traffic
    from agentrig.harness.live.options import DEFAULT_PROVIDER_CAP

    run = live_run_options(
        cache_dir=tmp_path / "cache",
        budget_usd=2.5,
        limits=["openai=3"],
        max_trials=7,
        run_id="nightly",
    )
    assert isinstance(run.control, Traffic)
    assert run.control.budget is not None
    assert (run.control.budget.usd, run.control.budget.name) == (
        2.5,
        "the run's budget (--budget-usd)",
    )
    assert run.control.limits.cap("openai") == 3
    assert run.control.limits.cap("anthropic") == DEFAULT_PROVIDER_CAP == 8
    assert run.cache_dir == str(tmp_path / "cache")
    assert isinstance(run.cache_dir, str)
    assert (run.max_trials, run.run_id) == (7, "nightly")


def test_no_options_make_a_run_without_budget_cache_or_trial_cap() -> None:
    from agentrig.harness.live.limits import Traffic

    run = live_run_options()
    assert isinstance(run.control, Traffic)
    assert run.control.budget is None
    assert (run.cache_dir, run.max_trials) == (None, None)
    assert len(run.run_id) == 8  # random, a new one each run
    assert live_run_options().run_id != run.run_id


@pytest.mark.parametrize("run_id", ["", "a/b", "tab\there"])
def test_a_run_id_that_cannot_name_a_folder_is_refused(run_id: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        live_run_options(run_id=run_id)
    assert (raised.value.what, raised.value.problems) == (
        "--run-id",
        [(run_id, "use a name without '/'")],
    )


def test_every_bad_option_is_named_at_once_the_cache_under_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    inside = tmp_path / "a-file" / "cache"
    with pytest.raises(InvalidInputError) as raised:
        live_run_options(budget_usd=-1.0, cache_dir=inside, cache_option="--agentrig-live-cache")
    assert raised.value.what == "option"
    assert [name for name, _ in raised.value.problems] == ["--budget-usd", "--agentrig-live-cache"]
    assert raised.value.problems[1][1] == (
        f"{inside} cannot be made: {tmp_path / 'a-file'} is not a folder"
    )


def test_an_existing_cache_folder_is_taken(tmp_path: Path) -> None:
    assert live_run_options(cache_dir=tmp_path).cache_dir == str(tmp_path)


@pytest.mark.parametrize("exists", [True, False], ids=["folder", "its parent"])
def test_a_cache_folder_that_cannot_be_written_is_refused_before_any_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exists: bool
) -> None:
    import os

    real = os.access

    def access(path: Any, mode: int) -> bool:  # a read-only folder, as root cannot make one
        return not (Path(path) == tmp_path and mode & os.W_OK) and real(path, mode)

    monkeypatch.setattr(os, "access", access)
    folder = tmp_path if exists else tmp_path / "cache"
    with pytest.raises(InvalidInputError) as raised:
        live_run_options(cache_dir=folder)
    reason = (
        f"{tmp_path} is not writable: name a folder the trials can be kept in"
        if exists
        else f"{folder} cannot be made: {tmp_path} is not writable"
    )
    assert raised.value.problems == [("--cache", reason)]
