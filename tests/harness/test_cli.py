"""The ``agentrig`` CLI: run, validate, schema; exit codes, selection, workers, reports."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from typer.testing import CliRunner

from agentrig.harness.checks.invariant import unregister_invariant
from agentrig.harness.cli import app, auto_workers
from agentrig.harness.reporting import unregister_writer

runner = CliRunner()

PASSING = """\
name: {name}
tags: [{tag}]
agent:
  tools:
    echo:
      params: {{text: string}}
      replies:
        - return: pong
turns:
  - user: ping
    model:
      - call: echo(text=ping)
      - say: pong
    expect:
      status: completed
      final_response: pong
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.scenario.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "scenarios"
    for index, tag in enumerate(["alpha", "beta", "alpha", "gamma"]):
        write(folder, f"case-{index}", PASSING.format(name=f"case-{index}", tag=tag))
    failing = PASSING.format(name="wrong", tag="failing").replace(
        "final_response: pong", "final_response: nope"
    )
    write(folder / "failing", "wrong", failing)
    return folder


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.output


def test_run_passes_writes_every_report_and_skips_failing_folder(
    suite: Path, tmp_path: Path
) -> None:
    code, output = invoke("run", suite, "--report-dir", tmp_path / "out")
    assert code == 0, output
    assert "4 passed, 0 failed" in output
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["junit.xml", "report.html", "report.json", "report.md"]


