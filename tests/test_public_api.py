"""The curated front doors: ``agentrig.__all__``, ``agentrig.fakes.__all__`` and
``agentrig.harness.__all__`` match what they export, every public class or function of the
runtime modules is exported (or listed here as intentionally private), and the harness's front
door imports nothing until a name is used."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from types import ModuleType

import pytest

import agentrig
import agentrig.fakes
import agentrig.harness

INTENTIONALLY_PRIVATE = {
    # plumbing behind runtime_context(); users inject a Clock / IdFactory instead
    "agentrig.clock.current_clock",
    "agentrig.clock.current_ids",
    "agentrig.clock.format_uuid4",
    "agentrig.clock.new_id",
    "agentrig.clock.now",
    # returned by public APIs (HookStack.hooks, MessageStore.section), never built by users
    "agentrig.hooks.RegisteredHook",
    "agentrig.store.SectionRef",
    # helpers with public defaults: TokenBudgetCompiler's estimator, the tool value formatter
    "agentrig.compilers.estimate_tokens",
    "agentrig.tools.format_tool_value",
    # the check of a compiler's answer that the driver and TokenBudgetCompiler share
    "agentrig.compilers.checked_messages",
    # the results ToolExecutor and ToolCallingDriver give the calls a step did not run
    "agentrig.tools.not_run",
    # the install command MissingDependencyError gives, which the pytest plugin gives too
    "agentrig.errors.install_hint",
    # the context real providers send in; policies are installed with use_real_call_policy()
    "agentrig.drivers.network.sending",
    # the SSL context the providers' clients share, and the live harness's HTTP clients
    "agentrig.drivers.network.shared_ssl_context",
    # OpenAIResponsesProvider's assembler of a Responses answer, public in its module for code
    # that feeds it stream events one at a time
    "agentrig.drivers.openai_responses.ResponseAssembler",
}
"""``module.name`` of public-looking definitions deliberately left out of ``agentrig.__all__``."""

DRIVERS_EXPORTS = {
    "agentrig.drivers.openai.OpenAIProvider",
    "agentrig.drivers.openai_responses.OpenAIResponsesProvider",
    "agentrig.drivers.anthropic.AnthropicProvider",
    "agentrig.drivers.pricing.ModelPrice",
    "agentrig.drivers.pricing.PriceTable",
    "agentrig.drivers.network.RealCallPolicy",
    "agentrig.drivers.network.use_real_call_policy",
}
"""Exported from ``agentrig.drivers`` (the providers lazily, so no SDK loads), not from ``agentrig``."""

FAKES_INTENTIONALLY_PRIVATE = {
    "agentrig.fakes.tool.ToolCallRecord",  # the element type of ScriptedTool.calls
    "agentrig.fakes.clock.is_seconds",  # the duration check the fakes share
    "agentrig.fakes.clock.latency_clock",  # which clock the fakes' latencies move
}


def submodules(package: ModuleType, skip: tuple[str, ...] = ()) -> list[ModuleType]:
    names = [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return [
        importlib.import_module(name)
        for name in names
        if not name.startswith(skip) and not any(part.startswith("_") for part in name.split("."))
    ]


def public_definitions(module: ModuleType) -> set[str]:
    """``module.name`` of the public classes and functions defined in ``module``."""
    return {
        f"{module.__name__}.{name}"
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    }


def unexported(package: ModuleType, modules: list[ModuleType]) -> set[str]:
    exported = {getattr(package, name) for name in package.__all__}
    return {
        qualified
        for module in modules
        for qualified in public_definitions(module)
        if getattr(module, qualified.rsplit(".", 1)[1]) not in exported
    }


RUNTIME_MODULES = submodules(agentrig, skip=("agentrig.fakes", "agentrig.harness"))
FAKES_MODULES = submodules(agentrig.fakes)


FRONT_DOORS = [agentrig, agentrig.fakes, agentrig.harness]


@pytest.mark.parametrize("package", FRONT_DOORS, ids=lambda p: p.__name__)
def test_every_name_in_all_exists(package: ModuleType) -> None:
    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert missing == []


FRONT_DOORS = [agentrig, agentrig.fakes, agentrig.harness]


@pytest.mark.parametrize("package", FRONT_DOORS, ids=lambda p: p.__name__)
def test_all_has_no_duplicates(package: ModuleType) -> None:
    assert len(set(package.__all__)) == len(package.__all__)


FRONT_DOORS = [agentrig, agentrig.fakes, agentrig.harness]


@pytest.mark.parametrize("package", FRONT_DOORS, ids=lambda p: p.__name__)
def test_public_names_imported_into_the_package_are_in_all(package: ModuleType) -> None:
    exported = set(package.__all__)
    stray = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and name not in exported
    }
    assert stray == set()


def test_runtime_definitions_are_exported_or_intentionally_private() -> None:
    assert unexported(agentrig, RUNTIME_MODULES) == INTENTIONALLY_PRIVATE | DRIVERS_EXPORTS


def test_drivers_exports_resolve_from_agentrig_drivers() -> None:
    import agentrig.drivers

    names = {qualified.rsplit(".", 1)[1] for qualified in DRIVERS_EXPORTS}
    assert names <= set(agentrig.drivers.__all__)
    assert all(getattr(agentrig.drivers, name).__name__ == name for name in names)


def test_fakes_definitions_are_exported_or_intentionally_private() -> None:
    assert unexported(agentrig.fakes, FAKES_MODULES) == FAKES_INTENTIONALLY_PRIVATE


def test_the_runtime_modules_were_found() -> None:
    names = {module.__name__ for module in RUNTIME_MODULES}
    assert {"agentrig.loop", "agentrig.state.agent_state", "agentrig.capabilities.guards"} <= names
    assert not any(name.startswith(("agentrig.fakes", "agentrig.harness")) for name in names)


def test_exported_errors_share_the_root() -> None:
    errors = [
        getattr(agentrig, name)
        for name in agentrig.__all__
        if inspect.isclass(getattr(agentrig, name))
        and issubclass(getattr(agentrig, name), BaseException)
    ]
    assert errors
    assert all(issubclass(error, agentrig.AgentrigError) for error in errors)


def test_version() -> None:
    assert agentrig.__version__ == "0.1.0"


# --- the harness's front door -----------------------------------------------------------------


def test_harness_names_are_the_ones_their_modules_define() -> None:
    for name in agentrig.harness.__all__:
        value = getattr(agentrig.harness, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue  # a type alias (CassetteProvider)
        module = importlib.import_module(value.__module__)
        assert module.__name__.startswith("agentrig.harness."), name
        assert getattr(module, name) is value, name


def test_harness_front_door_lists_its_names() -> None:
    assert set(agentrig.harness.__all__) <= set(dir(agentrig.harness))


def test_an_unknown_harness_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"'agentrig\.harness' has no attribute 'run_all'"):
        agentrig.harness.run_all  # noqa: B018


def test_importing_the_harness_loads_none_of_it() -> None:
    code = (
        "import sys, agentrig.harness\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentrig.harness.') "
        "or m.split('.')[0] in ('hypothesis', 'syrupy', 'vcr', 'yaml', 'typer', 'rich')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"


def test_the_harness_front_door_runs_a_suite(tmp_path: object) -> None:
    from pathlib import Path

    from agentrig.harness import load_scenarios, normalized, run_suite, write_reports

    folder = Path(str(tmp_path))
    (folder / "hello.scenario.yaml").write_text(
        "name: hello\nturns:\n  - user: hi\n    model: [{say: hello}]\n"
        "    expect: {final_response: hello}\n",
        encoding="utf-8",
    )
    result = normalized(run_suite(load_scenarios(folder)))
    assert result.passed
    write_reports(result, folder / "reports")
    assert (folder / "reports" / "report.json").is_file()


def test_exported_harness_errors_share_the_root() -> None:
    errors = [
        getattr(agentrig.harness, name)
        for name in agentrig.harness.__all__
        if inspect.isclass(getattr(agentrig.harness, name))
        and issubclass(getattr(agentrig.harness, name), BaseException)
    ]
    assert errors
    assert all(issubclass(error, agentrig.AgentrigError) for error in errors)
