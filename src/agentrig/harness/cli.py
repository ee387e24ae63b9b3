"""The ``agentrig`` command line: ``run``, ``merge``, ``validate``, ``schema``, ``convert``,
``serve`` and ``fuzz``."""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.core
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentrig.errors import AgentrigError, ConfigurationError
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.process_end import end_without_a_last_collection
from agentrig.harness.suites.interrupt import (
    Interrupted,
    interrupted_by_signals,
    stopping_signal,
)

if TYPE_CHECKING:
    import asyncio

    from agentrig.harness.live.run import LiveRun
    from agentrig.harness.results import ScenarioResult, SuiteResult
    from agentrig.harness.scale.cluster import DaskExecutor
    from agentrig.harness.scenarios.model import Scenario
    from agentrig.harness.suites.shards import ShardInfo

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


DEFAULT_PATHS = [Path("scenarios")]

_AS_PROGRAM = False
"""Whether the command runs as its process's program (:func:`main`): only then does it freeze
what the process holds (``gc.freeze``); a test invoking it keeps its own collector as it was."""


def _existing(paths: list[Path] | None, command: str) -> list[Path]:
    """``paths`` (default: ``scenarios/``), or exit 2 naming each that does not exist: a path
    mistyped on the command line is a usage error, before anything runs or any report is
    written."""
    given = paths or DEFAULT_PATHS
    missing = [path for path in given if not path.exists()]
    if not missing:
        return given
    if not paths:
        errors.print(
            f"[red]error:[/] no scenarios/ folder in {escape(str(Path.cwd()))}; name the scenario "
            f"files or folders: agentrig {command} PATH...",
            soft_wrap=True,
        )
    else:
        for path in missing:
            errors.print(
                f"[red]error:[/] {escape(str(path))}: no such file or folder", soft_wrap=True
            )
    raise typer.Exit(2)


def _load(paths: list[Path] | None, command: str) -> list:  # type: ignore[type-arg]
    from agentrig.harness.scenarios.loader import load_scenarios

    return load_scenarios(_existing(paths, command))


