"""The ``agentrig`` CLI given paths that are not files: a FIFO (which blocked every command
forever), a symlink to one, a folder holding one, and /dev/zero (read without end)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrig.harness.cli import app

runner = CliRunner()

GOOD = """\
name: good
turns:
  - user: hi
    model:
      - say: hello
"""


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.output


@pytest.fixture
def fifo_folder(tmp_path: Path) -> Path:
    """A folder with one good scenario, a FIFO named like a scenario, and a symlink to it."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "good.scenario.yaml").write_text(GOOD, encoding="utf-8")
    os.mkfifo(folder / "pipe.scenario.yaml")
    (folder / "link.scenario.yaml").symlink_to(folder / "pipe.scenario.yaml")
    return folder


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("given", ["pipe.scenario.yaml", "link.scenario.yaml", "."])
def test_validate_and_run_refuse_a_fifo_naming_it(
    fifo_folder: Path, tmp_path: Path, bounded: Any, command: str, given: str
) -> None:
    extra = ["--report-dir", str(tmp_path / "reports")] if command == "run" else []
    code, output = bounded(lambda: invoke(command, fifo_folder / given, *extra))
    assert code == 2, output
    shown = "".join(output.split())  # the terminal wraps long paths
    # a folder loads each file once: the symlink, first in order, stands for the FIFO
    named = "link.scenario.yaml" if given == "." else given
    assert str(fifo_folder / named).replace(" ", "") in shown, output
    assert shown.count("notaregularfile:itisaFIFO(namedpipe)") == 1, output
    assert "Traceback" not in output


@pytest.mark.parametrize("given", ["pipe.scenario.yaml", "link.scenario.yaml", "/dev/zero", "."])
def test_convert_refuses_what_is_not_a_file_naming_it(
    fifo_folder: Path, bounded: Any, given: str
) -> None:
    path = Path(given) if given.startswith("/") else fifo_folder / given
    if not path.exists():
        pytest.skip(f"no {path}")
    code, output = bounded(lambda: invoke("convert", path))
    assert code == 2, output
    assert "notaregularfile" in "".join(output.split())
    assert "Traceback" not in output
