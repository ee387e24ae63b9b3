"""The benchmark scripts run: each once, with tiny sizes, in a subprocess (so they cannot rot).

No timing is asserted: only that a script exits 0, prints its table headers, checks its own
results and writes its ``--json`` file. The peer frameworks (the ``bench`` extra) are optional:
a peer that is not installed must be reported as skipped, never fail the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
PEERS = ("pydantic-ai", "langgraph", "openai-agents")


def run_script(*args: str, timeout: float = 120) -> str:
    """Run ``python bench/<args>``; return its output, failing with it on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def test_loop_quick(tmp_path: Path) -> None:
    saved = tmp_path / "loop.json"
    output = run_script(str(BENCH / "loop.py"), "--quick", "--json", str(saved))
    for header in ("agentrig us/step", "floor us/step", "agentrig/floor", "agentrig peak KiB"):
        assert header in output
    assert "growth ratio (us/step at N=5 / us/step at N=3)" in output
    data = json.loads(saved.read_text())
    assert [row["n"] for row in data["results"]] == [3, 5]
    assert all(row["agentrig_us_per_step"] > 0 for row in data["results"])


def test_peers_quick(tmp_path: Path) -> None:
    saved = tmp_path / "peers.json"
    output = run_script(
        str(BENCH / "peers.py"), "--sizes", "2", "--repeats", "1", "--json", str(saved)
    )
    for header in ("framework", "us/step", "vs agentrig", "growth ratio"):
        assert header in output
    frameworks = {row["framework"] for row in json.loads(saved.read_text())["results"]}
    assert "agentrig" in frameworks
    for peer in PEERS:  # each peer either ran (its results were checked) or was skipped
        assert (peer in frameworks) != (f"skipped: {peer} not installed" in output), output


def test_peers_skip_what_is_not_installed() -> None:
    # Hide the peer packages from this run: importing them raises ImportError.
    hide = "import sys; sys.modules.update(dict.fromkeys(['pydantic_ai', 'langgraph', 'agents']))"
    start = (
        f"{hide}; sys.path.insert(0, {str(BENCH)!r}); "
        "sys.argv = ['peers.py', '--sizes', '2', '--repeats', '1']; "
        f"import runpy; runpy.run_path({str(BENCH / 'peers.py')!r}, run_name='__main__')"
    )
    output = run_script("-c", start)
    for peer in PEERS:
        assert f"skipped: {peer} not installed (pip install 'agentrig[bench]')" in output
    assert "no peer ran" in output


def test_suite_quick(tmp_path: Path) -> None:
    saved = tmp_path / "suite.json"
    output = run_script(str(BENCH / "suite.py"), "--quick", "--json", str(saved))
    for header in ("workers", "scenarios/s", "to_json us", "round trip us", "us/message"):
        assert header in output
    data = json.loads(saved.read_text())
    assert [row["workers"] for row in data["suite"]] == [1, 2]
    assert all("10 passed, 0 failed" in row["summary"] for row in data["suite"])
    assert [row["messages"] for row in data["serialization"]] == [10, 100]


@pytest.mark.parametrize("script", ["loop.py", "peers.py", "suite.py"])
def test_help(script: str) -> None:
    output = run_script(str(BENCH / script), "--help")
    for option in ("--quick", "--sizes", "--repeats", "--json"):
        assert option in output