@app.command(short_help="Run scenario files; exit 0 only when every selected one passes.")
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
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            "-n",
            min=1,
            help="Worker processes (default: chosen by the suite's size and the CPUs).",
            show_default=False,
        ),
    ] = None,
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
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also a table of every scenario.")
    ] = False,
    use_async: Annotated[
        bool,
        typer.Option(
            "--async", help="Run through the async path (AgentLoop.aiterate) instead of iterate."
        ),
    ] = False,
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="Also run live scenarios (user, judge, trials): real models, repeated trials, "
            "a verdict each; exit 3 when a verdict is INCONCLUSIVE and none FAIL.",
        ),
    ] = False,
    cache: Annotated[
        Path,
        typer.Option(help="Live: where trials are recorded and replayed from."),
    ] = Path(".agentrig/cache"),
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Live: neither replay nor record trials.")
    ] = False,
    budget_usd: Annotated[
        float | None,
        typer.Option(min=0, help="Live: the most the whole run may spend, in USD."),
    ] = None,
    limit: Annotated[
        list[str] | None,
        typer.Option(
            help="Live: calls in flight at once per provider, e.g. --limit openai=8 "
            "--limit anthropic=4 (default 8 each)."
        ),
    ] = None,
    max_trials: Annotated[
        int | None,
        typer.Option(min=1, help="Live: overrides every scenario's trials.max."),
    ] = None,
    run_id: Annotated[
        str | None,
        typer.Option(
            help="Live: the run's name in each trial's x-agentrig-trial header (default: "
            "random, so that two runs against one agentrig serve never share a session)."
        ),
    ] = None,
    executor: Annotated[
        str,
        typer.Option(
            help="Where scenarios and live trials run: local (this machine, --workers "
            "processes), dask (a local Dask cluster, --workers processes, default one per CPU) "
            "or dask://HOST:PORT (a running Dask scheduler); dask needs the dask extra."
        ),
    ] = "local",
) -> None:
    """Run scenario files; exit 0 only when every selected scenario passes. A file that does
    not load is reported as an error case and the others run; the exit code is then 2. Ctrl-C,
    SIGTERM or SIGHUP stop the run: the reports hold what finished and an error case for each
    scenario that did not (while the scenarios load, none ran: no reports); the exit code is
    128 + the signal's number (130, 143, 129). Live scenarios run only with --live."""
    from agentrig.harness.reporting import get_writer
    from agentrig.harness.scenarios.loader import load_suite
    from agentrig.harness.scenarios.selection import parse_shard, select, shard_of
    from agentrig.harness.suites.plugins import load_plugins

    try:
        with interrupted_by_signals():
            cluster = _executor(executor, workers, live)
            load_plugins(plugin or ())
            for name in report or ():
                get_writer(name)  # an unknown format is a usage error before anything runs
            part = parse_shard(shard) if shard else None
            suite = load_suite(_existing(paths, "run"))
            loaded = suite.scenarios
            matching = select(loaded, keyword=keyword)
            scenarios = select(matching, shard=part) if part else matching
    except AgentrigError as error:
        _fail_usage(error)
    except KeyboardInterrupt as stop:  # before any scenario ran: there is nothing to report
        name, number = stopping_signal(stop)
        errors.print(
            f"[yellow]interrupted by {_shown_signal(name)} while loading the scenarios: none "
            "ran; no reports written[/]",
            soft_wrap=True,
        )
        raise typer.Exit(128 + number) from None
    if _AS_PROGRAM:  # the scenarios live as long as the run: its collections need not visit them
        gc.freeze()
    # A file that did not load has no name or tags to select by: every -k run reports it, and
    # one shard of a matrix (by its path) does.
    broken = shard_of(suite.broken, part, key=lambda error: error.path)
    if not loaded and not suite.broken:
        _nothing_found(paths)
    live_scenarios = [scenario for scenario in scenarios if scenario.is_live]
    if live_scenarios and not live:
        errors.print(
            f"[yellow]{len(live_scenarios)} live scenario(s) not run: add --live to run their "
            "trials[/]",
            soft_wrap=True,
        )
        scenarios = [scenario for scenario in scenarios if not scenario.is_live]
        if not scenarios and not broken:
            raise typer.Exit(4)
    live_run = _live_run(cache, no_cache, budget_usd, limit, max_trials, run_id) if live else None
    if live_run is not None and live_scenarios:
        _preflight(live_scenarios, live_run)  # before anything runs, scripted scenarios too
    if not matching and not broken:
        errors.print("[yellow]no scenario selected[/]")
        raise typer.Exit(4)
    if not scenarios and not broken:  # more shards than scenarios: nothing to do in this part
        console.print(
            f"[yellow]shard {shard}: none of the {len(matching)} selected scenario(s) falls in "
            "this shard[/]",
            soft_wrap=True,
        )
    done: list[ScenarioResult] = []

    def advance(result: ScenarioResult) -> None:
        done.append(result)
        bar.advance(task)

    started = time.perf_counter()
    interrupted: tuple[str, int] | None = None
    try:
        with _progress(quiet) as bar, interrupted_by_signals():
            task = bar.add_task("scenarios", total=len(scenarios))
            scripted = [scenario for scenario in scenarios if not scenario.is_live]
            with _opened(cluster, scenarios, plugin, live_run, limit, budget_usd, workers) as run:
                result = run(scripted, advance, use_async)
                if live_run is not None and len(scripted) < len(scenarios):
                    result = _with_live(result, scenarios, live_run, advance)
    except AgentrigError as error:
        _fail_usage(error)
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM / SIGHUP (Interrupted)
        interrupted = stopping_signal(stop)
        result = _interrupted_result(done, scenarios, interrupted[0], started)
    result = _with_unloadable(result, suite.entries, scenarios, broken)
    info = _shard_info(suite.entries, matching, (*scenarios, *broken), live=live, part=part)
    if interrupted is not None:
        _report_interrupted(
            result, done, len(scenarios), interrupted, report_dir, report, quiet=quiet, shard=info
        )
    if verbose and not quiet and result.scenarios:
        _summary_table(result)
    if not quiet:
        _failure_details(result)
    _report_and_exit(
        result, report_dir, report, verbose=verbose, unloadable=len(broken), shard=info
    )


def _shard_info(
    entries: Sequence[Scenario | ScenarioFileError],
    matching: Sequence[Scenario],
    reported: Sequence[Scenario | ScenarioFileError],
    *,
    live: bool,
    part: tuple[int, int] | None,
) -> ShardInfo | None:
    """What ``shard.json`` says of this shard (None without ``--shard``): the entries a
    one-machine run reports (the matching scenarios, without live ones unless ``live``, and
    every file that did not load), and which of them this shard ``reported``."""
    if part is None:
        return None
    from agentrig.harness.suites.shards import shard_info

    chosen = {id(scenario) for scenario in matching if live or not scenario.is_live}
    selection = [e for e in entries if isinstance(e, ScenarioFileError) or id(e) in chosen]
    mine = {id(entry) for entry in reported}
    return shard_info(selection, [e for e in selection if id(e) in mine], part)


RunScripted = Callable[
    [Sequence["Scenario"], Callable[["ScenarioResult"], None], bool], "SuiteResult"
]
"""Runs the scripted scenarios of ``run`` (with a progress callback, and ``--async``)."""


