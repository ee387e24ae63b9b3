"""agentrig's pytest plugin (the ``pytest11`` entry point ``agentrig``).

Inert until asked: scenario files are collected only with ``--agentrig-scenarios`` (or the ini
option ``agentrig_scenarios = true``), and folders named ``failing`` only when given explicitly.
Fixtures give the fakes, a harness that runs an agent built in Python against a scenario, and
record/replay cassettes. One thing is always on (DESIGN §3): agentrig's real providers may not
reach an LLM API from a test unless it is marked ``agentrig_real_llm``; replayed HTTP cassettes
are unaffected. Heavy imports happen inside the hooks and fixtures that need them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest.fixtures import FuncFixtureInfo
    from syrupy.assertion import SnapshotAssertion

    from agentrig import AgentBuilder
    from agentrig.fakes import FakeClock, ScriptedLLM, SeededIds, Turn
    from agentrig.harness.cassettes.fixture import CassetteFactory
    from agentrig.harness.endpoint.extras import Extra
    from agentrig.harness.endpoint.function import ReplyFunction
    from agentrig.harness.endpoint.handle import EndpointHandle
    from agentrig.harness.fuzz import FuzzReport
    from agentrig.harness.live.run import LiveRun
    from agentrig.harness.results import ScenarioResult
    from agentrig.harness.scale.cluster import DaskExecutor
    from agentrig.harness.scenarios.model import Scenario

SUFFIX = ".scenario.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options live under the ``--agentrig-`` prefix."""
    group = parser.getgroup("agentrig", "agentrig scenario harness")
    group.addoption(
        "--agentrig-scenarios",
        action="store_true",
        default=None,
        help="collect *.scenario.yaml files as test items",
    )
    group.addoption(
        "--agentrig-deep",
        action="store_true",
        default=False,
        help="run agentrig property tests with many more examples",
    )
    group.addoption(
        "--agentrig-report-dir",
        default=None,
        metavar="DIR",
        help="also write agentrig reports (JUnit, JSON, Markdown, HTML) of collected scenarios to DIR",
    )
    group.addoption(
        "--agentrig-record-mode",
        default=None,
        choices=("none", "once", "new_episodes", "all"),
        help="record mode of agentrig_cassette providers (default: the test's, else none)",
    )
    group.addoption(
        "--agentrig-live",
        action="store_true",
        default=False,
        help="run live scenarios (user, judge, trials) against real models; skipped otherwise",
    )
    group.addoption(
        "--agentrig-live-cache",
        default=".agentrig/cache",
        metavar="DIR",
        help="where live trials are recorded and replayed from (default .agentrig/cache)",
    )
    group.addoption(
        "--agentrig-live-run-id",
        default=None,
        metavar="NAME",
        help="the run's name in each live trial's x-agentrig-trial header (default: random)",
    )
    group.addoption(
        "--agentrig-executor",
        default="local",
        metavar="EXECUTOR",
        help="where collected scenarios and live trials run: local (this process), dask (a "
        "local Dask cluster, one worker per CPU) or dask://HOST:PORT (a running Dask "
        "scheduler); dask needs the dask extra",
    )
    parser.addini(
        "agentrig_scenarios", type="bool", default=False, help="collect *.scenario.yaml files"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the marker, the report collector and, when asked, the hypothesis profiles."""
    config.addinivalue_line(
        "markers", "agentrig_scenario: an item collected from an agentrig *.scenario.yaml file"
    )
    config.addinivalue_line(
        "markers",
        "agentrig_real_llm: allow agentrig's real providers to reach LLM APIs in this test "
        "(blocked otherwise; HTTP cassette replays always work)",
    )
    config.addinivalue_line(
        "markers",
        "agentrig_cassette(path=None, *, mode=None, any_order=False): the cassette the "
        "agentrig_cassette fixture records to or replays from (path relative to the test file)",
    )
    config.stash[_RESULTS] = []
    # Registered before other plugins' cleanups, so it runs after them (pytest's own full
    # collections at the end of a session among them): what collection froze is given back to
    # the garbage collector, for a process that goes on (pytester's inline runs).
    config.add_cleanup(lambda: _thaw(config))
    _configure_hypothesis(config)
    _configure_executor(config)


def _configure_executor(config: pytest.Config) -> None:
    """``--agentrig-executor``: read now, so that a bad one is a usage error before any test
    runs (an unknown executor, the dask extra missing); the cluster opens at the first
    scenario that runs."""
    text = config.getoption("--agentrig-executor", default="local")
    if text == "local":
        return
    from agentrig.errors import AgentrigError
    from agentrig.harness.scale.cluster import parse_executor, require_dask, start_worker_server

    try:
        executor = parse_executor(text)
        require_dask()
    except AgentrigError as error:
        raise pytest.UsageError(str(error).replace("--executor", "--agentrig-executor")) from None
    assert executor is not None
    if executor.address is None and _collecting(config):
        # its workers' process imports while pytest collects
        start_worker_server(live=bool(config.getoption("--agentrig-live", default=False)))
    config.stash[_EXECUTOR] = executor


_FROZEN = pytest.StashKey[bool]()
"""Set when scenarios were collected: whether this session froze them (and thaws them)."""


def _thaw(config: pytest.Config) -> None:
    frozen = config.stash.get(_FROZEN, None)
    if frozen is None:
        return
    if frozen:
        gc.unfreeze()
    from agentrig.harness.process_end import freeze_at_exit_of_pytest

    freeze_at_exit_of_pytest()  # pytest as the program: what it held is frozen at exit


def _configure_hypothesis(config: pytest.Config) -> None:
    """``--agentrig-deep`` loads the ``agentrig-deep`` profile; naming an ``agentrig-*`` profile
    with ``--hypothesis-profile`` registers the profiles first (this hook runs before hypothesis's)."""
    deep = bool(config.getoption("--agentrig-deep"))
    named = config.getoption("--hypothesis-profile", default=None)
    if not deep and not (isinstance(named, str) and named.startswith("agentrig-")):
        return
    from importlib.util import find_spec

    if find_spec("hypothesis") is None:
        from agentrig.errors import install_hint

        hint = install_hint("hypothesis", "hypothesis")
        raise pytest.UsageError(f"--agentrig-deep needs hypothesis: {hint}")
    from agentrig.harness.property.profiles import load_profile, register_profiles

    register_profiles()
    if deep:
        load_profile(deep=True)


def _collecting(config: pytest.Config) -> bool:
    option = config.getoption("--agentrig-scenarios")
    return bool(option) if option is not None else bool(config.getini("agentrig_scenarios"))


def _explicit(config: pytest.Config, path: Path) -> bool:
    given = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    return any(path == arg or (arg.name == "failing" and arg in path.parents) for arg in given)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """Collecting scenario files, the cyclic garbage collector waits, as it does while
    ``load_suite`` loads (its full collections would visit every scenario collected so far);
    then what was collected is frozen out of its view (``gc.freeze``): the items live as long
    as the session, and every later full collection, such as those pytest runs at the end of a
    session, would visit each of their objects again (0.9 s a collection for 1,000 files); the
    session's last cleanup unfreezes them, unless the process had frozen objects before (a
    pytest run inside another): those would be unfrozen with them, so all stay frozen. A small
    collection (``many_young_objects``) is left to the collector: freezing it saves little, and
    finding out whether the process froze objects walks all of them."""
    if not _collecting(session.config):
        yield
        return
    from agentrig.harness.scenarios.loader import collector_paused, many_young_objects

    with collector_paused():
        yield
        freeze = many_young_objects()
        # gc.unfreeze thaws everything: after a host's freeze, nothing is thawed at the end
        host_froze = freeze and gc.get_freeze_count() > 0
        if freeze:
            gc.freeze()  # before the collector is back on: it never visits them, not even once
    session.config.stash[_FROZEN] = freeze and not host_froze


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect scenario files when asked to."""
    if not file_path.name.endswith(SUFFIX) or not _collecting(parent.config):
        return None
    if "failing" in file_path.parent.parts and not _explicit(parent.config, file_path.resolve()):
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


class ScenarioFile(pytest.Module):
    """A ``*.scenario.yaml`` file: one scenario, one test item.

    A ``Module`` with no Python object (as pytest's own doctest text files are), so module-scoped
    fixtures, such as those other plugins use automatically, reach its item.
    """

    obj = None

    def collect(self) -> Iterable[pytest.Item]:
        """Load the file; errors name the file, line and field."""
        from agentrig.harness.scenarios.loader import load_scenario

        scenario = load_scenario(self.path)
        # Every scenario item requests the same fixtures, and a folder's files see the same
        # fixture definitions: pytest works the closure out once per folder, not per file.
        known = self.parent.stash.get(_FOLDER_FIXTURES, None) if self.parent else None
        fixtures = None if known is None else _own_copy(known)
        item = ScenarioItem.from_parent(
            self, name=scenario.name, scenario=scenario, fixtureinfo=fixtures
        )
        if known is None and self.parent is not None:
            self.parent.stash[_FOLDER_FIXTURES] = item._fixtureinfo
        yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """A file error as its message, not a traceback."""
        from agentrig.errors import AgentrigError

        if isinstance(excinfo.value, AgentrigError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))


_FOLDER_FIXTURES = pytest.StashKey["FuncFixtureInfo"]()


def _own_copy(info: FuncFixtureInfo) -> FuncFixtureInfo:
    """``info`` with lists of its own: an item's ``fixturenames`` is its closure list, which
    plugins may change for that item alone."""
    return dataclasses.replace(
        info, names_closure=list(info.names_closure), name2fixturedefs=dict(info.name2fixturedefs)
    )


class ScenarioFailed(Exception):
    """Raised by a scenario item whose run failed."""

    def __init__(self, result: ScenarioResult) -> None:
        self.result = result
        super().__init__(f"scenario {result.name} failed")


def _fixtures_of_scenario_items(agentrig_builder: object) -> None:
    """Declares the fixtures a scenario item requests (its signature is what pytest reads)."""


class ScenarioItem(pytest.Function):
    """One scenario run through the real loop with a scripted model; the agent is the one the
    ``agentrig_builder`` fixture (or the file's ``agent.builder``) gives, else scripted tools."""

    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(callobj=_fixtures_of_scenario_items, **kwargs)
        self.scenario = scenario
        self.add_marker(pytest.mark.agentrig_scenario)
        if scenario.is_live:  # its trials talk to real models (run only with --agentrig-live)
            self.add_marker(pytest.mark.agentrig_real_llm)
        self.extra_keyword_matches.update(scenario.tags)

    def runtest(self) -> None:
        """Run the scenario; raise ``ScenarioFailed`` on any failure. A live scenario runs
        only with ``--agentrig-live`` (it is skipped otherwise): its verdict must be PASS."""
        if self.scenario.is_live:
            result = self._run_live()
        else:
            builder = self._builder(self.funcargs["agentrig_builder"])
            cluster = _cluster(self)
            if cluster is not None:
                from agentrig.harness.scale.suite import run_scenario_on_dask

                result = _on_cluster(
                    lambda: run_scenario_on_dask(cluster.client, self.scenario, builder=builder)
                )
            else:
                from agentrig.harness.runner import run_scenario

                result = run_scenario(self.scenario, builder=builder)
        self.config.stash[_RESULTS].append(result)
        if not result.passed:
            raise ScenarioFailed(result)

    def _run_live(self) -> ScenarioResult:
        if not self.config.getoption("--agentrig-live"):
            pytest.skip("a live scenario: run it with --agentrig-live")

        from agentrig.harness.live.suite import run_live_suite

        cluster = _cluster(self)
        run = _live_run(self.config) if cluster is None else cluster.live
        assert run is not None
        runner = self.config.stash.get(_LIVE_LOOP, None)
        if runner is None:  # one event loop for every live scenario of the session, so that an
            # agent's SDK client made once (at import) keeps working from one scenario to the next
            runner = self.config.stash[_LIVE_LOOP] = asyncio.Runner()
        return runner.run(run_live_suite([self.scenario], run))[0]

    def _builder(self, chosen: object) -> AgentBuilder | None:
        """The fixture's builder for this scenario; a file naming its own ``agent.builder``
        keeps it."""
        from agentrig import AgentBuilder

        if chosen is None or self.scenario.agent.builder is not None:
            return None
        if not isinstance(chosen, AgentBuilder) and callable(chosen):
            chosen = chosen(self.scenario)
            if chosen is None or isinstance(chosen, AgentBuilder):
                return chosen
            pytest.fail(
                f"agentrig_builder: the function the fixture gives returned {chosen!r} for "
                f"scenario {self.scenario.name!r}; return an AgentBuilder (or None for scripted "
                "tools only)",
                pytrace=False,
            )
        if isinstance(chosen, AgentBuilder):
            return chosen
        pytest.fail(
            f"agentrig_builder: the fixture gave {type(chosen).__name__} {chosen!r}; give an "
            "AgentBuilder, a function taking the scenario and returning one (or None), or None",
            pytrace=False,
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """The domain diff: expected vs observed turn, failing invariant, file and line."""
        if isinstance(excinfo.value, ScenarioFailed):
            from agentrig.harness.reporting.terminal import format_scenario_failures

            return format_scenario_failures(excinfo.value.result)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """File and line of the scenario's ``name:``."""
        source = self.scenario.source
        line = source.line - 1 if source is not None else None
        return self.path, line, f"scenario: {self.name}"


_RESULTS = pytest.StashKey[list["ScenarioResult"]]()
_LIVE_LOOP = pytest.StashKey[asyncio.Runner]()
_EXECUTOR = pytest.StashKey["DaskExecutor"]()
_CLUSTER = pytest.StashKey[object]()
"""The session's ``_Cluster``, or the ``AgentrigError`` that kept it from opening."""


def _live_run(config: pytest.Config) -> LiveRun:
    """The live run the ``--agentrig-live-*`` options describe."""
    from agentrig.harness.live.options import live_run_options

    return live_run_options(
        cache_dir=config.getoption("--agentrig-live-cache"),
        run_id=config.getoption("--agentrig-live-run-id"),
        cache_option="--agentrig-live-cache",
    )


class _Cluster:
    """The Dask cluster of ``--agentrig-executor`` while the session lasts: its client, and
    the live run whose trials go to it (with ``--agentrig-live``)."""

    def __init__(self, executor: DaskExecutor, items: list[pytest.Item]) -> None:
        from agentrig.harness.scale.session import dask_session

        config = items[0].config if items else None
        scenarios = [item.scenario for item in items if isinstance(item, ScenarioItem)]
        live = config is not None and bool(config.getoption("--agentrig-live"))
        self.live = _live_run(config) if live and config is not None else None
        self._stack = contextlib.ExitStack()
        self.client = self._stack.enter_context(dask_session(executor, scenarios, live=self.live))

    def close(self) -> None:
        """Close the cluster (a local one stops) and forget the run on it."""
        self._stack.close()


def _cluster(item: ScenarioItem) -> _Cluster | None:
    """The session's cluster (opened at its first scenario), None without one; a cluster that
    does not open (a worker missing a module the scenarios need...) fails each scenario with
    its error."""
    from agentrig.errors import AgentrigError

    config = item.config
    executor = config.stash.get(_EXECUTOR, None)
    if executor is None:
        return None
    if _CLUSTER not in config.stash:
        try:
            config.stash[_CLUSTER] = _Cluster(executor, list(item.session.items))
        except AgentrigError as error:
            config.stash[_CLUSTER] = error
    opened = config.stash[_CLUSTER]
    if isinstance(opened, AgentrigError):
        pytest.fail(f"--agentrig-executor {executor}: {opened}", pytrace=False)
    assert isinstance(opened, _Cluster)
    return opened


def _on_cluster(run: Callable[[], ScenarioResult]) -> ScenarioResult:
    """``run()``'s result; an error of agentrig's (a builder that cannot be sent to the
    workers...) fails the scenario with its message."""
    from agentrig.errors import AgentrigError

    try:
        return run()
    except AgentrigError as error:
        problem = str(error)
    pytest.fail(problem, pytrace=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write agentrig reports of the collected scenarios when ``--agentrig-report-dir`` is set;
    close the cluster of ``--agentrig-executor`` and the live scenarios' event loop."""
    cluster = session.config.stash.get(_CLUSTER, None)
    if isinstance(cluster, _Cluster):
        cluster.close()
    runner = session.config.stash.get(_LIVE_LOOP, None)
    if runner is not None:
        runner.close()
    directory = session.config.getoption("--agentrig-report-dir")
    results = session.config.stash.get(_RESULTS, [])
    if directory and results:
        from agentrig.harness.reporting import write_reports
        from agentrig.harness.results import SuiteResult

        ordered = tuple(sorted(results, key=lambda r: (r.file, r.name)))
        write_reports(SuiteResult(scenarios=ordered, wall_time_s=0.0), Path(directory))


# --- fixtures ----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _agentrig_block_real_llm_calls(request: pytest.FixtureRequest) -> Iterator[None]:
    """Real providers may not reach an LLM API unless the test is marked ``agentrig_real_llm``;
    a blocked call fails the test even when the agent loop caught the error."""
    if request.node.get_closest_marker("agentrig_real_llm") is not None:
        from agentrig.drivers.network import use_real_call_policy

        with use_real_call_policy(None):
            yield
        return
    from agentrig.harness.cassettes.network_block import block_real_llm_calls

    with block_real_llm_calls() as blocker:
        yield
    if blocker.blocked:
        provider, url = blocker.blocked[0]
        pytest.fail(
            f"real {provider} call to {url} blocked ({len(blocker.blocked)} in all): replay an "
            "HTTP cassette, use agentrig.fakes, or mark the test @pytest.mark.agentrig_real_llm",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _agentrig_http_cassette_misses(request: pytest.FixtureRequest) -> Iterator[None]:
    """A pytest-recording test (``@pytest.mark.vcr``) whose cassette agentrig configured fails
    when a request matched no recorded interaction, even when the agent loop caught the error
    and recorded a failed step, as ``use_http_cassette`` does when its block ends."""
    cassette = None
    if request.node.get_closest_marker("vcr") is not None and "vcr" in request.fixturenames:
        cassette = request.getfixturevalue("vcr")
    if cassette is None:
        yield
        return
    from agentrig.harness.cassettes import http as http_cassettes

    if not http_cassettes.is_configured(cassette):
        yield
        return
    misses = http_cassettes.record_misses(cassette)
    yield
    if misses:
        path = getattr(cassette, "_path", "the cassette")
        pytest.fail(
            f"{len(misses)} request(s) matched no recorded interaction of {path}, although the "
            f"test went on (the agent loop records a provider error as a failed step); the "
            f"first:\n{misses[0]}",
            pytrace=False,
        )


@pytest.fixture
def agentrig_builder() -> object:
    """The agent that collected scenario files run: override it in ``conftest.py`` to return an
    ``AgentBuilder`` (its tools take the place of the scenarios' scripted tools of the same
    name), or a function taking the ``Scenario`` and returning one, or None for scripted tools
    only. This default returns None. A file's ``agent.builder`` takes precedence."""
    return None


@pytest.fixture
def fake_clock() -> FakeClock:
    """A ``FakeClock`` at 2026-01-01T00:00:00Z."""
    from agentrig.fakes import FakeClock

    return FakeClock()


@pytest.fixture
def seeded_ids() -> SeededIds:
    """``SeededIds(0)``."""
    from agentrig.fakes import SeededIds

    return SeededIds(0)


@pytest.fixture
def scripted_llm(fake_clock: FakeClock) -> Iterator[Callable[..., ScriptedLLM]]:
    """A factory of ``ScriptedLLM``s on the fake clock; each must be used up by the test's end."""
    from agentrig.fakes import ScriptedLLM

    made: list[ScriptedLLM] = []

    def make(turns: Iterable[Turn | str], *, name: str = "ScriptedLLM") -> ScriptedLLM:
        llm = ScriptedLLM(turns, clock=fake_clock, name=name)
        made.append(llm)
        return llm

    yield make
    from agentrig.fakes import UnusedTurnsError

    unused = []
    for llm in made:
        try:
            llm.assert_complete()
        except UnusedTurnsError as error:
            unused.append(str(error))
    if unused:
        pytest.fail("\n".join(unused), pytrace=False)


class Harness:
    """Runs scenarios (files or models), optionally against an agent built in Python; a
    relative path is looked up from the current folder, then in ``beside`` (the test's folder)."""

    def __init__(self, beside: Path | None = None) -> None:
        self.beside = beside

    def load(self, path: str | Path) -> Scenario:
        """Load a scenario file; one that does not load fails the test with the error's
        message (its file, line and field), without a traceback into agentrig."""
        from agentrig.harness.errors import ScenarioFileError
        from agentrig.harness.scenarios.loader import load_scenario

        found = Path(path)
        beside = self.beside / found if self.beside is not None else found
        if not found.is_absolute() and not found.exists() and beside.exists():
            found = beside
        try:
            return load_scenario(found)
        except ScenarioFileError as error:
            problem = str(error)
        pytest.fail(problem, pytrace=False)

    def run(
        self,
        scenario: Scenario | str | Path,
        *,
        builder: AgentBuilder | None = None,
        use_async: bool = False,
    ) -> ScenarioResult:
        """Run ``scenario``; with ``builder``, its tools and hooks are the agent under test;
        with ``use_async``, each turn runs through the async path (``AgentLoop.aiterate``,
        ``async def`` tools awaited, the calls of a step run together)."""
        from agentrig.harness.runner import run_scenario

        model = scenario if not isinstance(scenario, str | Path) else self.load(scenario)
        return run_scenario(model, builder=builder, use_async=use_async)

    def assert_passes(
        self,
        scenario: Scenario | str | Path,
        *,
        builder: AgentBuilder | None = None,
        use_async: bool = False,
    ) -> ScenarioResult:
        """Run ``scenario`` (as :meth:`run` does) and fail the test with the domain diff unless
        it passes."""
        from agentrig.harness.reporting.terminal import format_scenario_failures

        result = self.run(scenario, builder=builder, use_async=use_async)
        if not result.passed:
            pytest.fail(format_scenario_failures(result), pytrace=False)
        return result


@pytest.fixture
def agentrig_harness(request: pytest.FixtureRequest) -> Harness:
    """A ``Harness`` to run scenarios from tests; a relative path is looked up from the current
    folder, then next to the test file."""
    return Harness(beside=request.node.path.parent)


@pytest.fixture
def agentrig_snapshot(request: pytest.FixtureRequest) -> SnapshotAssertion:
    """syrupy's ``snapshot`` storing agentrig's text form of states and transcripts, one
    ``.agentrig.txt`` file per assertion (needs the ``syrupy`` extra)."""
    from importlib.util import find_spec

    if find_spec("syrupy") is None:
        from agentrig.errors import MissingDependencyError

        pytest.fail(str(MissingDependencyError("syrupy", "syrupy")), pytrace=False)
    from agentrig.harness.snapshot import AgentrigSnapshotExtension

    snapshot: SnapshotAssertion = request.getfixturevalue("snapshot")
    return snapshot.use_extension(AgentrigSnapshotExtension)


@pytest.fixture
def agentrig_cassette(request: pytest.FixtureRequest) -> Iterator[CassetteFactory]:
    """A factory of record/replay providers: ``agentrig_cassette(inner)`` uses
    ``cassettes/<module>/<test>.yaml`` next to the test file. The test fails at teardown when a
    request matched no recording or recorded interactions were never played."""
    from agentrig.harness.cassettes.fixture import CassetteFactory

    marker = request.node.get_closest_marker("agentrig_cassette")
    options = _cassette_marker_options(marker) if marker is not None else {}
    factory = CassetteFactory(
        request.node.path,
        request.node.nodeid.split("::", 1)[-1],
        forced_mode=request.config.getoption("--agentrig-record-mode"),
        marker=options,
    )
    request.node.stash[_CASSETTES] = factory
    yield factory
    problems = factory.problems()
    if problems and not request.node.stash.get(_CASSETTE_CAUSE_REPORTED, False):
        pytest.fail("\n\n".join(problems), pytrace=False)


_CASSETTES = pytest.StashKey["CassetteFactory"]()
_CASSETTE_CAUSE_REPORTED = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test that failed while its cassette missed a request, or while an endpoint's agent
    broke its scenario, fails with that cause, first, and once: the assertion it then tripped
    follows, and teardown reports nothing more."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    causes = item.stash.get(_ENDPOINT_CAUSES, [])
    factory = item.stash.get(_CASSETTES, None)
    if factory is not None:
        problems = factory.problems()
        if problems:
            item.stash[_CASSETTE_CAUSE_REPORTED] = True
            causes = [*problems, *causes]
    if causes:
        cause = "\n\n".join(causes)
        report.longrepr = f"{cause}\n\nThe test then failed with:\n{report.longreprtext}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """The endpoints a test opened are checked as soon as its body ends, so that a broken
    scenario fails the test (a failure, not an error at teardown), once: an endpoint the body
    already checked (``check()``) is not checked again. When the body itself failed, what the
    endpoints found is shown first, as its likely cause."""
    handles = item.stash.get(_ENDPOINTS, None)
    try:
        yield
    except (pytest.skip.Exception, pytest.xfail.Exception):
        for handle in handles or ():
            handle.checked = True  # a skipped test has no verdict to give
        raise
    except BaseException:
        if handles:
            item.stash[_ENDPOINT_CAUSES] = _endpoint_problems(handles)
        raise
    if handles:
        problems = _endpoint_problems(handles)
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def agentrig_endpoint(request: pytest.FixtureRequest) -> Iterator[Callable[..., EndpointHandle]]:
    """Serve a scenario's scripted model to the agent under test:
    ``agentrig_endpoint("weather.scenario.yaml")`` gives an ``EndpointHandle`` (API key, base
    URLs, in-process clients; ``live=True`` for a real loopback server; ``key=`` the session's
    API key, which picks a ``mixture`` turn's branch; ``replies=`` a function deciding each
    reply instead of the turns' scripts). A relative path is looked up from the
    current folder, then next to the test file. When the test's body ends, the test fails with
    the domain diff if a check failed or scripted replies went unused (once: a handle whose
    ``check()`` the body called is left to it)."""
    _require_extra("endpoint")
    from agentrig.errors import AgentrigError
    from agentrig.harness.endpoint.handle import EndpointHandle
    from agentrig.harness.scenarios.model import Scenario as LoadedScenario

    handles: list[EndpointHandle] = []

    def open_endpoint(
        scenario: str | Path | Scenario,
        *,
        live: bool = False,
        key: str | None = None,
        replies: ReplyFunction | None = None,
    ) -> EndpointHandle:
        if live:
            _require_extra("serve")
        if not isinstance(scenario, LoadedScenario):
            path = Path(scenario)
            if not path.is_absolute() and not path.exists():
                path = request.node.path.parent / path
            scenario = path
        try:
            handle = EndpointHandle(scenario, live=live, key=key, replies=replies)
        except AgentrigError as error:  # a file that does not load, a port that is taken...
            problem = str(error)
        else:
            handles.append(handle)
            return handle
        pytest.fail(problem, pytrace=False)

    request.node.stash[_ENDPOINTS] = handles
    yield open_endpoint
    # Checked when the test's body ended (``pytest_runtest_call``); what is left here is a
    # handle no body saw (one a fixture opened and used in its own teardown).
    try:
        problems = _endpoint_problems(handles)
    finally:
        for handle in handles:
            handle.close()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


_ENDPOINTS = pytest.StashKey[list["EndpointHandle"]]()
_ENDPOINT_CAUSES = pytest.StashKey[list[str]]()


def _endpoint_problems(handles: list[EndpointHandle]) -> list[str]:
    """The domain diff of each handle not checked yet whose session failed (checking it)."""
    from agentrig.harness.endpoint.handle import EndpointCheckFailed

    problems = []
    for handle in handles:
        if handle.checked:
            continue
        try:
            handle.check()
        except EndpointCheckFailed as failure:
            problems.append(str(failure))
    return problems


@pytest.fixture
def agentrig_fuzz(request: pytest.FixtureRequest) -> Callable[..., FuzzReport]:
    """Fuzz an agent built on anything: ``agentrig_fuzz(agent, prompt, behaviours=...,
    properties=..., max_examples=200)`` with ``agent(ep, prompt)`` a function that runs the
    agent against an endpoint handle (see ``agentrig.harness.fuzz.fuzz``). hypothesis plays the
    model; a failure fails the test with the problems, the shrunk script written as a scenario
    file (under ``.agentrig/fuzz/`` of the root folder) and the one command that replays it."""
    _require_extra("endpoint")
    from agentrig.errors import AgentrigError
    from agentrig.harness.fuzz import FuzzFailure, fuzz

    def run(agent: Any, prompt: str, **options: Any) -> FuzzReport:
        options.setdefault("folder", request.config.rootpath / ".agentrig" / "fuzz")
        try:
            return fuzz(agent, prompt, **options)
        except FuzzFailure as failure:
            problem = str(failure)
        except AgentrigError as error:  # an agent that never reached the endpoint, ...
            problem = str(error)
        pytest.fail(problem, pytrace=False)

    return run


_CASSETTE_MARKER_ARGUMENTS = ("path", "mode", "any_order")


def _require_extra(extra: Extra) -> None:
    """Fail the test with the extra to install when ``extra``'s packages are missing."""
    from agentrig.errors import MissingDependencyError
    from agentrig.harness.endpoint.extras import require_extra

    try:
        require_extra(extra)
    except MissingDependencyError as error:
        missing = str(error)
    else:
        return
    pytest.fail(missing, pytrace=False)  # outside the handler: no chained exception shown


def _cassette_marker_options(marker: pytest.Mark) -> dict[str, Any]:
    """The marker's arguments by name; a typo or a surplus argument fails the test's setup
    rather than being ignored (the test would then use another cassette than intended)."""
    options = dict(marker.kwargs)
    problem = None
    unknown = sorted(set(options) - set(_CASSETTE_MARKER_ARGUMENTS))
    if len(marker.args) > 1:
        problem = f"takes at most one positional argument (the path), got {len(marker.args)}"
    elif unknown:
        problem = f"unknown argument {unknown[0]!r}; valid: {', '.join(_CASSETTE_MARKER_ARGUMENTS)}"
    elif marker.args and "path" in options:
        problem = "the path is given twice (positionally and as path=)"
    elif options.get("mode") is not None:
        from agentrig.errors import InvalidInputError
        from agentrig.harness.cassettes import RecordMode

        try:
            RecordMode.parse(options["mode"])
        except InvalidInputError as error:
            problem = f"mode {error.problems[0][1]}"
    if problem is not None:
        pytest.fail(f"@pytest.mark.agentrig_cassette: {problem}", pytrace=False)
    if marker.args:
        options["path"] = marker.args[0]
    return options
