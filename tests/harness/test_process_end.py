"""A process whose program is agentrig's command, or pytest collecting scenarios, ends without
the interpreter's last full collection visiting what it held: it is frozen first. A pytest run
inside another program leaves that program's collector as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = "name: {name}\nturns:\n  - user: hi\n    model: [{{say: hello}}]\n"

# Registered first, so run last (atexit is last in, first out): how many objects are frozen
# once every other exit handler, pytest's own and agentrig's, has run.
PROBE = (
    "import atexit, gc\natexit.register(lambda: print('frozen at exit:', gc.get_freeze_count()))\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("a", "b"):
        (tmp_path / f"{name}.scenario.yaml").write_text(SCENARIO.format(name=name))
    (tmp_path / "probe.py").write_text(PROBE)
    return tmp_path


def frozen_at_exit(project: Path, *command: str) -> int:
    """Run ``command`` in ``project`` (only the pytest plugins it names load) and read the
    probe's line."""
    # PYTHONPATH kept after the project: a checkout run with PYTHONPATH=src tests its own code
    paths = [str(project), *filter(None, [os.environ.get("PYTHONPATH")])]
    environment = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONPATH": os.pathsep.join(paths),
    }
    done = subprocess.run(
        command, cwd=project, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("frozen at exit:")]
    return int(line.split(":")[1])


def test_pytest_as_the_program_freezes_what_it_collected_at_exit(project: Path) -> None:
    pytest_run = [sys.executable, "-m", "pytest", "-p", "probe", "-p", "agentrig", "-q"]
    assert frozen_at_exit(project, *pytest_run, "--agentrig-scenarios", ".") > 0


def test_a_pytest_run_inside_another_program_leaves_its_collector_alone(project: Path) -> None:
    program = (
        "import probe, pytest\npytest.main(['-p', 'agentrig', '-q', '--agentrig-scenarios', '.'])\n"
    )
    assert frozen_at_exit(project, sys.executable, "-c", program) == 0


def test_agentrigs_command_ends_frozen(project: Path) -> None:
    program = "import probe\nfrom agentrig.harness.cli import main\nmain()\n"
    assert frozen_at_exit(project, sys.executable, "-c", program, "validate", ".") > 0


STARTPROBE = """
import gc
from agentrig.harness import ReportWriter, register_writer

print("frozen at start:", gc.get_freeze_count())

@register_writer
class Probe(ReportWriter):
    name = "probe"
    filename = "probe.txt"

    def render(self, result):
        print("frozen when reporting:", gc.get_freeze_count())
        return ""
"""


def frozen_counts(project: Path, program: str) -> dict[str, int]:
    """The frozen objects' count at the start of ``agentrig run`` (its plugin imported) and when
    it reports, the command run by ``program``."""
    (project / "startprobe.py").write_text(STARTPROBE)
    paths = [str(project), *filter(None, [os.environ.get("PYTHONPATH")])]
    done = subprocess.run(
        [sys.executable, "-c", program, "run", "--plugin", "startprobe", "--report", "probe", "."],
        cwd=project,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line.split(":") for line in done.stdout.splitlines() if line.startswith("frozen ")]
    return {when: int(count) for when, count in lines}


def test_agentrigs_command_freezes_its_imports_and_scenarios_before_it_runs(
    project: Path,
) -> None:
    """What the command's imports made is frozen when it starts, the scenarios once loaded:
    the full collections a run triggers as its objects pile up walk only those."""
    counts = frozen_counts(project, "from agentrig.harness.cli import main\nmain()\n")
    assert counts["frozen at start"] > 10_000  # the modules, classes and functions imported
    assert counts["frozen when reporting"] > counts["frozen at start"]


def test_the_command_invoked_in_another_program_leaves_its_collector_alone(
    project: Path,
) -> None:
    program = "import sys\nfrom agentrig.harness.cli import app\napp()\n"
    assert frozen_counts(project, program) == {"frozen at start": 0, "frozen when reporting": 0}
