"""examples/live/ as a folder: ``agentrig run`` plays the scripts ``agentrig serve`` serves
(the agent's model, the simulated user's, the judge's) on agentrig's runtime, as it does the
bundled endpoint scenarios, and leaves the live scenario for ``--live``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "live"


def test_agentrig_run_on_the_example_folder_passes_its_model_scripts(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    done = subprocess.run(
        [sys.executable, "-c", "from agentrig.harness.cli import main; main()", "run", "."],
        cwd=project,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        text=True,
        timeout=120,  # a repeating tool call used to loop here for ever
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 live scenario(s) not run: add --live" in done.stderr
    report = json.loads((project / "reports" / "report.json").read_text())
    ran = {s["name"]: s["passed"] for s in report["scenarios"]}
    assert ran == {"refund-model": True, "refund-user": True, "refund-judge": True}
