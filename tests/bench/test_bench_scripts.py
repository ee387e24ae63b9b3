"""The benchmark scripts run: each once, with tiny sizes (so they cannot rot).

No timing is asserted: only that a script exits 0, prints its table headers, checks its own
results and writes its ``--json`` file. The peer frameworks (the ``bench`` extra) are optional:
a peer that is not installed must be reported as skipped, never fail the run.

The scripts run in this process, as ``python bench/SCRIPT`` would run them (``run_here``): their
imports (agentrig, the SDKs, the peer frameworks) were most of what a fresh interpreter spent on
them. Those that measure processes (start-up, loading, workers) start each measured process
themselves, so their figures are the same; ``rounds.py``, whose contenders are other
interpreters and revisions, runs in a subprocess as a user runs it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import runpy
import subprocess
import sys
import warnings
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType

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


def run_here(script: str, *args: str) -> str:
    """Run ``python bench/<script> ARGS`` in this process: the script as ``__main__``, its
    folder first on ``sys.path``, ``sys.argv`` its command line; return its output, failing
    with it on a non-zero exit. ``sys.argv``, ``sys.path`` and the environment are restored
    after, and the bench modules it imported forgotten (the next script imports its own)."""
    path = BENCH / script
    argv, search, environ, modules = sys.argv, list(sys.path), dict(os.environ), set(sys.modules)
    output = io.StringIO()
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(BENCH))
    code: object = 0
    try:
        with (
            contextlib.redirect_stdout(output),
            contextlib.redirect_stderr(output),
            warnings.catch_warnings(),
        ):
            _interpreter_warning_filters()
            try:
                runpy.run_path(str(path), run_name="__main__")
            except SystemExit as stopped:
                code = stopped.code or 0
                if isinstance(code, str):  # the message SystemExit prints, then status 1
                    print(code, file=sys.stderr)
    finally:
        sys.argv, sys.path[:] = argv, search
        os.environ.clear()
        os.environ.update(environ)
        for name in set(sys.modules) - modules:
            if str(getattr(sys.modules[name], "__file__", "")).startswith(str(BENCH)):
                del sys.modules[name]
    assert code == 0, output.getvalue()
    return output.getvalue()


def _interpreter_warning_filters() -> None:
    """The warning filters of ``python SCRIPT`` (not the suite's, which raise): deprecations
    shown for ``__main__`` only, resource warnings ignored, the rest printed once."""
    warnings.resetwarnings()
    warnings.simplefilter("default")
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")


def git_worktrees() -> str:
    """``git worktree list`` of this checkout."""
    return subprocess.run(
        ["git", "-C", str(BENCH.parent), "worktree", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_loop_quick(tmp_path: Path) -> None:
    saved = tmp_path / "loop.json"
    # one sample of each: the parallel-tools workload sleeps 0.1 s of real time a repeat
    output = run_here("loop.py", "--quick", "--repeats", "1", "--json", str(saved))
    for header in ("agentrig us/step", "floor us/step", "agentrig/floor", "agentrig peak KiB"):
        assert header in output
    assert "growth ratio (us/step at N=5 / us/step at N=3)" in output
    data = json.loads(saved.read_text())
    # The interpreter is part of what was measured: its build changes the figures.
    assert f"python: CPython {data['machine']['python']}" in output
    assert data["machine"]["executable"] == sys.executable
    assert f"libpython {data['machine']['libpython']}" in output
    assert data["machine"]["libpython"] in ("shared", "static")
    assert [row["n"] for row in data["results"]] == [3, 5]
    assert all(row["agentrig_us_per_step"] > 0 for row in data["results"])
    assert all(row["async_us_per_step"] > 0 for row in data["results"])
    assert data["parallel_tools"]["async_ms"] > 0


def test_loop_sync_only_times_the_sync_path_and_the_floor(tmp_path: Path) -> None:
    saved = tmp_path / "loop.json"
    output = run_here("loop.py", "--quick", "--sync-only", "--json", str(saved))
    assert "async" not in output
    data = json.loads(saved.read_text())
    assert all(row["agentrig_us_per_step"] > 0 for row in data["results"])
    assert all(row["async_us_per_step"] is None for row in data["results"])
    assert data["parallel_tools"] is None


@pytest.mark.slow
def test_peers_quick(tmp_path: Path) -> None:
    saved = tmp_path / "peers.json"
    output = run_here("peers.py", "--quick", "--sizes", "2", "--repeats", "1", "--json", str(saved))
    for header in (
        "framework",
        "sync us/step",
        "async us/step",
        "sync vs agentrig",
        "async vs agentrig",
        "async/sync",
        "sync growth ratio",
        "async growth ratio",
    ):
        assert header in output
    results = json.loads(saved.read_text())["results"]
    frameworks = {row["framework"] for row in results}
    assert "agentrig" in frameworks
    for peer in PEERS:  # each peer either ran (its results were checked) or was skipped
        assert (peer in frameworks) != (f"skipped: {peer} not installed" in output), output
    # every framework that ran was measured through both its sync and its async entry point
    entries = {(row["framework"], row["entry"]) for row in results}
    assert entries == {(name, entry) for name in frameworks for entry in ("sync", "async")}
    assert all(row["us_per_step"] > 0 for row in results)


def test_peers_skip_what_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Hide the peer packages from this run: importing them raises ImportError.
    hidden = ("pydantic_ai", "langgraph", "agents")
    for name in [name for name in sys.modules if name.partition(".")[0] in hidden] + [*hidden]:
        monkeypatch.setitem(sys.modules, name, None)
    output = run_here("peers.py", "--quick", "--sizes", "2", "--repeats", "1")
    for peer in PEERS:
        assert f"skipped: {peer} not installed (pip install -e '.[bench]')" in output
    assert "no peer ran" in output


@pytest.fixture
def children_skip_other_plugins(
    monkeypatch: pytest.MonkeyPatch, other_plugins_off: tuple[str, ...]
) -> None:
    """The pytest runs a script starts (``--agentrig-scenarios --collect-only``) load no
    installed plugin but agentrig's (``PYTEST_ADDOPTS``): each imported respx, hypothesis,
    syrupy, vcr... (0.35 CPU s) for a figure the test does not look at. The script's code is
    the same; a user's run measures collection with their own plugins."""
    monkeypatch.setenv("PYTEST_ADDOPTS", " ".join(other_plugins_off))


@pytest.mark.slow
@pytest.mark.usefixtures("children_skip_other_plugins")
def test_suite_quick(tmp_path: Path) -> None:
    saved = tmp_path / "suite.json"
    output = run_here("suite.py", "--quick", "--json", str(saved))
    for header in ("workers", "scenarios/s", "peak MiB", "to_json us", "us/message"):
        assert header in output
    assert "every invariant on / none (harness without checks)" in output
    data = json.loads(saved.read_text())
    assert [row["workers"] for row in data["suite"]] == [1, 2, "auto"]
    assert all("10 passed, 0 failed" in row["summary"] for row in (*data["suite"], data["bare"]))
    ratios = data["ratios"]
    for measure in ("checks_over_bare", "load_s", "collect_s", "two_over_one", "peak_mib"):
        assert ratios[measure] > 0, measure
    assert [row["messages"] for row in data["serialization"]] == [10, 100]


def test_live_stats_quick(tmp_path: Path) -> None:
    saved = tmp_path / "live_stats.json"
    output = run_here("live_stats.py", "--quick", "--seed", "3", "--json", str(saved))
    for header in ("exact (sum)", "wilson (sum)", "exact wrong", "median n", "µs/call"):
        assert header in output
    data = json.loads(saved.read_text())
    assert (data["seed"], data["suites"], data["max_trials"]) == (3, 50, 200)
    assert len(data["coverage"]) == 25
    assert all(row["exact_coverage_summed"] >= 0.95 for row in data["coverage"])
    assert [row["where"] for row in data["sequential"][:5]] == [
        "p0-0.1",
        "p_low",
        "p0",
        "p_high",
        "p0+0.1",
    ]
    for row in data["sequential"]:
        assert row["pass"] + row["fail"] + row["inconclusive"] == pytest.approx(1.0)
    assert all(row["us_per_call"] > 0 for row in data["speed"])


@pytest.mark.slow
def test_endpoint_quick(tmp_path: Path) -> None:
    saved = tmp_path / "endpoint.json"
    output = run_here("endpoint.py", "--quick", "--json", str(saved))
    for header in ("sdk", "mode", "contender", "µs/call", "vs floor", "answered by"):
        assert header in output
    data = json.loads(saved.read_text())
    ran = {(row["sdk"], row["mode"], row["contender"]) for row in data["results"]}
    skipped = {(skip["sdk"], skip["mode"], skip["peer"]) for skip in data["skipped"]}
    for sdk in ("openai", "anthropic", "gemini"):
        for mode in ("in-process", "loopback"):
            assert {(sdk, mode, "floor"), (sdk, mode, "agentrig endpoint")} <= ran
            assert f"{sdk} {mode}: endpoint/floor" in output
        # each peer either ran (its answers were checked) or was reported skipped, with a reason
        for mode, peer in (("in-process", "llm-mock"), ("loopback", "mockllm")):
            assert ((sdk, mode, peer) in ran) != ((sdk, mode, peer) in skipped), output
    for skip in data["skipped"]:
        assert f"skipped: {skip['reason']}" in output
    assert all(row["us_per_call"] > 0 for row in data["results"])
    floors = {
        (r["sdk"], r["mode"]): r["us_per_call"]
        for r in data["results"]
        if r["contender"] == "floor"
    }
    for row in data["results"]:
        assert row["vs_floor"] == pytest.approx(
            row["us_per_call"] / floors[row["sdk"], row["mode"]]
        )


class TestEndpointPeers:
    """A peer that cannot run is a line in the report, never a failed run."""

    def skip_reason(self, error: Exception) -> str:
        endpoint = load_script("endpoint")

        def load() -> object:
            raise error

        skipped: list[dict[str, str]] = []
        sdk = endpoint.SDKS[0]
        found = endpoint.peer(sdk, "in-process", "llm-mock", skipped, ExitStack(), load)
        assert found == []
        (skip,) = skipped
        assert (skip["sdk"], skip["mode"], skip["peer"]) == ("openai", "in-process", "llm-mock")
        return skip["reason"]

    def test_not_installed(self) -> None:
        reason = self.skip_reason(ImportError("No module named 'llm_mock'"))
        assert reason == "llm-mock not installed (pip install -e '.[bench]')"

    def test_cannot_serve_the_workload(self) -> None:
        error = load_script("endpoint").peers.CannotServe(
            "llm-mock cannot serve the workload: no tool call"
        )
        assert self.skip_reason(error) == "llm-mock cannot serve the workload: no tool call"


def test_endpoint_help() -> None:
    output = run_here("endpoint.py", "--help")
    for option in ("--quick", "--repeats", "--json"):
        assert option in output


def test_steps_quick(tmp_path: Path) -> None:
    saved = tmp_path / "steps.json"
    output = run_here("steps.py", "--quick", "--json", str(saved))
    assert "checked ms/step" in output
    runs = json.loads(saved.read_text())["runs"]
    assert [run["steps"] for run in runs] == [10, 25]
    assert all(run["checked_cpu_s"] > 0 and run["unchecked_cpu_s"] > 0 for run in runs)


@pytest.mark.usefixtures("children_skip_other_plugins")
def test_loading_quick(tmp_path: Path) -> None:
    saved = tmp_path / "loading.json"
    output = run_here("loading.py", "--quick", "--json", str(saved))
    assert "a bad file: " in output
    assert ":15: agent.trace_mode: 'sideways' is not one of" in output
    rows = json.loads(saved.read_text())["rows"]
    names = ["import", "load", "collect", "collect, every plugin", "import run"]
    assert [row["what"] for row in rows] == names
    assert all(row["files"] == 20 and row["wall_s"] > 0 and row["peak_mib"] > 0 for row in rows)
    # loading and collecting say when they were ready, before their process ended
    for row in rows[1:4]:
        assert 0 < row["ready_wall_s"] < row["wall_s"], row
        assert 0 < row["ready_cpu_s"] <= row["cpu_s"], row
    assert "ready_wall_s" not in rows[0]
    assert "ready_wall_s" not in rows[4]
    assert "wall s until ready: start-up + loading <= 1 s" in output


def test_workers_quick(tmp_path: Path) -> None:
    saved = tmp_path / "workers.json"
    output = run_here("workers.py", "--quick", "--json", str(saved))
    assert "worker peak MiB" in output
    rows = json.loads(saved.read_text())["rows"]
    assert [row["workers"] for row in rows] == [1, 2, "auto"]
    assert rows[0]["worker_peak_mib"] == 0
    assert rows[1]["worker_peak_mib"] > 0
    assert rows[1]["workers_cpu_s"] > 0


@pytest.mark.parametrize(
    "script",
    ["loop.py", "peers.py", "suite.py", "rounds.py", "steps.py", "loading.py", "workers.py"],
)
def test_help(script: str) -> None:
    output = run_here(script, "--help")
    for option in ("--quick", "--sizes", "--repeats", "--json"):
        assert option in output


def load_script(name: str) -> ModuleType:
    """Import ``bench/<name>.py`` as a module (its helpers import from ``bench/``)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while being made
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def peer_results(agentrig: float, **peers: float) -> dict[str, dict[str, float]]:
    rows = {"agentrig": {"us_per_step": agentrig}}
    rows.update({name: {"us_per_step": us} for name, us in peers.items()})
    return rows


class TestPeersReferenceCheck:
    def test_scales_agentrig_by_how_much_slower_the_fastest_peer_ran(self) -> None:
        peers = load_script("peers")
        results = {
            10: peer_results(150.0, langgraph=4000.0, openai_agents=5000.0),
            300: peer_results(120.0, langgraph=6200.0, pydantic_ai=9000.0),
        }
        check = peers.reference_check(results)
        assert [row["fastest_peer"] for row in check["rows"]] == ["langgraph", "langgraph"]
        assert [row["machine_slowdown"] for row in check["rows"]] == [2.0, 2.0]
        assert [row["agentrig_us_per_step_scaled"] for row in check["rows"]] == [75.0, 60.0]
        assert check["worst_scaled_us_per_step"] == 75.0
        assert check["met_scaled"] is True

    def test_a_miss_is_reported(self) -> None:
        peers = load_script("peers")
        check = peers.reference_check({10: peer_results(300.0, langgraph=2000.0)})
        assert check["worst_scaled_us_per_step"] == 300.0
        assert check["met_scaled"] is False

    def test_no_estimate_without_a_peer_at_a_quoted_size(self) -> None:
        peers = load_script("peers")
        assert peers.reference_check({10: peer_results(90.0)}) is None
        assert peers.reference_check({100: peer_results(90.0, langgraph=4000.0)}) is None


class TestLoopTargetCheck:
    def rows(self, *pairs: tuple[int, float, float]) -> list[dict[str, float]]:
        return [
            {"n": n, "agentrig_us_per_step": agentrig, "floor_us_per_step": floor}
            for n, agentrig, floor in pairs
        ]

    def test_measured_and_floor_scaled_verdicts(self) -> None:
        loop = load_script("loop")
        check = loop.target_check(self.rows((10, 120.0, 16.0), (1000, 90.0, 24.0)), 0.75)
        assert check["worst_us_per_step"] == 120.0
        assert check["met_as_measured"] is False
        assert check["worst_us_per_step_scaled_to_reference"] == 60.0  # 120 * 8 / 16
        assert check["met_scaled_to_reference"] is True
        assert check["growth_met"] is True
        assert "MISSED" in check["lines"][0]

    def test_growth_over_the_target_is_missed(self) -> None:
        loop = load_script("loop")
        check = loop.target_check(self.rows((10, 50.0, 8.0), (1000, 90.0, 8.0)), 1.8)
        assert check["met_as_measured"] is True
        assert check["growth_met"] is False


class TestRounds:
    @staticmethod
    def two_quick_rounds(saved: Path, *options: str) -> str:
        """``rounds.py --quick``, two rounds without pause, results saved to ``saved``."""
        command = ["--quick", "--rounds", "2", "--pause", "0", *options, "--json", str(saved)]
        return run_script(str(BENCH / "rounds.py"), *command, timeout=300)

    def test_quick(self, tmp_path: Path) -> None:
        saved = tmp_path / "rounds.json"
        output = self.two_quick_rounds(saved, "--repeats", "1")  # see test_loop_quick
        assert "agentrig us/step, the worst N of each run:" in output
        data = json.loads(saved.read_text())
        assert [run["round"] for run in data["runs"]] == [1, 2]
        assert {run["python"] for run in data["runs"]} == {sys.executable}
        assert all(run["sizes"] == [3, 5] for run in data["runs"])
        (total,) = data["summary"]
        assert total["runs"] == 2
        worst = [run["worst_us_per_step"] for run in data["runs"]]
        assert total["worst_us_per_step_max"] == max(worst)
        assert total["met_as_measured"] == sum(run["met_as_measured"] for run in data["runs"])

    @pytest.mark.skipif(
        not (BENCH.parent / ".git").exists(), reason="--against needs a git checkout of agentrig"
    )
    def test_against_an_earlier_revision(self, tmp_path: Path) -> None:
        worktrees = git_worktrees()
        saved = tmp_path / "rounds.json"
        output = self.two_quick_rounds(saved, "--against", "HEAD")
        data = json.loads(saved.read_text())
        commit = subprocess.run(
            ["git", "-C", str(BENCH.parent), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        label = f"HEAD ({commit[:9]})"
        assert [run["contender"] for run in data["runs"]] == [sys.executable, label] * 2
        (comparison,) = data["paired"]
        assert comparison["against"] == label
        mine = [run for run in data["runs"] if run["contender"] == sys.executable]
        theirs = [run for run in data["runs"] if run["contender"] == label]
        for index, size in enumerate((3, 5)):
            expected = [
                ours["agentrig_us_per_step"][index] / base["agentrig_us_per_step"][index]
                for ours, base in zip(mine, theirs, strict=True)
            ]
            assert comparison["ratios"][str(size)] == pytest.approx(expected)
        assert f"us/step over {label}'s, round by round:" in output
        assert "loop.py --quick --sync-only" in output  # both time the same work
        # The temporary worktree is gone (other runs sharing this checkout may add their own).
        left = set(git_worktrees().splitlines()) - set(worktrees.splitlines())
        assert not [line for line in left if commit in line]

    def test_a_ref_that_is_not_a_commit_is_named(self) -> None:
        done = subprocess.run(
            [sys.executable, str(BENCH / "rounds.py"), "--quick", "--against", "no-such-ref"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode != 0, done.stdout
        assert "--against no-such-ref: not a commit of this repository" in done.stderr

    def test_paired_ratios_and_their_median(self) -> None:
        rounds = load_script("rounds")

        def run(contender: str, number: int, values: list[float]) -> dict[str, object]:
            return {
                "contender": contender,
                "round": number,
                "sizes": [10, 100],
                "agentrig_us_per_step": values,
            }

        runs = [
            run("new", 1, [80.0, 90.0]),
            run("old", 1, [100.0, 100.0]),
            run("new", 2, [150.0, 120.0]),
            run("old", 2, [200.0, 100.0]),
            run("new", 3, [45.0, 60.0]),
            run("old", 3, [50.0, 50.0]),
        ]
        comparison = rounds.paired(runs, "new", "old")
        assert comparison["ratios"] == {"10": [0.8, 0.75, 0.9], "100": [0.9, 1.2, 1.2]}
        assert comparison["median"] == {"10": 0.8, "100": 1.2}

    def refusal(self, python: Path) -> str:
        """What ``rounds.py --python <python>`` prints on stderr; it must exit non-zero."""
        done = subprocess.run(
            [sys.executable, str(BENCH / "rounds.py"), "--quick", "--python", str(python)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode != 0, done.stdout
        return done.stderr

    def test_an_interpreter_of_another_version_is_refused(self, tmp_path: Path) -> None:
        other = tmp_path / "python9"
        other.write_text("#!/bin/sh\necho 9.9\n")
        other.chmod(0o755)
        assert f"--python {other} is Python 9.9, this one is 3." in self.refusal(other)

    def test_an_interpreter_that_does_not_run_is_named(self, tmp_path: Path) -> None:
        missing = tmp_path / "no-such-python"
        assert f"--python {missing}: cannot run it" in self.refusal(missing)


def test_endpoint_instructions_without_valgrind_says_so(tmp_path: Path) -> None:
    """Without valgrind on the PATH the script says it skipped and exits 0 (the CI machine has
    none; the counting itself takes a minute a SDK, too long for the suite)."""
    done = subprocess.run(
        [sys.executable, str(BENCH / "endpoint_instructions.py"), "--turns", "1"],
        cwd=BENCH.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": str(tmp_path), "PYTHONPATH": ":".join(sys.path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "skipped: valgrind is not installed (apt-get install -y valgrind)"


def test_endpoint_instructions_reads_callgrinds_dumps() -> None:
    script = load_script("endpoint_instructions")
    calls = 10 * 2  # ten turns of two model calls
    dumps = [
        "desc: Trigger: dump floor\nsummary: 30000000\n",
        "desc: Trigger: Client Request: dump endpoint\nsummary: 33000000\n",
        "desc: Trigger: dump endpoint,_nothing_remembered\ntotals: 45000000\n",
        "desc: Trigger: Program termination\nsummary: 999\n",  # what runs after: not a part
    ]
    counted = script.per_call(dumps, calls)
    assert counted == {
        "floor": 1_500_000,
        "endpoint": 1_650_000,
        "endpoint, nothing remembered": 2_250_000,
    }
    rows = script.table([("anthropic", counted)]).splitlines()
    assert rows[2].split() == ["anthropic", "floor", "1,500.0", "1.000x"]
    assert rows[3].split() == ["anthropic", "endpoint", "1,650.0", "1.100x"]
    with pytest.raises(SystemExit, match="no count of: endpoint, nothing remembered"):
        script.per_call(dumps[:2], calls)


def test_live_limits_small() -> None:
    output = run_here("live_limits.py", "--calls", "40", "--cap", "4")
    for header in ("scenario", "limits", "busy", "done/ideal", "min limit", "429s", "lost"):
        assert header in output
    for scenario in ("noise 30%, Retry-After: 0", "server 2, no Retry-After"):
        assert scenario in output


def test_live_quick(tmp_path: Path) -> None:
    saved = tmp_path / "live.json"
    output = run_here("live.py", "--quick", "--json", str(saved))
    for header in ("ms over the floor", "trials/s", "difference", "slots' use", "share"):
        assert header in output
    data = json.loads(saved.read_text())
    # costs exact to the micro-dollar, every user mistake set aside, the replay free of calls
    assert all(row[3] == "$0.000000000" for row in data["cost"][:4])
    assert all(row[2] == row[1] and row[3] == 0 for row in data["user_mistakes"])
    assert data["replay"][1][1] == 0
    assert data["replay"][0][2:] == data["replay"][1][2:]


def test_no_script_speaks_of_an_issue() -> None:
    """Output and docstrings speak of the project alone: "the performance targets", never an
    issue number a reader cannot see."""
    issue = re.compile(r"\bissues?\s*#?\s*\d+|(?<![\w/&=])#\d+\b|\bthe issue\b", re.IGNORECASE)
    found = {
        path.name: hits
        for path in sorted(BENCH.glob("*.py"))
        if (hits := issue.findall(path.read_text(encoding="utf-8")))
    }
    assert found == {}
