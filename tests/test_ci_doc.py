"""docs/ci.md's GitHub Actions workflow works: its ``run:`` steps, played on one machine (each
shard job of the matrix, then the merge job, the artifacts copied as ``actions/upload-artifact``
and ``actions/download-artifact`` would), give the merged reports of a one-machine run and a
job summary holding the Markdown report."""

from __future__ import annotations

import fnmatch
import glob
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentrig.harness import SuiteResult, normalized
from agentrig.harness.cli import app

ROOT = Path(__file__).parents[1]
DOC = ROOT / "docs" / "ci.md"
SUITE = ("tools", "budgets", "multi-turn")


def workflow() -> dict[str, Any]:
    """The first ``yaml`` block of docs/ci.md, parsed."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"^```yaml\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert match is not None, "docs/ci.md has no yaml block"
    data = yaml.safe_load(match.group(1))
    assert isinstance(data, dict)
    return data


def expand(text: str, matrix: dict[str, Any]) -> str:
    """``text`` with ``${{ matrix.KEY }}`` replaced; any other expression is an error here."""

    def value(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        assert expression.startswith("matrix."), f"unexpected expression {expression!r}"
        return str(matrix[expression.removeprefix("matrix.")])

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


class Runner:
    """Plays a job's steps in ``workspace`` (one folder for every job, as a checkout would be;
    the current folder), with ``artifacts`` as the artifact store and ``summary`` as ``$GITHUB_STEP_SUMMARY``."""

    def __init__(self, workspace: Path, artifacts: Path, summary: Path) -> None:
        self.workspace, self.artifacts, self.summary = workspace, artifacts, summary
        self.exit_codes: list[int] = []

    def job(self, job: dict[str, Any], matrix: dict[str, Any]) -> None:
        for step in job["steps"]:
            uses = step.get("uses", "")
            given = {key: expand(str(v), matrix) for key, v in step.get("with", {}).items()}
            if uses.startswith(("actions/checkout@", "actions/setup-python@")):
                continue  # this checkout, this interpreter
            if uses.startswith("actions/upload-artifact@"):  # nothing to upload: a warning
                if (self.workspace / given["path"]).is_dir():
                    shutil.copytree(self.workspace / given["path"], self.artifacts / given["name"])
            elif uses.startswith("actions/download-artifact@"):
                for artifact in sorted(self.artifacts.iterdir()):
                    if fnmatch.fnmatch(artifact.name, given["pattern"]):
                        shutil.copytree(artifact, self.workspace / given["path"] / artifact.name)
            else:
                assert not uses, f"a step this test cannot play: {uses}"
                self.script(expand(step["run"], matrix))

    def script(self, script: str) -> None:
        if script.strip() == "pip install .":
            return  # installed already
        if script.startswith("agentrig "):  # in this process: fast, and this checkout's code
            words = shlex.split(script)[1:]
            args = [part for word in words for part in self.globbed(word)]
            self.exit_codes.append(CliRunner().invoke(app, args).exit_code)
            return
        env = {"PATH": "/usr/bin:/bin", "GITHUB_STEP_SUMMARY": str(self.summary)}
        done = subprocess.run(
            ["bash", "-e", "-c", script], cwd=self.workspace, env=env, check=False
        )
        assert done.returncode == 0, script

    @staticmethod
    def globbed(word: str) -> list[str]:
        return sorted(glob.glob(word)) if "*" in word else [word]


def test_the_workflow_merges_the_shards_into_a_one_machine_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = workflow()
    shard_job, merge_job = flow["jobs"]["shard"], flow["jobs"]["merge"]
    shards = shard_job["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    assert shard_job["strategy"]["fail-fast"] is False
    assert merge_job["needs"] == "shard"
    assert merge_job["if"] == "always()"
    runs = " ".join(step.get("run", "") for step in shard_job["steps"])
    assert f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in runs
    workspace = tmp_path / "checkout"
    for folder in SUITE:  # a part of the bundled suite: every shard gets some of each
        shutil.copytree(ROOT / "scenarios" / folder, workspace / "scenarios" / folder)
    monkeypatch.chdir(workspace)
    summary = tmp_path / "summary.md"
    play = Runner(workspace, tmp_path / "artifacts", summary)
    (tmp_path / "artifacts").mkdir()
    for shard in shards:
        play.job(shard_job, {"shard": shard})
    play.job(merge_job, {})
    assert play.exit_codes == [0] * (len(shards) + 1)
    one = CliRunner().invoke(app, ["run", "scenarios/", "--report-dir", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    merged, alone = (
        SuiteResult.from_dict(json.loads((folder / "report.json").read_text(encoding="utf-8")))
        for folder in (workspace / "reports", tmp_path / "one")
    )
    assert merged.total == alone.total > len(shards)
    assert normalized(merged) == normalized(alone)
    report = (workspace / "reports" / "report.md").read_text(encoding="utf-8")
    assert summary.read_text(encoding="utf-8") == report
    assert sorted(p.name for p in (tmp_path / "artifacts" / "reports").iterdir()) == [
        "junit.xml",
        "report.html",
        "report.json",
        "report.md",
    ]


@pytest.mark.parametrize("missing", [1, 3])
def test_the_merge_job_fails_when_a_shard_uploaded_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: int
) -> None:
    flow = workflow()
    workspace = tmp_path / "checkout"
    (workspace / "scenarios").mkdir(parents=True)
    shutil.copy(
        ROOT / "scenarios" / "tools" / "weather-two-cities.scenario.yaml", workspace / "scenarios"
    )
    monkeypatch.chdir(workspace)
    play = Runner(workspace, tmp_path / "artifacts", tmp_path / "summary.md")
    (tmp_path / "artifacts").mkdir()
    for shard in flow["jobs"]["shard"]["strategy"]["matrix"]["shard"]:
        if shard != missing:
            play.job(flow["jobs"]["shard"], {"shard": shard})
    play.job(flow["jobs"]["merge"], {})
    assert play.exit_codes[-1] == 2
    assert not (tmp_path / "summary.md").exists()
