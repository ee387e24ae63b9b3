"""The ``agentrig`` command line: ``run``, ``validate``, ``schema`` and ``convert``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentrig.errors import AgentrigError
from agentrig.harness.results import ScenarioResult, SuiteResult

app = typer.Typer(
    help="agentrig: run and check agent scenario suites.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=False, highlight=False)
errors = Console(stderr=True, highlight=False)

PluginOption = Annotated[
    list[str] | None, typer.Option(help="Module to import first (custom invariants, writers).")
]
PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(help="Scenario files or folders (default: scenarios/).", show_default=False),
]


def _load(paths: list[Path] | None) -> list:  # type: ignore[type-arg]
    from agentrig.harness.scenarios.loader import load_scenarios

    return load_scenarios(paths or [Path("scenarios")])


@app.command()
def run(
    paths: PathsArgument = None,
    keyword: Annotated[
        str | None,
        typer.Option(
            "-k",
            help="Select by name substring or tag: 'budget and not inline'; quote a tag with "
            "spaces: \"'slow path' and not inline\".",
        ),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", "-n", min=1, help="Worker processes.")] = 1,
    shard: Annotated[
        str | None, typer.Option(help="Run part i of n, e.g. 2/4 (for CI matrices).")
    ] = None,
    report_dir: Annotated[Path, typer.Option(help="Where reports are written.")] = Path("reports"),
    report: Annotated[
        list[str] | None,
        typer.Option(help="Report formats (default: all): junit, json, markdown, html."),
    ] = None,
    plugin: PluginOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary line.")] = False,
) -> None:
    """Run scenario files; exit 0 only when every selected scenario passes."""
    from agentrig.harness.reporting import get_writer, write_reports
    from agentrig.harness.runner import load_plugins, run_suite
    from agentrig.harness.scenarios.selection import parse_shard, select

    try:
        load_plugins(plugin or ())
        for name in report or ():
            get_writer(name)  # an unknown format is a usage error before anything runs
        part = parse_shard(shard) if shard else None
        loaded = _load(paths)
        matching = select(loaded, keyword=keyword)
        scenarios = select(matching, shard=part) if part else matching
    except AgentrigError as error:
        _fail_usage(error)
    if not loaded:
        _nothing_found(paths)
    if not matching:
        errors.print("[yellow]no scenario selected[/]")
        raise typer.Exit(4)
    if not scenarios:  # more shards than scenarios: this part of a CI matrix has nothing to do
        console.print(
            f"[yellow]shard {shard}: none of the {len(matching)} selected scenario(s) falls in "
            "this shard[/]",
            soft_wrap=True,
        )
    done: list[ScenarioResult] = []

    def advance(result: ScenarioResult) -> None:
        done.append(result)
        bar.advance(task)

    try:
        with _progress(quiet) as bar:
            task = bar.add_task("scenarios", total=len(scenarios))
            result = run_suite(scenarios, workers=workers, plugins=plugin or (), progress=advance)
    except AgentrigError as error:
        _fail_usage(error)
    except KeyboardInterrupt:
        _interrupted(SuiteResult(scenarios=tuple(done), wall_time_s=0.0), len(scenarios), quiet)
    if not quiet and result.scenarios:
        _summary_table(result)
        _failure_details(result)
    try:
        written = write_reports(result, report_dir, report or None)
    except OSError as error:
        _summary_line(result, [])
        _fail_write(report_dir, error, "--report-dir", what="reports to ")
    _summary_line(result, written)
    raise typer.Exit(0 if result.passed else 1)


@app.command()
def validate(paths: PathsArgument = None, plugin: PluginOption = None) -> None:
    """Check scenario files without running them: each must load and name known invariants."""
    from agentrig.harness.runner import load_plugins, preflight

    try:
        load_plugins(plugin or ())
        scenarios = _load(paths)
    except AgentrigError as error:
        _fail_usage(error)
    if not scenarios:
        _nothing_found(paths)
    failures = [(s, f) for s in scenarios if (f := preflight(s)) is not None]
    for scenario, failure in failures:
        where = failure.location or scenario.name
        errors.print(
            f"[red]error:[/] {escape(where)}: {escape(failure.message)}",
            markup=True,
            soft_wrap=True,
        )
    if failures:
        raise typer.Exit(2)
    console.print(f"[green]{len(scenarios)} scenario file(s) valid[/]")


@app.command()
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace the --output file even if it is not a schema."),
    ] = False,
) -> None:
    """Print (or write) the JSON Schema of scenario files, for editors."""
    from agentrig.harness.scenarios.loader import scenario_json_schema

    schema = scenario_json_schema()
    text = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        if not force and output.is_file() and not _is_schema(output, schema["title"]):
            _refuse_overwrite(output, "it is not an agentrig scenario schema")
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as error:
            _fail_write(output, error, "--output")
        console.print(f"wrote {escape(str(output))}")


@app.command()
def convert(
    cassette: Annotated[Path, typer.Argument(help="A cassette file recorded by agentrig.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this *.scenario.yaml file, not stdout."),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="Scenario name (default: from the file name).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the --output file if it exists.")
    ] = False,
) -> None:
    """Convert a recorded cassette into an editable scenario file that replays it."""
    from agentrig.harness.cassettes.convert import (
        cassette_to_scenario,
        load_recording,
        scenario_name,
    )
    from agentrig.harness.scenarios.writer import scenario_to_yaml, write_scenario

    stem = (output or cassette).name.split(".")[0]
    header = f"Converted from {cassette} by agentrig convert; edit freely."
    try:
        scenario = cassette_to_scenario(
            load_recording(cassette), name=name or scenario_name(stem), path=str(cassette)
        )
        if output is None:
            typer.echo(scenario_to_yaml(scenario, header=header), nl=False)
            return
        if output.exists() and not force:
            _refuse_overwrite(output, "it may hold your edits")
        write_scenario(scenario, path=output, header=header)
    except AgentrigError as error:
        _fail_usage(error)
    except OSError as error:
        _fail_write(output, error, "--output")
    console.print(f"wrote {escape(str(output))}", soft_wrap=True)


@app.command()
def version() -> None:
    """Print the agentrig version."""
    from agentrig import __version__

    typer.echo(__version__)


def _nothing_found(paths: list[Path] | None) -> NoReturn:
    searched = ", ".join(str(path) for path in paths or [Path("scenarios")])
    errors.print(
        f"[yellow]no *.scenario.yaml file found in {escape(searched)}[/] "
        "(folders named failing are searched only when named)",
        soft_wrap=True,
    )
    raise typer.Exit(4)


def _is_schema(path: Path, title: str) -> bool:
    """Whether ``path`` holds a scenario schema written earlier (safe to regenerate)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and data.get("title") == title