def test_a_local_run_does_not_load_the_scale_out_package(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default ``--executor local`` needs nothing of ``agentrig.harness.scale`` (Dask's
    side: 75 ms of imports at every start of ``agentrig run``)."""
    package = Path(__file__).parents[2] / "src" / "agentrig" / "harness" / "scale"
    for module in ["", *(f".{path.stem}" for path in package.glob("[!_]*.py"))]:
        monkeypatch.setitem(sys.modules, f"agentrig.harness.scale{module}", None)  # unimportable
    code, output = invoke("run", suite, "--report-dir", tmp_path / "out")
    assert code == 0, output
    assert "4 passed, 0 failed" in output


COLLECTOR_WRITER = """\
import gc
from agentrig.harness.reporting import ReportWriter, register_writer

class CollectorWriter(ReportWriter):
    name = "collector"
    filename = "collector.txt"

    def render(self, result):
        return f"enabled={gc.isenabled()}"

register_writer(CollectorWriter)
"""


def test_run_writes_its_reports_with_the_cyclic_collector_off_and_turns_it_back_on(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "collector_writer.py").write_text(COLLECTOR_WRITER)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    arguments = ["run", suite, "--plugin", "collector_writer", "--report-dir", out]
    try:
        code, output = invoke(*arguments, "--report", "collector", "--report", "json")
    finally:
        unregister_writer("collector")
    assert code == 0, output
    assert (out / "collector.txt").read_text() == "enabled=False"
    assert len(json.loads((out / "report.json").read_text())["scenarios"]) == 4
    assert gc.isenabled()


def test_run_failing_folder_exits_1_with_domain_diff(suite: Path, tmp_path: Path) -> None:
    code, output = invoke("run", suite / "failing", "--report-dir", tmp_path / "out")
    assert code == 1
    assert "0 passed, 1 failed" in output
    assert "expect.final_response" in output
    assert 'expected: {"equals": "nope"}' in output
    assert 'observed: "pong"' in output


def test_keyword_and_shard_select_scenarios(suite: Path, tmp_path: Path) -> None:
    code, output = invoke(
        "run", suite, "-k", "alpha and not case-2", "--report-dir", tmp_path / "o"
    )
    assert code == 0
    assert "1 passed, 0 failed" in output
    seen = []
    for shard in ("1/2", "2/2"):
        code, _ = invoke("run", suite, "--shard", shard, "--report-dir", tmp_path / shard[0])
        assert code == 0
        report = json.loads((tmp_path / shard[0] / "report.json").read_text())
        seen += [s["name"] for s in report["scenarios"]]
    assert sorted(seen) == [f"case-{i}" for i in range(4)]


def test_a_shard_with_nothing_to_run_passes_with_empty_reports(suite: Path, tmp_path: Path) -> None:
    # A CI matrix wider than the suite: the extra jobs must not fail.
    code, output = invoke("run", suite, "--shard", "6/6", "--report-dir", tmp_path / "out")
    assert code == 0, output
    flat = " ".join(output.split())
    assert "shard 6/6: none of the 4 selected scenario(s) falls in this shard" in flat
    assert "0 passed, 0 failed" in flat
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["scenarios"] == []
    assert 'tests="0"' in (tmp_path / "out" / "junit.xml").read_text()


def test_a_shard_of_an_empty_selection_is_still_nothing_selected(suite: Path) -> None:
    assert invoke("run", suite, "-k", "zzz", "--shard", "1/2")[0] == 4


def test_validate_an_empty_folder_says_what_was_searched(tmp_path: Path) -> None:
    code, output = invoke("validate", tmp_path)
    assert code == 4
    assert f"no *.scenario.yaml file found in {tmp_path}" in " ".join(output.split())


def test_nothing_selected_and_bad_options_have_distinct_exit_codes(suite: Path) -> None:
    assert invoke("run", suite, "-k", "zzz")[0] == 4
    code, output = invoke("run", suite, "--shard", "3/2")
    assert code == 2
    assert "--shard" in output


def test_a_bad_file_exits_2_naming_file_line_and_field(tmp_path: Path) -> None:
    bad = write(
        tmp_path, "bad", "name: bad\nturns:\n  - user: hi\n    expect: {status: complete}\n"
    )
    for command in ("run", "validate"):
        options = ("--report-dir", tmp_path / "out") if command == "run" else ()
        code, output = invoke(command, bad, *options)
        assert code == 2
        assert f"{bad}:4" in "".join(output.split())
        flat = " ".join(output.split())
        assert "turns[0].expect.status" in flat
        assert "completed" in flat
    # run reports the file as an error case too: CI keeps its junit.xml
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert 'tests="1" failures="0" errors="1"' in junit
    assert f'file="{bad}" line="4"' in junit


BAD_FILES = {
    "b-syntax": "name: b-syntax\nturns:\n  - user: hi\n   model: []\n",
    "d-field": "name: d-field\nturns:\n  - user: hi\n    expect: {status: complete}\n",
    "e-duplicate": PASSING.format(name="case-0", tag="alpha"),
}


def test_a_malformed_file_is_an_error_case_in_every_report_and_the_rest_runs(
    suite: Path, tmp_path: Path
) -> None:
    for name, text in BAD_FILES.items():
        write(suite, name, text)
    out = tmp_path / "out"
    code, output = invoke("run", suite, "--report-dir", out)
    assert code == 2, output
    flat = " ".join(output.split())
    assert "4 passed, 3 failed (3 file(s) did not load)" in flat
    assert "the file could not be loaded: turns[0].expect.status: 'complete' is not one of" in flat
    report = json.loads((out / "report.json").read_text())
    names = [s["name"] for s in report["scenarios"]]
    assert names == ["b-syntax", "case-0", "case-1", "case-2", "case-3", "d-field", "e-duplicate"]
    broken = {s["name"]: s for s in report["scenarios"] if not s["passed"]}
    lines = {name: scenario["line"] for name, scenario in broken.items()}
    assert lines == {"b-syntax": 4, "d-field": 4, "e-duplicate": 1}
    [syntax] = broken["b-syntax"]["failures"]
    assert syntax["kind"] == "error"
    assert syntax["location"] == f"{suite / 'b-syntax.scenario.yaml'}:4"
    assert "invalid YAML" in syntax["message"]
    [duplicate] = broken["e-duplicate"]["failures"]
    assert "duplicate scenario name 'case-0', also used at" in duplicate["message"]
    junit = (out / "junit.xml").read_text()
    assert 'tests="7" failures="0" errors="3"' in junit
    assert junit.count("<error ") == 3
    assert f'file="{suite / "d-field.scenario.yaml"}" line="4"' in junit
    for page in ("report.md", "report.html"):
        text = (out / page).read_text()
        assert "d-field.scenario.yaml:4" in text
        assert "the file could not be loaded" in text


def test_a_malformed_file_is_reported_by_every_selection_and_one_shard(
    suite: Path, tmp_path: Path
) -> None:
    write(suite, "d-field", BAD_FILES["d-field"])
    code, output = invoke("run", suite, "-k", "zzz", "--report-dir", tmp_path / "k")
    assert code == 2, output
    assert [
        s["name"] for s in json.loads((tmp_path / "k" / "report.json").read_text())["scenarios"]
    ] == ["d-field"]
    seen: list[str] = []
    codes = []
    for shard in ("1/2", "2/2"):
        out = tmp_path / shard[0]
        code, _ = invoke("run", suite, "--shard", shard, "--report-dir", out)
        codes.append(code)
        seen += [s["name"] for s in json.loads((out / "report.json").read_text())["scenarios"]]
    assert sorted(seen) == ["case-0", "case-1", "case-2", "case-3", "d-field"]
    assert sorted(codes) == [0, 2]


def test_a_suite_of_only_malformed_files_still_writes_its_reports(tmp_path: Path) -> None:
    write(tmp_path / "s", "d-field", BAD_FILES["d-field"])
    code, output = invoke("run", tmp_path / "s", "-q", "--report-dir", tmp_path / "out")
    assert code == 2, output
    assert "0 passed, 1 failed (1 file(s) did not load)" in " ".join(output.split())
    assert 'errors="1"' in (tmp_path / "out" / "junit.xml").read_text()


def test_validate_counts_files(suite: Path) -> None:
    code, output = invoke("validate", suite)
    assert code == 0
    assert "4 scenario file(s) valid" in output


def test_schema_writes_the_json_schema(tmp_path: Path) -> None:
    target = tmp_path / "schema.json"
    code, _ = invoke("schema", "-o", target)
    assert code == 0
    schema = json.loads(target.read_text())
    assert schema["title"] == "agentrig scenario file"
    assert "turns" in schema["properties"]


def test_schema_regenerates_a_schema_but_never_replaces_another_file(tmp_path: Path) -> None:
    target = tmp_path / "scenario.schema.json"
    target.write_text('{"title": "agentrig scenario file", "old": true}', encoding="utf-8")
    code, output = invoke("schema", "-o", target)
    assert code == 0, output
    assert "old" not in json.loads(target.read_text())
    scenario = write(tmp_path, "mine", PASSING.format(name="mine", tag="x"))
    code, output = invoke("schema", "-o", scenario)
    assert code == 2
    flat = " ".join(output.split())
    assert f"{scenario} already exists and it is not an agentrig scenario schema" in flat
    assert "--force" in flat
    assert scenario.read_text(encoding="utf-8") == dedent(PASSING.format(name="mine", tag="x"))
    code, _ = invoke("schema", "-o", scenario, "--force")
    assert code == 0
    assert json.loads(scenario.read_text())["title"] == "agentrig scenario file"


def test_the_committed_schema_is_up_to_date() -> None:
    committed = Path(__file__).parents[2] / "scenarios" / "scenario.schema.json"
    code, output = invoke("schema")
    assert code == 0
    assert json.loads(output) == json.loads(committed.read_text()), (
        "scenarios/scenario.schema.json is stale: run `agentrig schema -o scenarios/scenario.schema.json`"
    )


_WALL_TIME = [
    (re.compile(r'"wall_time_s": [0-9.e-]+'), '"wall_time_s": 0'),
    (re.compile(r'time="[^"]*"'), 'time=""'),
    (re.compile(r"Wall time: [0-9.]+ s"), "Wall time: - s"),
    (re.compile(r"\| [0-9.]+ \|$", re.MULTILINE), "| - |"),
]


def without_wall_time(text: str) -> str:
    for pattern, replacement in _WALL_TIME:
        text = pattern.sub(replacement, text)
    return text


def test_reports_are_byte_identical_across_runs_apart_from_wall_time(
    suite: Path, tmp_path: Path
) -> None:
    for run in ("a", "b"):
        assert (
            invoke(
                "run",
                suite,
                "--report-dir",
                tmp_path / run,
                "--workers",
                "2" if run == "b" else "1",
            )[0]
            == 0
        )
    for name in ("junit.xml", "report.json", "report.html", "report.md"):
        first = (tmp_path / "a" / name).read_text()
        second = (tmp_path / "b" / name).read_text()
        assert without_wall_time(first) == without_wall_time(second), name


def test_an_unknown_report_format_exits_2_before_running(suite: Path, tmp_path: Path) -> None:
    code, output = invoke("run", suite, "--report", "pdf", "--report-dir", tmp_path / "out")
    assert code == 2, output
    flat = " ".join(output.split())
    assert "unknown report writer 'pdf'" in flat
    assert "junit" in flat
    assert "passed" not in flat
    assert not (tmp_path / "out").exists()


def test_a_report_dir_that_cannot_be_created_exits_2_with_a_clear_error(
    suite: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("not a folder", encoding="utf-8")
    code, output = invoke("run", suite, "--report-dir", blocker)
    assert code == 2, output
    flat = " ".join(output.split())
    assert "4 passed, 0 failed" in flat
    assert f"cannot write reports to {blocker}" in flat
    assert "--report-dir" in flat
    assert blocker.read_text(encoding="utf-8") == "not a folder"


def test_paths_with_brackets_are_printed_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "[wip]"
    bad = write(folder, "bad", "name: bad\nturns:\n  - user: hi\n    expect: {status: complete}\n")
    code, output = invoke("validate", bad)
    assert code == 2
    assert f"{bad}:4" in "".join(output.split())

    write(folder, "bad", PASSING.format(name="good", tag="'[b]'"))
    code, output = invoke("run", folder, "--report-dir", folder / "out")
    assert code == 0, output
    assert f"reports in {folder / 'out'}/" in "".join(output.split("\n"))
    code, output = invoke("run", folder, "--report-dir", folder / "out", "-v")
    flat = "".join(output.split())
    assert "good" in flat
    assert str(folder / "out" / "report.json") in flat


def test_a_folder_without_scenario_files_says_what_was_searched(tmp_path: Path) -> None:
    (tmp_path / "notes.yaml").write_text("name: x\n", encoding="utf-8")
    code, output = invoke("run", tmp_path)
    assert code == 4
    flat = " ".join(output.split())
    assert f"no *.scenario.yaml file found in {tmp_path}" in flat


def test_a_symlinked_folder_is_searched_once_even_in_a_loop(suite: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    write(shared, "linked", PASSING.format(name="linked", tag="shared"))
    (suite / "shared").symlink_to(shared, target_is_directory=True)
    (shared / "back").symlink_to(suite, target_is_directory=True)  # a loop
    code, output = invoke("run", suite, "-q", "--report-dir", tmp_path / "r")
    assert code == 0, output
    assert "5 passed, 0 failed" in output


def test_a_file_and_its_folder_given_together_run_it_once(suite: Path, tmp_path: Path) -> None:
    code, output = invoke(
        "run", suite / "case-1.scenario.yaml", suite, suite, "-q", "--report-dir", tmp_path / "r"
    )
    assert code == 0, output
    assert "4 passed, 0 failed" in output


def test_schema_into_a_missing_folder_exits_2_with_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "schema.json"
    code, output = invoke("schema", "-o", target)
    assert code == 2, output
    flat = " ".join(output.split())
    assert f"cannot write {target}" in flat
    assert "--output" in flat


class TestValidateChecksWhatRunWould:
    def test_an_unknown_invariant_is_an_error_at_its_line(self, tmp_path: Path) -> None:
        text = PASSING.format(name="typo", tag="a") + "invariants:\n  exclude: [clean_mesages]\n"
        write(tmp_path, "typo", text)
        code, output = invoke("validate", tmp_path)
        assert code == 2, output
        flat = " ".join(output.split())
        assert f"{tmp_path / 'typo.scenario.yaml'}:17" in flat
        assert "unknown invariant(s): clean_mesages" in flat

    def test_a_plugin_registers_the_invariants_a_file_names(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "my_invariants.py").write_text(
            dedent(
                """\
                from agentrig.harness.checks.invariant import Invariant, register_invariant

                @register_invariant
                class AlwaysFine(Invariant):
                    name = "always_fine_for_validate"
                    description = "never fails"

                    def check(self, observation):
                        return ()
                """
            ),
            encoding="utf-8",
        )
        monkeypatch.syspath_prepend(str(tmp_path))
        folder = tmp_path / "suite"
        text = PASSING.format(name="custom", tag="a")
        write(folder, "custom", text + "invariants:\n  only: [always_fine_for_validate]\n")
        assert invoke("validate", folder)[0] == 2
        monkeypatch.delitem(sys.modules, "my_invariants", raising=False)
        try:
            code, output = invoke("validate", folder, "--plugin", "my_invariants")
        finally:  # other tests count the registered invariants
            unregister_invariant("always_fine_for_validate")
        assert code == 0, output
        assert "1 scenario file(s) valid" in output


def test_the_default_output_fits_80_columns_and_the_table_waits_for_verbose(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = invoke("run", "scenarios", "--report-dir", "out")
    assert code == 0, output
    lines = output.splitlines()
    assert len(lines) == 1, output  # no terminal here, so no progress line: just the summary
    assert max(len(line) for line in lines) <= 80, output
    assert "4 passed, 0 failed" in lines[0]
    assert lines[0].endswith("; reports in out/ (html, json, junit, markdown)")
    code, verbose = invoke("run", "scenarios", "--report-dir", "out", "-v")
    assert code == 0
    assert all(f"case-{index}" in verbose for index in range(4))
    assert "case-0.scenario.yaml" in verbose
    *table, summary = verbose.splitlines()
    assert max(len(line) for line in table) <= 80
    # the summary is one line, never broken: with -v it names every report in full
    assert summary.startswith("4 passed, 0 failed in ")
    assert summary.endswith("out/report.md, out/report.html") or "out/junit.xml" in summary


def test_a_failure_is_shown_in_detail_without_the_table(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = invoke("run", "scenarios/failing", "--report-dir", "out")
    assert code == 1
    assert "scenario / file" not in output
    assert output.splitlines()[-1].startswith("0 passed, 1 failed")
    assert "expect.final_response" in output


@pytest.mark.parametrize(
    ("count", "cpus", "workers"),
    [(0, 2, 1), (105, 2, 1), (399, 8, 1), (800, 2, 2), (1000, 2, 2), (5000, 2, 2), (5000, 8, 8)],
)
def test_workers_are_chosen_by_suite_size_and_cpus(count: int, cpus: int, workers: int) -> None:
    assert auto_workers(count, cpus, load=0.0) == workers


@pytest.mark.parametrize(
    ("cpus", "load", "workers"),
    [(2, 0.4, 2), (2, 0.9, 2), (2, 1.2, 1), (2, 12.0, 1), (8, 5.0, 3), (8, 0.0, 8)],
)
def test_a_busy_machine_gets_fewer_workers(cpus: int, load: float, workers: int) -> None:
    assert auto_workers(5000, cpus, load=load) == workers


def test_an_explicit_workers_option_wins(suite: Path, tmp_path: Path) -> None:
    code, output = invoke("run", suite, "--workers", "2", "--report-dir", tmp_path / "out")
    assert code == 0, output
    assert "4 passed, 0 failed" in output


SURROGATE_PLUGIN = """\
from agentrig.harness import register_invariant
from agentrig.harness.checks.invariant import Invariant


@register_invariant
class OddText(Invariant):
    name = "odd_text"
    description = "Fails with a lone surrogate in its message, as text a run produced may hold."
    final_only = True

    def check(self, observation):
        yield "saw \\ud800 here"
"""


def agentrig_script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The ``agentrig`` script (its ``main``) in a process whose terminal encoding is strict
    UTF-8, as a real terminal's is; what it prints is read back as UTF-8."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-c", "from agentrig.harness.cli import main; main()", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        encoding="utf-8",
        timeout=120,
    )


class TestALoneSurrogateOnTheTerminal:
    """A lone surrogate is shown as its escape on the terminal: never a crash that leaves no
    report behind."""

    def test_text_a_run_produced_is_printed_escaped_and_every_report_is_written(
        self, tmp_path: Path
    ) -> None:
        write(tmp_path, "odd", PASSING.format(name="odd", tag="odd"))
        (tmp_path / "surrogate_plugin.py").write_text(SURROGATE_PLUGIN, encoding="utf-8")
        done = agentrig_script(
            "run",
            "odd.scenario.yaml",
            "--plugin",
            "surrogate_plugin",
            "--report-dir",
            "out",
            cwd=tmp_path,
        )
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert "[invariant: odd_text] turn 1" in done.stdout
        assert "saw \\ud800 here" in done.stdout
        assert "0 passed, 1 failed" in done.stdout
        reports = sorted(path.name for path in (tmp_path / "out").iterdir())
        assert reports == ["junit.xml", "report.html", "report.json", "report.md"]
        for name in ("report.json", "report.md", "report.html"):
            assert "saw \\ud800 here" in (tmp_path / "out" / name).read_text(encoding="utf-8")

    def test_an_escaped_one_in_a_scenario_file_is_a_located_error(self, tmp_path: Path) -> None:
        text = PASSING.format(name="odd", tag="odd").replace("user: ping", 'user: "pi\\ud800ng"')
        write(tmp_path, "odd", text)
        done = agentrig_script("run", "odd.scenario.yaml", "--report-dir", "out", cwd=tmp_path)
        assert done.returncode == 2, done.stdout
        assert "Traceback" not in done.stderr
        # A file that does not load is an error case of the run, reported with the others.
        assert "at odd.scenario.yaml:10" in done.stdout
        assert "lone surrogate" in done.stdout
        junit = (tmp_path / "out" / "junit.xml").read_text(encoding="utf-8")
        assert "<error" in junit
        assert "lone surrogate" in junit


class TestAMissingPathIsAUsageError:
    """A path that does not exist is a mistyped argument, not a scenario file that failed to
    load: exit 2 naming it, before anything runs or any report is written."""

    @pytest.mark.parametrize("command", ["run", "validate", "serve"])
    def test_a_mistyped_path_is_named(
        self, command: str, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        code, output = invoke(command, suite, "scenarioz/")
        assert code == 2, output
        assert "error: scenarioz: no such file or folder" in " ".join(output.split())
        assert not (tmp_path / "reports").exists()

    @pytest.mark.parametrize("command", ["run", "validate", "serve"])
    def test_no_scenarios_folder_says_so_and_how_to_name_one(
        self, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        code, output = invoke(command)
        assert code == 2, output
        flat = " ".join(output.split())
        assert f"error: no scenarios/ folder in {tmp_path}" in flat
        assert f"agentrig {command} PATH..." in flat
        assert "None" not in flat
        assert not (tmp_path / "reports").exists()


def test_the_command_list_shows_each_command_in_one_unbroken_sentence() -> None:
    """``agentrig --help`` lists each command by its short help, or its whole docstring: a
    docstring's line breaks showed there as breaks in mid-sentence."""
    import typer.main

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert {"run", "validate", "serve", "convert", "schema", "version"} <= set(commands)
    for name, command in commands.items():
        listed = command.short_help or command.help or ""
        assert "\n" not in listed, f"{name}: {listed!r}"
    assert commands["run"].short_help == (
        "Run scenario files; exit 0 only when every selected one passes."
    )


def test_the_suites_runner_builds_agentrigs_command_once_and_any_other_app_each_time() -> None:
    """tests/conftest.py: ``CliRunner`` builds agentrig's click command once for the session
    (its commands are fixed when the module loads); another app, which a test may still be
    adding commands to, is built on every invocation."""
    import typer
    import typer.testing

    assert typer.testing._get_command(app) is typer.testing._get_command(app)
    other = typer.Typer()
    other.command()(lambda: None)
    assert typer.testing._get_command(other) is not typer.testing._get_command(other)


def test_validate_reports_every_problem_of_every_file_in_one_pass(tmp_path: Path) -> None:
    """A file that does not load, and a file that loads but names an unknown invariant: both,
    each on a line of its own starting with ``error:``, so one edit pass fixes everything."""
    write(tmp_path, "a-broken", "name: a\nturns:\n  - user: hi\n    model: [{sya: hello}]\n")
    text = PASSING.format(name="b", tag="x") + "invariants:\n  exclude: [clean_mesages]\n"
    write(tmp_path, "b-unknown-invariant", text)
    write(tmp_path, "c-empty", "")
    code, output = invoke("validate", tmp_path)
    assert code == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 3, output
    assert all(line.startswith("error: ") for line in lines), output
    assert f"{tmp_path / 'a-broken.scenario.yaml'}:4:" in lines[0]
    assert "unknown invariant(s): clean_mesages" in lines[1]
    assert "the file is empty" in lines[2]


def test_serve_names_every_file_that_does_not_load_each_on_its_own_line(tmp_path: Path) -> None:
    write(tmp_path, "a", "name: a\nturns:\n  - user: hi\n    model: [{sya: hello}]\n")
    write(tmp_path, "b", "name: b\nturns: []\n")
    code, output = invoke("serve", tmp_path)
    assert code == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 2, output
    assert lines[0].startswith(f"error: {tmp_path / 'a.scenario.yaml'}:4:"), output
    assert lines[1].startswith(f"error: {tmp_path / 'b.scenario.yaml'}:2:"), output


def test_validate_and_run_accept_the_endpoints_invariant_names(tmp_path: Path) -> None:
    text = PASSING.format(name="judge", tag="x") + (
        "invariants:\n  exclude: [history_grows, user_turn_sent, script_not_exceeded]\n"
    )
    write(tmp_path, "judge", text)
    code, output = invoke("validate", tmp_path)
    assert code == 0, output
    assert "1 scenario file(s) valid" in output
    code, output = invoke("run", tmp_path, "--report-dir", tmp_path / "out")
    assert code == 0, output
    # a name neither player checks is still refused, at its line
    write(tmp_path, "judge", text.replace("user_turn_sent", "user_turn_snet"))
    code, output = invoke("validate", tmp_path)
    assert code == 2
    assert "user_turn_snet" in output


LONG_FAILURE = """\
name: long-{name}
turns:
  - user: a question whose answer is long enough to need more than one line at 80 columns
    model:
      - say: an answer that goes on and on, well past the eightieth column of a terminal
    expect:
      final_response: another answer that goes on and on, past the eightieth column too
"""


def long_failures(folder: Path) -> Path:
    for name in ("a", "b"):
        write(folder, f"long-{name}", LONG_FAILURE.format(name=name))
    return folder


def test_output_written_to_a_file_is_not_wrapped(tmp_path: Path) -> None:
    code, output = invoke("run", long_failures(tmp_path / "s"), "--report-dir", tmp_path / "out")
    assert code == 1
    lines = output.splitlines()
    expected = [line for line in lines if line.startswith("    expected: ")]
    assert (
        expected
        == [
            '    expected: {"equals": "another answer that goes on and on, past the eightieth '
            'column too"}'
        ]
        * 2
    )  # whole, however long: a file or a CI log folds nothing
    assert not [line for line in lines if line != line.rstrip()]
    assert "\x1b[" not in output  # no colour outside a terminal


def test_on_a_terminal_failures_are_coloured_and_fit_80_columns_without_trailing_spaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from agentrig.harness import cli

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=80, color_system="standard")
    monkeypatch.setattr(cli, "console", terminal)
    monkeypatch.chdir(tmp_path)
    long_failures(tmp_path / "s")
    code, _ = invoke("run", "s", "--report-dir", "out")
    assert code == 1
    shown = screen.getvalue()
    assert "\x1b[1;31mscenario long-a" in shown  # the scenario's line in bold red
    assert "\x1b[32m    expected:\x1b[0m" in shown
    plain = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line) for line in shown.splitlines()]
    failures = plain[plain.index("") + 1 : -1]  # after the progress line, before the summary
    for line in failures:
        assert line == line.rstrip()
        assert len(line) <= 80, line
    at = failures.index(next(line for line in failures if line.startswith("    expected: ")))
    # a wrapped value continues under itself, not at column 0
    assert failures[at + 1].startswith(" " * len("    expected: "))
    assert failures[at + 1].strip()