def _executor(text: str, workers: int | None, live: bool) -> DaskExecutor | None:
    """``--executor`` (None: local), or a usage error: an unknown one, the dask extra missing,
    ``--workers`` with a running scheduler (whose workers are its own). The worker server of
    a local cluster (importing what ``live`` trials need too), or of a pool of ``--workers``
    processes, starts now."""
    if text == "local":  # the default: the scale-out package (75 ms of imports) is not needed
        if workers is not None and workers > 1:  # its workers' process imports while we load
            from agentrig.harness.suites import worker_start

            worker_start.start_worker_server()
        return None
    from agentrig.harness.scale.cluster import parse_executor, require_dask, start_worker_server

    cluster = parse_executor(text)
    if cluster is not None:
        if cluster.address is None:  # its workers' process imports while the run loads
            start_worker_server(live=live)
        require_dask()
        if cluster.address is not None and workers is not None:
            raise ConfigurationError(
                f"--workers sizes a local cluster; the scheduler at {cluster} has workers of "
                "its own: leave --workers out"
            )
    return cluster


@contextlib.contextmanager
def _opened(
    cluster: DaskExecutor | None,
    scenarios: Sequence[Scenario],
    plugins: list[str] | None,
    live_run: LiveRun | None,
    limit: list[str] | None,
    budget_usd: float | None,
    workers: int | None,
) -> Iterator[RunScripted]:
    """How the scripted scenarios run while inside: in this machine's worker processes, or on
    the Dask cluster (opened here, its workers checked, the live trials sent to it too)."""
    from agentrig.harness.suites.suite import run_suite

    if cluster is None:
        yield lambda scripted, progress, use_async: run_suite(
            scripted,
            workers=workers or auto_workers(len(scripted)),
            plugins=plugins or (),
            progress=progress,
            use_async=use_async,
        )
        return
    from agentrig.harness.live.options import parse_limits
    from agentrig.harness.scale.control import ClusterLimits
    from agentrig.harness.scale.session import dask_session
    from agentrig.harness.scale.suite import run_suite_on_dask

    limits = ClusterLimits(parse_limits(limit or ()), budget_usd=budget_usd)
    with dask_session(
        cluster, scenarios, plugins=plugins or (), live=live_run, limits=limits, workers=workers
    ) as client:
        yield lambda scripted, progress, use_async: run_suite_on_dask(
            client, scripted, plugins=plugins or (), progress=progress, use_async=use_async
        )


def _live_run(
    cache: Path,
    no_cache: bool,
    budget_usd: float | None,
    limit: list[str] | None,
    max_trials: int | None,
    run_id: str | None,
) -> LiveRun:
    """The options of ``run --live`` as a :class:`~agentrig.harness.live.run.LiveRun`."""
    from agentrig.harness.live.options import live_run_options

    try:
        return live_run_options(
            cache_dir=None if no_cache else cache,
            budget_usd=budget_usd,
            limits=limit or (),
            max_trials=max_trials,
            run_id=run_id,
        )
    except AgentrigError as error:
        _fail_usage(error)


def _preflight(scenarios: Sequence[Scenario], live_run: LiveRun) -> None:
    """Refuse (exit 2) live scenarios that cannot run: see ``preflight_live``."""
    from agentrig.harness.live.suite import preflight_live

    try:
        preflight_live(scenarios, live_run)
    except AgentrigError as error:
        _fail_usage(error)


def _with_live(
    result: SuiteResult,
    scenarios: Sequence[Scenario],
    live_run: LiveRun,
    progress: Callable[[ScenarioResult], None],
) -> SuiteResult:
    """``result`` (of the scripted scenarios) with the live ones run, in ``scenarios``' order."""
    import asyncio

    from agentrig.harness.live.suite import run_live_suite
    from agentrig.harness.results import SuiteResult

    started = time.perf_counter()
    live = [scenario for scenario in scenarios if scenario.is_live]
    stopped_by: list[int] = []

    async def main() -> list[ScenarioResult]:
        # Ctrl-C, SIGTERM or SIGHUP cancel the trials, which end with partial verdicts; the
        # run then stops as an interrupted one, with their reports.
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None
        numbers = [int(getattr(signal, name)) for name in _STOPS if hasattr(signal, name)]
        for number in numbers:
            loop.add_signal_handler(number, _stop_with, number, task, stopped_by)
        try:
            return await run_live_suite(live, live_run, progress, checked=True)
        finally:
            for number in numbers:
                loop.remove_signal_handler(number)

    finished = asyncio.run(main())
    if stopped_by:
        raise Interrupted(stopped_by[0]) if stopped_by[0] != signal.SIGINT else KeyboardInterrupt()
    live_results = iter(finished)
    scripted_results = iter(result.scenarios)
    ordered = tuple(
        next(live_results) if scenario.is_live else next(scripted_results) for scenario in scenarios
    )
    wall = result.wall_time_s + time.perf_counter() - started
    return SuiteResult(scenarios=ordered, wall_time_s=wall)


_STOPS = ("SIGINT", "SIGTERM", "SIGHUP")


def _stop_with(number: int, task: asyncio.Task[object], stopped_by: list[int]) -> None:
    stopped_by.append(number)
    task.cancel()