def _refuse_overwrite(path: Path, why: str) -> NoReturn:
    errors.print(
        f"[red]error:[/] {escape(str(path))} already exists and {why}; nothing was written: "
        "choose another --output, or pass --force to replace it",
        markup=True,
        soft_wrap=True,
    )
    raise typer.Exit(2)


def _fail_usage(error: AgentrigError) -> NoReturn:
    errors.print(f"[red]error:[/] {escape(str(error))}", markup=True, soft_wrap=True)
    raise typer.Exit(2)


def _fail_write(path: Path | None, error: OSError, option: str, what: str = "") -> NoReturn:
    reason = escape(str(error.strerror or error))
    errors.print(
        f"[red]error:[/] cannot write {what}{escape(str(path))}: {reason}; choose another {option}",
        markup=True,
        soft_wrap=True,
    )
    raise typer.Exit(2)


def _progress(quiet: bool) -> Progress:
    return Progress(
        TextColumn("[bold]running[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=True,
    )


def _summary_table(result: SuiteResult) -> None:
    table = Table(title="agentrig scenarios", show_lines=False)
    for column in ("scenario", "tags", "turns", "steps", "last outcome", "result"):
        table.add_column(column)
    for scenario in result.scenarios:
        table.add_row(
            escape(scenario.name),
            escape(", ".join(scenario.tags)),
            str(len(scenario.turns)),
            str(sum(turn.steps for turn in scenario.turns)),
            _outcome(scenario),
            "[green]pass[/]" if scenario.passed else "[red]FAIL[/]",
        )
    console.print(table)


def _outcome(scenario: ScenarioResult) -> str:
    if not scenario.turns:
        return "-"
    last = scenario.turns[-1]
    return f"{last.status} / {last.stop_reason}"


def _failure_details(result: SuiteResult) -> None:
    from agentrig.harness.reporting.terminal import format_scenario_failures

    for scenario in result.scenarios:
        if not scenario.passed:
            console.print("")
            console.print(format_scenario_failures(scenario), markup=False, highlight=False)


def _interrupted(result: SuiteResult, selected: int, quiet: bool) -> NoReturn:
    """Ctrl-C: show what ran (no reports: they would look like a whole run) and exit 130."""
    if not quiet and result.scenarios:
        _summary_table(result)
        _failure_details(result)
    console.print(
        f"[yellow]interrupted: {len(result.scenarios)} of {selected} scenario(s) ran: "
        f"{result.passed_count} passed, {result.failed_count} failed; no reports written[/]",
        soft_wrap=True,
    )
    raise typer.Exit(130)


def _summary_line(result: SuiteResult, written: list[Path]) -> None:
    colour = "green" if result.passed else "red"
    console.print(
        f"[{colour}]{result.passed_count} passed, {result.failed_count} failed[/] "
        f"in {result.wall_time_s:.2f}s"
        + (f"; reports: {escape(', '.join(str(p) for p in written))}" if written else "")
    )


def main() -> None:
    """Entry point of the ``agentrig`` script."""
    for stream in (sys.stdout, sys.stderr):
        # Text a run produced may hold what the terminal's encoding cannot (a lone surrogate
        # from a tool): shown as an escape rather than a crash before the reports are written.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    app()
