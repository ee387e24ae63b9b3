"""A missing extra of the endpoint is a message naming the package and the extra to install,
never an import traceback: ``agentrig serve``, the ``agentrig_endpoint`` fixture and the Python
API alike."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.errors import MissingDependencyError
from agentrig.harness.cli import app
from agentrig.harness.endpoint.extras import require_extra
from agentrig.harness.endpoint.handle import EndpointHandle

from .conftest import WEATHER


@pytest.mark.parametrize(
    ("extra", "module", "package", "named"),
    [
        ("endpoint", "jsonschema", "jsonschema", "endpoint"),
        ("serve", "jsonschema", "jsonschema", "serve"),
        ("serve", "uvicorn", "uvicorn", "serve"),
        ("intercept", "pytest_httpx2", "pytest-httpx2", "endpoint"),
    ],
)
def test_a_missing_package_names_itself_and_the_extra(
    extra: str, module: str, package: str, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes ``import module`` fail
    with pytest.raises(MissingDependencyError) as caught:
        require_extra(extra)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"{package} is not installed: pip install '{package}', or agentrig with its extra: "
        f"pip install './agentrig[{named}]'"
    )


def test_everything_installed_passes() -> None:
    for extra in ("endpoint", "serve", "intercept"):
        require_extra(extra)  # type: ignore[arg-type]


def test_serve_without_the_serve_extra_exits_2_saying_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = tmp_path / "weather.scenario.yaml"
    scenario.write_text(WEATHER, encoding="utf-8")
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    result = CliRunner().invoke(app, ["serve", str(scenario)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    said = " ".join(result.output.split())
    assert (
        "uvicorn is not installed: pip install 'uvicorn', or agentrig with its extra: "
        "pip install './agentrig[serve]'" in said
    )


def test_a_live_handle_without_the_serve_extra_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = tmp_path / "weather.scenario.yaml"
    scenario.write_text(WEATHER, encoding="utf-8")
    monkeypatch.setitem(sys.modules, "starlette", None)
    with pytest.raises(MissingDependencyError, match=r"pip install '\./agentrig\[serve\]'"):
        EndpointHandle(scenario, live=True)


FIXTURE_TEST = """
import sys

import pytest

@pytest.fixture(autouse=True)
def without(monkeypatch):
    monkeypatch.setitem(sys.modules, MODULE, None)

def test_uses_the_endpoint(agentrig_endpoint):
    agentrig_endpoint("weather.scenario.yaml", live=LIVE)
"""


@pytest.mark.parametrize(
    ("module", "live", "message"),
    [
        (
            "jsonschema",
            False,
            "jsonschema is not installed: pip install 'jsonschema', or agentrig with its extra: "
            "pip install './agentrig[endpoint]'",
        ),
        (
            "uvicorn",
            True,
            "uvicorn is not installed: pip install 'uvicorn', or agentrig with its extra: "
            "pip install './agentrig[serve]'",
        ),
    ],
)
def test_the_fixture_fails_the_test_with_the_extra_to_install(
    module: str, live: bool, message: str, pytester: pytest.Pytester
) -> None:
    pytester.makefile(".scenario.yaml", weather=WEATHER)
    test = FIXTURE_TEST.replace("MODULE", repr(module)).replace("LIVE", str(live))
    pytester.makepyfile(test_agent=test)
    result = pytester.runpytest("-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) + outcomes.get("errors", 0) == 1, result.stdout.str()
    output = result.stdout.str()
    assert message in output
    assert "Traceback" not in output
    assert "ModuleNotFoundError" not in output
    assert "another exception occurred" not in output