def _with_unloadable(
    result: SuiteResult,
    entries: Sequence[Scenario | ScenarioFileError],
    ran: Sequence[Scenario],
    broken: Sequence[ScenarioFileError],
) -> SuiteResult:
    """``result`` (of the scenarios that ``ran``, in their order) with an error case for each
    file of ``broken``, all in the order of the files (``entries``)."""
    from agentrig.harness.runner import unloadable_result

    if not broken:
        return result
    chosen = {id(entry) for entry in (*ran, *broken)}
    results = iter(result.scenarios)
    ordered = [
        unloadable_result(entry) if isinstance(entry, ScenarioFileError) else next(results)
        for entry in entries
        if id(entry) in chosen
    ]
    return result.model_copy(update={"scenarios": tuple(ordered)})


@app.command(short_help="Join the reports of `run --shard i/n` runs into one set of reports.")
def merge(
    folders: Annotated[
        list[Path],
        typer.Argument(help="The report folder of every shard (any order).", show_default=False),
    ],
    report_dir: Annotated[Path, typer.Option(help="Where the merged reports are written.")] = Path(
        "reports"
    ),
    report: Annotated[
        list[str] | None,
        typer.Option(help="Report formats (default: all): junit, json, markdown, html."),
    ] = None,
    plugin: PluginOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary line.")] = False,
) -> None:
    """Join the report folders of every shard of one run (`agentrig run --shard i/n
    --report-dir DIR`, each with its report.json and shard.json) into the reports a
    one-machine run writes, identical but for wall times (the merged run's is the longest
    shard's). Refuses (exit 2) shards of different suites or splits, and a shard missing or
    given twice; else exits as `run` would have: 0, 1, or 2 when files did not load."""
    from agentrig.harness.reporting import get_writer
    from agentrig.harness.suites.plugins import load_plugins
    from agentrig.harness.suites.shards import merge_shards

    try:
        load_plugins(plugin or ())  # writers registered by a plugin
        for name in report or ():
            get_writer(name)
        result, unloadable = merge_shards(folders)
    except AgentrigError as error:
        _fail_usage(error)
    if not quiet:
        _failure_details(result)
    _report_and_exit(result, report_dir, report, unloadable=unloadable)


