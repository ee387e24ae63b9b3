"""A live scenario's ``trials:`` and role models: a mistyped value is named with what to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.loader import load_scenario

LIVE = """\
name: refund
agent: {builder: "my_app:build"}
user:
  persona: Dana
  goal: a refund
  model: {provider: openai, name: gpt-4.1-mini, api_key_env: REFUND_KEY}
judge:
  criteria: [{id: refunded, check: {tool_called: issue_refund}}]
trials:
  require: {metric: "pass^4", at_least: 0.6}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "refund.scenario.yaml"
    path.write_text(text)
    return path


def test_the_live_scenario_loads(tmp_path: Path) -> None:
    loaded = load_scenario(write(tmp_path, LIVE))
    assert loaded.trials is not None
    assert loaded.trials.require.metric == "pass^4"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            '"pass^4"',
            '"pass^x"',
            ":10:21: trials.require.metric: 'pass^x' is not a metric: write rate, pass^K or "
            "pass@K with K a whole number from 1 (no sign, no leading zero, no blanks), e.g. "
            "pass^4",
        ),
        (
            "REFUND_KEY",
            "refund-key",
            ":6:62: user.model.api_key_env: 'refund-key' is not an environment variable's name: "
            "use letters, digits and '_', not starting with a digit",
        ),
    ],
)
def test_a_mistyped_live_value_says_what_to_write(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    path = write(tmp_path, LIVE.replace(old, new))
    with pytest.raises(ScenarioFileError) as raised:
        load_scenario(path)
    assert str(raised.value) == f"{path}{expected}"
