"""The options of ``agentrig run --live``: a bad value exits 2 before anything runs, naming the
option and saying what to write."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentrig.errors import InvalidInputError
from agentrig.harness.cli import app
from agentrig.harness.live.limits import Traffic
from agentrig.harness.live.options import DEFAULT_PROVIDER_CAP, live_run_options, parse_limits
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
    assert parse_limits(["openai=8", " anthropic = 4 ", "openai=2"]) == {
        "openai": 2,
        "anthropic": 4,
    }


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


def test_a_limit_of_one_is_a_cap_of_one() -> None:
    assert parse_limits(["openai=1"]) == {"openai": 1}


def test_a_limit_with_a_second_equals_sign_is_refused() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_limits(["openai=8=9"])
    assert raised.value.problems == [("openai=8=9", "write PROVIDER=N with N >= 1, e.g. openai=8")]


def test_every_bad_limit_is_named_at_once() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_limits(["openai=0", "anthropic=4", "groq"])
    assert str(raised.value) == (
        "invalid --limit: openai=0: write PROVIDER=N with N >= 1, e.g. openai=8; "
        "groq: write PROVIDER=N with N >= 1, e.g. openai=8"
    )


def test_the_run_these_options_describe(tmp_path: Path) -> None:
    run = live_run_options(
        cache_dir=tmp_path / "trials",
        budget_usd=2.5,
        limits=["openai=3"],
        max_trials=40,
        run_id="nightly-7",
    )
    assert (run.cache_dir, run.max_trials, run.run_id) == (
        str(tmp_path / "trials"),
        40,
        "nightly-7",
    )
    traffic = run.control
    assert isinstance(traffic, Traffic)
    assert (traffic.limits.cap("openai"), traffic.limits.cap("groq")) == (3, DEFAULT_PROVIDER_CAP)
    assert DEFAULT_PROVIDER_CAP == 8
    assert traffic.budget is not None
    assert (traffic.budget.usd, traffic.budget.name) == (2.5, "the run's budget (--budget-usd)")
    assert not (tmp_path / "trials").exists()  # made by the first trial kept, not here


def test_no_options_no_budget_no_cache_and_a_fresh_run_id() -> None:
    run = live_run_options()
    assert (run.cache_dir, run.max_trials) == (None, None)
    assert isinstance(run.control, Traffic)
    assert run.control.budget is None
    assert run.control.limits.cap("openai") == DEFAULT_PROVIDER_CAP
    assert re.fullmatch(r"[0-9a-f]{8}", run.run_id)
    assert live_run_options().run_id != run.run_id


@pytest.mark.parametrize(("run_id", "field"), [("a/b", "a/b"), ("", ""), ("a\nb", "a\nb")])
def test_a_run_id_must_be_a_printable_name_without_a_slash(run_id: str, field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        live_run_options(run_id=run_id)
    assert raised.value.what == "--run-id"
    assert raised.value.problems == [(field, "use a name without '/'")]


def test_every_bad_option_is_named_at_once(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    with pytest.raises(InvalidInputError) as raised:
        live_run_options(budget_usd=-1, cache_dir=tmp_path / "a-file", cache_option="--cache-dir")
    assert str(raised.value) == (
        "invalid option: --budget-usd: must be >= 0, got -1; "
        f"--cache-dir: {tmp_path / 'a-file'} is not a folder: name a folder for the trials "
        "(made if missing)"
    )


def test_a_cache_folder_under_a_file_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    folder = tmp_path / "a-file" / "deeper" / "trials"
    with pytest.raises(InvalidInputError) as raised:
        live_run_options(cache_dir=folder)
    assert raised.value.problems == [
        ("--cache", f"{folder} cannot be made: {tmp_path / 'a-file'} is not a folder")
    ]


def test_a_missing_relative_cache_folder_is_made_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert live_run_options(cache_dir="trials/today").cache_dir == "trials/today"


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A folder ``os.access`` says cannot be written to (as root, any folder can)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access

    def access(path: object, mode: int) -> bool:
        if Path(str(path)) == locked and mode & os.W_OK:
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    return locked


def test_a_cache_folder_that_cannot_be_written_to_is_refused(read_only: Path) -> None:
    with pytest.raises(InvalidInputError) as raised:
        live_run_options(cache_dir=read_only)
    assert raised.value.problems == [
        ("--cache", f"{read_only} is not writable: name a folder the trials can be kept in")
    ]


def test_a_cache_folder_that_cannot_be_made_in_its_parent_is_refused(read_only: Path) -> None:
    with pytest.raises(InvalidInputError) as raised:
        live_run_options(cache_dir=read_only / "trials")
    assert raised.value.problems == [
        ("--cache", f"{read_only / 'trials'} cannot be made: {read_only} is not writable")
    ]


def test_a_writable_cache_folder_is_taken(tmp_path: Path) -> None:
    assert live_run_options(cache_dir=tmp_path).cache_dir == str(tmp_path)
