"""agentrig in someone else's project: the wheel built from this checkout, installed into a fresh
virtual environment outside the repository, runs a scenario with ``agentrig run`` and a test
under pytest with the plugin, as the README's "Use it in your project" says.

The wheel is built without network (the build backend's hook in this environment: hatchling
comes with the ``dev`` extra) and installed with ``--no-index``. The new environment sees this interpreter's installed
packages through a ``.pth`` line, so its dependencies need no download either (nor does pip,
which it runs from there, as a user runs their environment's own); agentrig itself comes only
from the wheel (the test checks where it is imported from). Its pytest loads the plugins of what
``agentrig[test]`` installs, as a new project's would, not every plugin installed here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import venv
from importlib.metadata import entry_points
from pathlib import Path
from textwrap import dedent

import pytest

ROOT = Path(__file__).parents[1]

SCENARIO = """\
name: greets
turns:
  - user: Say hello.
    model: [{say: Hello!}]
    expect: {status: completed, final_response: Hello!, messages: [user, assistant]}
"""

TEST_MODULE = """\
import agentrig as ar


def test_my_agent_against_the_scenario(agentrig_harness):
    agentrig_harness.assert_passes("scenarios/greets.scenario.yaml", builder=ar.AgentBuilder.base())


def test_fakes_are_at_hand(scripted_llm, fake_clock):
    assert fake_clock is not None
"""


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd`` with a clean environment; fail with its output on error."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (
        f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout."""
    pytest.importorskip("hatchling", reason="the dev extra brings hatchling to build the wheel")
    out = tmp_path_factory.mktemp("wheel")
    # the build backend's PEP 517 hook in the checkout, as `pip wheel --no-build-isolation`
    # calls it (the same wheel, byte for byte), without pip's start-up around it
    hook = "import sys, hatchling.build as backend; backend.build_wheel(sys.argv[1])"
    run(sys.executable, "-c", hook, out, cwd=ROOT)
    (built,) = out.glob("agentrig-*.whl")
    return built


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> tuple[Path, Path]:
    """A project folder and its fresh environment, outside the repository, with the wheel in."""
    base = tmp_path_factory.mktemp("elsewhere")
    assert not base.resolve().is_relative_to(ROOT.resolve())
    environment = base / "venv"
    venv.EnvBuilder(with_pip=False).create(environment)
    python = environment / "bin" / "python"
    site = Path(
        run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=base)
        .stdout.strip()
    )  # fmt: skip
    outer = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_dependencies.pth").write_text("\n".join(sorted(outer)) + "\n", encoding="utf-8")
    # --no-compile: the environment's first imports write the bytecode of the modules used, not
    # pip of all of them (run() lets the children write it)
    run(
        python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
        f"{wheel}[test]",
        cwd=base,
    )  # fmt: skip
    folder = base / "my-project"
    (folder / "scenarios").mkdir(parents=True)
    (folder / "scenarios" / "greets.scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    (folder / "test_agent.py").write_text(TEST_MODULE, encoding="utf-8")
    return folder, environment


@pytest.mark.slow
def test_the_wheel_is_what_the_new_environment_imports(project: tuple[Path, Path]) -> None:
    folder, environment = project
    where = run(environment / "bin" / "python", "-c", "import agentrig; print(agentrig.__file__)",
                cwd=folder)  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(environment)
    requires = run(
        environment / "bin" / "python", "-c",
        "import importlib.metadata as m; print('\\n'.join(m.requires('agentrig')))",
        cwd=folder,
    ).stdout  # fmt: skip
    for package in ("pytest", "hypothesis", "syrupy"):
        assert any(
            line.startswith(package) and "extra == 'test'" in line.replace('"', "'")
            for line in requires.splitlines()
        ), requires


@pytest.mark.slow
def test_agentrig_run_works_in_the_new_project(project: tuple[Path, Path]) -> None:
    folder, environment = project
    done = run(environment / "bin" / "agentrig", "run", "scenarios", cwd=folder)
    assert "1 passed, 0 failed" in done.stdout
    assert (folder / "reports" / "report.html").is_file()


@pytest.mark.slow
def test_pytest_with_the_plugin_works_in_the_new_project(project: tuple[Path, Path]) -> None:
    folder, environment = project
    (folder / "pytest.ini").write_text(
        dedent("""\
            [pytest]
            addopts = -p no:cacheprovider
            agentrig_scenarios = true
        """),
        encoding="utf-8",
    )
    done = run(environment / "bin" / "python", "-m", "pytest", "-q", *plugins_not_brought(),
               cwd=folder)  # fmt: skip
    assert "3 passed" in done.stdout, done.stdout


def plugins_not_brought() -> list[str]:
    """``-p no:NAME`` for each pytest plugin installed here that neither agentrig's dependencies
    nor its ``test`` extra bring (the frameworks', respx, xdist, vcr...: a new project has none
    of them; the dependencies of those packages bring no plugin either)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    brought = {"agentrig", *(_name(re.split(r"[\s<>=!~;\[]", line)[0]) for line in required)}
    return [
        option
        for plugin in entry_points(group="pytest11")
        if plugin.dist is None or _name(plugin.dist.name) not in brought
        for option in ("-p", f"no:{plugin.name}")
    ]


def _name(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()
