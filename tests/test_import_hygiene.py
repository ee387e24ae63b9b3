"""Dependency direction (runtime <- fakes <- harness) and a light ``import agentrig``."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import agentrig

PACKAGE = Path(agentrig.__file__).parent
HEAVY = ("pytest", "hypothesis", "yaml", "syrupy", "rich", "typer", "openai", "anthropic", "vcr")


def imported_modules(path: Path) -> set[str]:
    """Absolute module names the module at ``path`` imports."""
    return imports_of(path.read_text(encoding="utf-8"), path)


def imports_of(source: str, path: Path) -> set[str]:
    """Absolute module names ``source`` (the module at ``path``) imports, at any nesting level."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add(resolve_relative(path, node))
    return found


def resolve_relative(path: Path, node: ast.ImportFrom) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    base = parts[: len(parts) - node.level]
    return ".".join([*base, node.module] if node.module else base)


def modules_under(folder: Path, skip: tuple[str, ...] = ()) -> list[Path]:
    return sorted(
        path
        for path in folder.rglob("*.py")
        if not any(path.relative_to(folder).as_posix().startswith(s) for s in skip)
    )


def offenders(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {}
    for path in paths:
        bad = sorted(
            name
            for name in imported_modules(path)
            if any(name == f or name.startswith(f + ".") for f in forbidden)
        )
        if bad:
            found[path.relative_to(PACKAGE).as_posix()] = bad
    return found


def python_output(code: str, *, cwd: Path | None = None) -> str:
    """The standard output of ``code`` run by a fresh interpreter (failing the test, with its
    standard error, when it does not exit 0)."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("package", ["agentrig", "agentrig.fakes"])
def test_importing_pulls_in_nothing_heavy(package: str) -> None:
    code = (
        f"import json, sys; import {package}; "
        f"print(json.dumps(sorted(m for m in {list(HEAVY)!r} if m in sys.modules)))"
    )
    stdout = python_output(code)
    assert json.loads(stdout) == []


SYNC_RUN = """
import json, sys
import agentrig as ar
from agentrig.fakes import ScriptedLLM, call, reply

@ar.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

llm = ScriptedLLM([call("add", a=2, b=3), reply("5")])
agent = ar.AgentBuilder.base().with_tools([add]).with_capability(ar.UseLlmConfig(llm)).build()
state = agent.execute(agent.new_state("2 + 3?"))
assert state.final_response().to_text() == "5", state
print(json.dumps(sorted(m for m in ("asyncio", "ssl") if m in sys.modules)))
"""


def test_a_sync_run_imports_no_asyncio() -> None:
    """asyncio (and the ssl module it brings) is imported where the async path needs it: about
    20 ms of every start-up that runs synchronously (``agentrig run``, a script, a worker)."""
    stdout = python_output(SYNC_RUN)
    assert json.loads(stdout) == []


def test_importing_agentrig_loads_a_module_only_when_a_name_needs_it() -> None:
    code = (
        "import json, sys, agentrig\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.startswith('agentrig'))\n"
        "before = loaded()\n"
        "agentrig.ExecutionBudget\n"
        "print(json.dumps([before, loaded()]))"
    )
    stdout = python_output(code)
    before, after = json.loads(stdout)
    assert before == ["agentrig"]
    assert "agentrig.budget" in after
    assert not any(name.startswith(("agentrig.loop", "agentrig.sessions")) for name in after)


def test_the_commands_help_imports_no_runtime() -> None:
    """``agentrig --help`` lists the commands: none of the runtime, the results' models or
    pydantic (whose plugin lookup reads every installed distribution's metadata) is needed."""
    code = (
        "import json, sys\n"
        "from agentrig.harness.cli import app\n"
        "try:\n"
        "    app(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    stdout = python_output(code)
    loaded = json.loads(stdout.splitlines()[-1])
    assert "agentrig.harness.cli" in loaded
    heavy = ("pydantic", "agentrig.state", "agentrig.loop", "agentrig.harness.results")
    assert [name for name in loaded if name.startswith(heavy)] == []


def test_modules_import_in_any_order() -> None:
    """Each module imported first, as a program whose first import it is (``import agentrig``
    no longer imports the runtime in one fixed order): the modules whose imports went round
    in a circle through the drivers package, and a module that uses them all."""
    code = (
        "import importlib, sys\n"
        "for name in ('agentrig._effects', 'agentrig.tools', 'agentrig.loop'):\n"
        "    for loaded in [m for m in sys.modules if m.startswith('agentrig')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    python_output(code)


def test_the_live_keys_module_imports_first() -> None:
    """The scenario model and the module of its live keys import each other: a program whose
    first import is the live keys' module gets a complete ``Scenario`` that loads a live file
    (the model, importing the half-built module back, is completed when that module ends)."""
    code = (
        "from agentrig.harness.scenarios.live_model import JudgeSpec\n"
        "from agentrig.harness.scenarios.loader import load_scenario\n"
        "from agentrig.harness.scenarios.model import Scenario\n"
        "assert Scenario.__pydantic_complete__\n"
        "scenario = load_scenario('examples/live/refund.scenario.yaml')\n"
        "assert scenario.is_live and isinstance(scenario.judge, JudgeSpec)\n"
    )
    python_output(code, cwd=PACKAGE.parents[1])


def test_the_runtime_imports_neither_fakes_nor_harness() -> None:
    runtime = modules_under(PACKAGE, skip=("fakes/", "harness/"))
    assert PACKAGE / "loop.py" in runtime
    assert offenders(runtime, ("agentrig.fakes", "agentrig.harness")) == {}


def test_the_fakes_do_not_import_the_harness() -> None:
    fakes = modules_under(PACKAGE / "fakes")
    assert fakes
    assert offenders(fakes, ("agentrig.harness",)) == {}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import agentrig.harness.cli", {"agentrig.harness.cli"}),
        (
            "from agentrig.fakes import ScriptedLLM",
            {"agentrig.fakes", "agentrig.fakes.ScriptedLLM"},
        ),
        ("def f():\n    from ..harness import x", {"agentrig.harness"}),
    ],
)
def test_the_checker_sees_every_import_form(source: str, expected: set[str]) -> None:
    assert imports_of(source, PACKAGE / "capabilities" / "probe.py") >= expected


def test_errors_sit_below_every_other_module() -> None:
    assert {name for name in imported_modules(PACKAGE / "errors.py") if "agentrig" in name} == set()


HARNESS_BASE = {"errors", "data_files"}
"""Modules under every harness stage: its errors, and reading its data files safely."""

HARNESS_STAGES = {
    "scenarios": {"errors"},
    "checks": {"errors", "scenarios"},
    "cassettes": {"errors", "scenarios"},
    "property": {"errors", "scenarios", "checks", "cassettes"},
    "reporting": {"errors", "results", "live_results"},
    "suites": {"errors", "scenarios", "results", "runner"},
    "endpoint": {"errors", "scenarios", "checks", "cassettes", "results", "reporting", "suites"},
    "live": {"errors", "scenarios", "checks", "cassettes", "results", "live_results", "endpoint"},
    "fuzz": {"errors", "scenarios", "results", "endpoint"},
    "scale": {"errors", "scenarios", "cassettes", "results", "runner", "suites", "live"},
}
"""What each harness subpackage may import from the rest of the harness: the stages before it."""


@pytest.mark.parametrize("stage", sorted(HARNESS_STAGES))
def test_each_harness_stage_imports_only_the_stages_before_it(stage: str) -> None:
    reached = {
        name.split(".")[2]
        for path in modules_under(PACKAGE / "harness" / stage)
        for name in imported_modules(path)
        if name.startswith("agentrig.harness.") and name.split(".")[2] != stage
    }
    assert reached <= HARNESS_STAGES[stage] | HARNESS_BASE