@app.command(short_help="Check scenario files without running them.")
def validate(paths: PathsArgument = None, plugin: PluginOption = None) -> None:
    """Check scenario files without running them: each must load and name known invariants,
    its scripted calls must fit the agent's tools (a known tool, arguments the tool takes), and
    a file that names its agent (agent.builder) must describe that agent's tools."""
    from agentrig.harness.runner import preflight, static_failures
    from agentrig.harness.scenarios.loader import load_suite
    from agentrig.harness.suites.plugins import load_plugins

    try:
        load_plugins(plugin or ())
        suite = load_suite(_existing(paths, "validate"))
    except AgentrigError as error:
        _fail_usage(error)
    scenarios = suite.scenarios
    if not suite.entries:
        _nothing_found(paths)
    problems: list[str] = []  # every problem of every file, in the files' order: one pass fixes all
    for entry in suite.entries:
        if isinstance(entry, ScenarioFileError):
            problems.extend(problem.describe() for problem in entry.errors)
            continue
        refused = preflight(entry)
        found = [refused] if refused is not None else static_failures(entry)
        problems.extend(f"{failure.location or entry.name}: {failure.message}" for failure in found)
    for problem in problems:
        errors.print(f"[red]error:[/] {escape(problem)}", markup=True, soft_wrap=True)
    if problems:
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
    cassette: Annotated[
        Path,
        typer.Argument(
            help="A cassette file recorded by agentrig, or a live trial's folder in the cache "
            "(.agentrig/cache/SCENARIO/FINGERPRINT/trial-N.A)."
        ),
    ],
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
    """Convert a recorded cassette or live trial into an editable scenario that replays it."""
    from agentrig.harness.cassettes.convert import (
        cassette_to_scenario,
        load_recording,
        scenario_name,
    )
    from agentrig.harness.live.convert import is_trial_folder, trial_to_scenario
    from agentrig.harness.scenarios.loader import SCENARIO_SUFFIX
    from agentrig.harness.scenarios.writer import scenario_to_yaml, write_scenario

    if output is not None and not output.name.endswith(SCENARIO_SUFFIX):
        errors.print(
            f"[red]error:[/] --output {escape(str(output))} must end in {SCENARIO_SUFFIX} so "
            "that agentrig run finds it; nothing was written",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    stem = (output or cassette).name.split(".")[0]
    header = f"Converted from {cassette} by agentrig convert; edit freely."
    try:
        if is_trial_folder(cassette):
            trial = f"{cassette.parent.parent.name}-{cassette.name}"
            scenario = trial_to_scenario(
                cassette, name=name or scenario_name(output.name.split(".")[0] if output else trial)
            )
        else:
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


class _CommandAfterDashes(typer.core.TyperCommand):
    """A command whose words after ``--`` are a command line to run (kept in the context's
    ``meta``), not more arguments: ``agentrig serve SCENARIO -- python agent.py``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own click Context
        if "--" in args:
            at = args.index("--")
            ctx.meta[_AGENT_COMMAND] = args[at + 1 :]
            args = args[:at]
        return super().parse_args(ctx, args)


_AGENT_COMMAND = "agentrig.agent_command"


@app.command(
    short_help="Serve scenarios' scripted models over the OpenAI, Anthropic and Gemini APIs.",
    cls=_CommandAfterDashes,
)
def serve(
    ctx: typer.Context,
    paths: PathsArgument = None,
    host: Annotated[str, typer.Option(help="Address to listen on (keep it on loopback).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port; 0 picks a free one.")] = 0,
    report_dir: Annotated[Path, typer.Option(help="Where reports are written.")] = Path("reports"),
    report: Annotated[
        list[str] | None,
        typer.Option(help="Report formats (default: all): junit, json, markdown, html."),
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option(help="Forward every request to this provider URL instead (with --record)."),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(help="With --upstream: the agentrig cassette to record the exchanges to."),
    ] = None,
) -> None:
    """Serve scenarios' scripted models over the OpenAI, Anthropic and Gemini HTTP APIs until
    Ctrl-C, then report every session; exit 0 only when every session passed. With --upstream and
    --record, forward to a real provider and record a cassette instead.

    With `-- COMMAND...` after the scenarios, run COMMAND (the agent) once for each scenario,
    with OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY pointing at
    the endpoint, then stop, report, and exit with the verdict (for CI)."""
    from agentrig.harness.endpoint.extras import require_extra
    from agentrig.harness.reporting import get_writer

    try:
        require_extra("serve")
    except AgentrigError as error:
        _fail_usage(error)
    from agentrig.harness.endpoint.command import (
        record_until_interrupted,
        serve_and_run,
        serve_until_interrupted,
    )

    command = ctx.meta.get(_AGENT_COMMAND)
    if command is not None and (not command or upstream is not None):
        why = "give the agent's command after --" if not command else "--upstream runs no command"
        errors.print(f"[red]error:[/] {why}", soft_wrap=True)
        raise typer.Exit(2)
    if (upstream is None) != (record is None):
        errors.print("[red]error:[/] --upstream and --record go together", soft_wrap=True)
        raise typer.Exit(2)
    if upstream is not None and record is not None:
        if paths:
            errors.print("[red]error:[/] with --upstream, give no scenario files", soft_wrap=True)
            raise typer.Exit(2)
        try:
            count, written = record_until_interrupted(
                upstream, record, host=host, port=port, say=console.print
            )
        except AgentrigError as error:
            _fail_usage(error)
        where = ", ".join(map(str, written)) or str(record)
        console.print(
            f"recorded {count} model call(s) in {len(written)} conversation(s): {escape(where)}",
            soft_wrap=True,
        )
        raise typer.Exit(0)
    try:
        for name in report or ():
            get_writer(name)
        loaded = _load(paths, "serve")
    except AgentrigError as error:
        _fail_usage(error)
    if not loaded:
        _nothing_found(paths)
    try:
        if command:
            result = serve_and_run(loaded, command, host=host, port=port, say=console.print)
        else:
            result = serve_until_interrupted(loaded, host=host, port=port, say=console.print)
    except AgentrigError as error:
        _fail_usage(error)
    if not result.scenarios:
        errors.print("[yellow]no agent sent a request: nothing to report[/]")
        raise typer.Exit(4)
    _failure_details(result)
    _report_and_exit(result, report_dir, report)


@app.command(short_help="Property-test any agent: hypothesis plays the model to it.")
def fuzz(
    target: Annotated[
        str | None,
        typer.Argument(
            help="The agent: 'package.module:function' (called with the endpoint and the "
            "prompt) or a command (run with OPENAI_BASE_URL/OPENAI_API_KEY set).",
            show_default=False,
        ),
    ] = None,
    prompt: Annotated[str | None, typer.Option(help="The user's message to the agent.")] = None,
    replay: Annotated[
        Path | None, typer.Option(help="Replay a scenario file fuzzing wrote, and check it.")
    ] = None,
    max_examples: Annotated[int, typer.Option(min=1, help="Scripts to try.")] = 200,
    tool: Annotated[
        list[str] | None, typer.Option(help="Call only this offered tool (repeatable).")
    ] = None,
    reply: Annotated[
        list[str] | None,
        typer.Option(
            help="Kinds of answer (repeatable; default all): text, call, "
            "parallel_calls, unknown_tool, refusal, truncated, reasoning."
        ),
    ] = None,
    arguments: Annotated[
        list[str] | None,
        typer.Option(
            help="Kinds of tool arguments (repeatable; default valid, not_json): "
            "valid, missing_required, wrong_type, extra_keys, not_json."
        ),
    ] = None,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            help="Endpoint faults (repeatable; default all but malformed_stream; "
            "'none' for none): rate_limit, server_error, timeout, cut_stream, malformed_stream, "
            "chunking."
        ),
    ] = None,
    max_steps: Annotated[
        int, typer.Option(min=1, help="Drawn answers before the final text answer.")
    ] = 4,
    max_model_calls: Annotated[
        int, typer.Option(min=1, help="Model calls an example may take (terminates_within).")
    ] = 30,
    raises: Annotated[
        list[str] | None,
        typer.Option(help="An error the agent documents, 'package.module:Class' (repeatable)."),
    ] = None,
    answers_every_call: Annotated[
        bool, typer.Option(help="Also check that every tool call is answered.")
    ] = False,
    out: Annotated[Path, typer.Option(help="Where a failing script is written.")] = Path(
        ".agentrig/fuzz"
    ),
    database: Annotated[
        Path | None, typer.Option(help="The hypothesis database (failures are tried first).")
    ] = Path(".hypothesis/examples"),
    no_database: Annotated[bool, typer.Option("--no-database", help="Keep no database.")] = False,
    seed: Annotated[int | None, typer.Option(help="Fix hypothesis's draws.")] = None,
    live: Annotated[
        bool, typer.Option(help="Serve on a loopback server (always for a command).")
    ] = False,
) -> None:
    """Fuzz an agent built on anything: hypothesis plays the model over the OpenAI and
    Anthropic APIs, and a script that breaks the agent is shrunk and written as a scenario
    file. Exit 0 when no property broke, 1 when one did, 2 on a usage error."""
    from agentrig.harness.endpoint.extras import require_extra

    try:
        require_extra("endpoint")
        from agentrig.harness.fuzz.command import FuzzOptions, run_command

        options = FuzzOptions(
            target=target,
            prompt=prompt,
            replay=replay,
            max_examples=max_examples,
            tools=tool or (),
            replies=reply or (),
            arguments=arguments or (),
            faults=fault or (),
            max_steps=max_steps,
            max_model_calls=max_model_calls,
            raises=raises or (),
            answers_every_call=answers_every_call,
            folder=out,
            database=None if no_database else database,
            seed=seed,
            live=live,
        )
        status = run_command(options, lambda line: console.print(escape(line), soft_wrap=True))
    except AgentrigError as error:
        _fail_usage(error)
    raise typer.Exit(status)


@app.command()
def version() -> None:
    """Print the agentrig version."""
    from agentrig import __version__

    typer.echo(__version__)


def _nothing_found(paths: list[Path] | None) -> NoReturn:
    searched = ", ".join(str(path) for path in paths or DEFAULT_PATHS)
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
    for line in str(error).splitlines() or [""]:  # one problem a line (files that did not load)
        errors.print(f"[red]error:[/] {escape(line)}", markup=True, soft_wrap=True)
    raise typer.Exit(2)


def _fail_write(path: Path | None, error: OSError, option: str, what: str = "") -> NoReturn:
    reason = escape(str(error.strerror or error))
    errors.print(
        f"[red]error:[/] cannot write {what}{escape(str(path))}: {reason}; choose another {option}",
        markup=True,
        soft_wrap=True,
    )
    raise typer.Exit(2)


SCENARIOS_PER_WORKER = 400
"""Below this many scenarios a second worker process costs more than it saves: starting one
(a fresh interpreter importing agentrig) takes about as long as running a few hundred typical
scenarios in the main process."""


def auto_workers(count: int, cpus: int | None = None, load: float | None = None) -> int:
    """How many worker processes a suite of ``count`` scenarios gets when ``--workers`` is not
    given: one per ``SCENARIOS_PER_WORKER`` scenarios, at least one, at most one per idle CPU.

    ``cpus`` defaults to the CPUs this process may use, ``load`` to the one-minute load average:
    on a machine already busy, more processes only take turns (measured: with a load of 11 to
    14 on 2 CPUs, 2 workers took 1.4 to 2.7 times as long as 1 on 200 to 1,000 scenarios).
    """
    available = cpus if cpus is not None else _cpu_count()
    busy = load if load is not None else _load_average()
    # a CPU counts as idle unless wholly busy: the load average still holds the last run's
    # own processes for a while (a load of 0.9 right after a run on an idle 2-CPU machine)
    idle = max(1, math.ceil(available - busy))
    return max(1, min(available, idle, count // SCENARIOS_PER_WORKER))


def _cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def _load_average() -> float:
    """The one-minute load average (0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def _progress(quiet: bool) -> Progress:
    """One line that advances as scenarios finish (only on a terminal)."""
    return Progress(
        TextColumn("[bold]running[/]"),
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=False,
    )


def _summary_table(result: SuiteResult) -> None:
    """Every scenario (``-v``): result, name over its file, steps, the last turn's status over its
    stop reason; two lines a row, so that it reads at 80 columns."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("scenario / file", overflow="fold")
    table.add_column("steps", justify="right", no_wrap=True)
    table.add_column("agent status / stop", overflow="fold")
    for scenario in result.scenarios:
        table.add_row(
            _result_cell(scenario),
            f"{escape(scenario.name)}\n[dim]{escape(scenario.location)}[/]",
            "-" if scenario.live is not None else str(scenario.total_steps),
            _outcome(scenario),
        )
    console.print(table)


def _result_cell(scenario: ScenarioResult) -> str:
    if scenario.inconclusive:
        return "[yellow]INCONCLUSIVE[/]"
    return "[green]PASS[/]" if scenario.passed else "[red]FAIL[/]"


def _outcome(scenario: ScenarioResult) -> str:
    from agentrig.harness.reporting.base import status_explained
    from agentrig.harness.reporting.live import format_interval, format_share

    if scenario.live is not None:  # a live scenario: its successes over its rate
        live = scenario.live
        rate = f"rate {format_share(live.rate)} {format_interval(*live.exact)}"
        return f"{live.successes}/{live.trials} successes\n[dim]{escape(rate)}[/]"
    if not scenario.turns:
        return "-"
    last = scenario.turns[-1]
    return f"{escape(status_explained(scenario, last))}\n[dim]{escape(last.stop_reason or '-')}[/]"


def _failure_details(result: SuiteResult) -> None:
    """Every failure in detail, then every live verdict in one line (a passing one too: its
    rate and cost are news)."""
    from agentrig.harness.reporting.terminal import format_live_line, format_scenario_failures

    for scenario in result.scenarios:
        if not scenario.passed:
            console.print("")
            _print_block(format_scenario_failures(scenario))
    live = [format_live_line(scenario) for scenario in result.scenarios if scenario.live]
    if live:
        console.print("")
        _print_block("\n".join(live))


_STYLES = (
    (re.compile(r"^scenario .*"), "bold red"),
    (re.compile(r"^\[[^\]]*\]"), "red"),
    (re.compile(r"^ +at .*"), "dim"),
    (re.compile(r"^ +expected:"), "green"),
    (re.compile(r"^ +observed:"), "red"),
)
"""The colours of a failure block on a terminal: the scenario's line, a failure's kind, where
it is, and the labels of the values it compared."""


def _print_block(text: str) -> None:
    """Print a block of failure text. On a terminal: coloured, and wrapped to its width
    without trailing spaces, continuations indented. Elsewhere (a file, a pipe, a CI log):
    as it is, one line a line, whatever its length."""
    from rich.text import Text

    from agentrig.harness.reporting.terminal import fit_lines

    if not console.is_terminal:
        console.print(text, markup=False, highlight=False, soft_wrap=True)
        return
    for line in fit_lines(text, console.width):
        shown = Text(line)
        for pattern, style in _STYLES:
            found = pattern.match(line)
            if found is not None:
                shown.stylize(style, 0, found.end())
                break
        console.print(shown, highlight=False, soft_wrap=True)


NOT_FINISHED = (
    "not finished: the run was interrupted by {signal} before this scenario's result came in"
)
"""The failure of each selected scenario an interrupted run did not finish."""


def _interrupted_result(
    done: Sequence[ScenarioResult], selected: Sequence[Scenario], signal: str, started: float
) -> SuiteResult:
    """In ``selected``'s order, the result of each scenario that came in (in any order: a
    Dask cluster's, the live ones'), an error case for each that did not finish: the reports
    show what ran and what did not."""
    from agentrig.harness.results import SuiteResult
    from agentrig.harness.runner import failed_result

    message = NOT_FINISHED.format(signal=_shown_signal(signal))
    finished = {_result_key(result): result for result in done}
    return SuiteResult(
        scenarios=tuple(
            finished.get(_scenario_key(scenario)) or failed_result(scenario, message)
            for scenario in selected
        ),
        wall_time_s=time.perf_counter() - started,
    )


def _scenario_key(scenario: Scenario) -> tuple[str, int | None, str]:
    source = scenario.source
    return (str(source.path), source.line, scenario.name) if source else ("", None, scenario.name)


def _result_key(result: ScenarioResult) -> tuple[str, int | None, str]:
    return ("" if result.file == "<memory>" else result.file, result.line, result.name)


def _shown_signal(name: str) -> str:
    return "Ctrl-C (SIGINT)" if name == "SIGINT" else name


def _report_interrupted(
    result: SuiteResult,
    ran: Sequence[ScenarioResult],
    selected: int,
    stopped_by: tuple[str, int],
    report_dir: Path,
    report: list[str] | None,
    *,
    quiet: bool,
    shard: ShardInfo | None = None,
) -> NoReturn:
    """Ctrl-C, SIGTERM or SIGHUP: show the failures of the scenarios that ``ran``, write the
    reports of ``result`` (where each scenario not finished is an error case saying so) and exit
    128 + the signal's number."""
    from agentrig.harness.reporting import writer_names
    from agentrig.harness.reporting.terminal import format_counts
    from agentrig.harness.results import SuiteResult

    name, number = stopped_by
    if not quiet:
        _failure_details(SuiteResult(scenarios=tuple(ran), wall_time_s=0.0))
    counts = format_counts(SuiteResult(scenarios=tuple(ran), wall_time_s=0.0))
    line = (
        f"[yellow]interrupted by {_shown_signal(name)}: {len(ran)} of {selected} scenario(s) "
        f"ran: {counts}"
    )
    formats = list(dict.fromkeys(report or writer_names()))
    try:
        written = _write_reports(result, report_dir, formats, shard)
    except OSError as error:
        console.print(f"{line}; no reports written[/]", soft_wrap=True)
        _fail_write(report_dir, error, "--report-dir", what="reports to ")
    folders = {path.parent for path in written}
    where = f"{folders.pop()}/" if len(folders) == 1 else ", ".join(map(str, written))
    unfinished = selected - len(ran)  # none when every scenario ended (live: a partial verdict)
    tail = f" (the {unfinished} not finished as errors)" if unfinished else ""
    console.print(f"{line}; reports in {escape(where)}{tail}[/]", soft_wrap=True)
    raise typer.Exit(128 + number)


def _report_and_exit(
    result: SuiteResult,
    report_dir: Path,
    report: list[str] | None,
    *,
    verbose: bool = False,
    unloadable: int = 0,
    shard: ShardInfo | None = None,
) -> NoReturn:
    """Write the reports (and a shard's ``shard.json``), print the summary line, and exit 0
    when everything passed, 2 when ``unloadable`` files did not load (reported as error
    cases), else 1."""
    from agentrig.harness.reporting import writer_names

    formats = list(dict.fromkeys(report or writer_names()))
    try:
        written = _write_reports(result, report_dir, formats, shard)
    except OSError as error:
        _summary_line(result, [], [], unloadable=unloadable)
        _fail_write(report_dir, error, "--report-dir", what="reports to ")
    _summary_line(result, written, formats, verbose=verbose, unloadable=unloadable)
    raise typer.Exit(_exit_code(result, unloadable))


def _write_reports(
    result: SuiteResult, report_dir: Path, formats: list[str], shard: ShardInfo | None
) -> list[Path]:
    """The reports in ``formats``, then ``shard.json`` for a shard's run (not among the paths
    returned: the summary names the reports). The cyclic collector is off meanwhile: writing
    them makes many short-lived objects, each full collection would visit all that this
    process holds (a Dask run's: the engine's modules and state too; 0.15-0.35 s of a 0.55-0.8
    s writing of 1,000 scenarios' reports, docs/performance.md), and the process ends next."""
    from agentrig.harness.reporting import write_reports
    from agentrig.harness.scenarios.loader import collector_paused

    with collector_paused():
        written = write_reports(result, report_dir, formats)
    if shard is not None:
        shard.write(report_dir)
    return written


def _exit_code(result: SuiteResult, unloadable: int) -> int:
    """2 when files did not load, 0 when all passed, 3 when the only failures are live
    verdicts that are INCONCLUSIVE, else 1."""
    if unloadable:
        return 2
    if result.passed:
        return 0
    return 3 if result.failed_count == result.inconclusive_count else 1


def _summary_line(
    result: SuiteResult,
    written: list[Path],
    formats: list[str],
    *,
    verbose: bool = False,
    unloadable: int = 0,
) -> None:
    """``N passed, M failed in Ts; reports in DIR/ (html, json, ...)``, short enough for 80
    columns; each report's path in full with ``-v`` or when they are not in one folder. Files
    that did not load count as failed, and the line says how many there were. INCONCLUSIVE
    live verdicts are counted apart (``3 passed, 1 failed, 1 inconclusive``); yellow when they
    are all that did not pass."""
    from agentrig.harness.reporting.terminal import format_counts

    colour = "green" if result.passed else "red"
    if not result.passed and result.failed_count == result.inconclusive_count:
        colour = "yellow"
    line = f"[{colour}]{format_counts(result)}[/] "
    if unloadable:
        line += f"[red]({unloadable} file(s) did not load)[/] "
    line += f"in {result.wall_time_s:.2f}s"
    folders = {path.parent for path in written}
    if written and len(folders) == 1 and not verbose:
        line += f"; reports in {escape(str(folders.pop()))}/ ({escape(', '.join(formats))})"
    elif written:
        line += f"; reports: {escape(', '.join(str(path) for path in written))}"
    console.print(line, soft_wrap=True)  # one line: the terminal folds it, nothing pads it


def main() -> None:
    """Entry point of the ``agentrig`` script."""
    global _AS_PROGRAM
    _AS_PROGRAM = True
    # What the imports made lives as long as the process: frozen, the collections the command
    # triggers (a full one as a run's objects pile up) no longer walk every module and class.
    gc.freeze()
    for stream in (sys.stdout, sys.stderr):
        # Text a run produced may hold what the terminal's encoding cannot (a lone surrogate
        # from a tool): shown as an escape rather than a crash before the reports are written.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        app()
    finally:
        end_without_a_last_collection()
