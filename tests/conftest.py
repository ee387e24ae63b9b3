"""Shared fixtures for the runtime tests: a fake clock, seeded ids and an agent factory."""

from __future__ import annotations

import atexit
import contextlib
import copy
import gc
import importlib
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from agentrig import (
    AgentBuilder,
    AgentCapability,
    AgentLoop,
    AgentState,
    EventBus,
    HookTrigger,
    InferenceProvider,
    Tool,
    UseLlmConfig,
    runtime_context,
)
from agentrig.fakes import FakeClock, SeededIds
from agentrig.harness.process_end import end_without_a_last_collection

# httpx and httpx2 import their httpcore on a transport's first use, and keep the httpcore
# exception classes they map. A pytester run in this process removes the modules first imported
# during it: an httpcore imported there and imported again later has other exception classes,
# which httpx no longer maps (a refused connection then escapes the SDKs unwrapped, failing a
# later test). Imported here, before any pytester run, they stay the same for the whole session.
for _module in ("httpcore", "httpcore2"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_module)

# The pytest runs the tests start (the docs', pytest in a subprocess; pytester's: see its
# fixture below) read their own ini file, not pyproject.toml's addopts: without this, each would
# import langsmith's unused plugin (about 400 modules), and an in-process run would drop them
# again when it ends.
NO_LANGSMITH = "-p no:langsmith_plugin"
os.environ["PYTEST_ADDOPTS"] = " ".join(
    filter(None, [os.environ.get("PYTEST_ADDOPTS"), NO_LANGSMITH])
)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, whose runs skip langsmith's plugin too: pytester drops
    ``PYTEST_ADDOPTS`` (the outer run's options), so each of its runs imported that plugin and
    an in-process run dropped its modules again when it ended: 0.45 CPU s a run in a process that
    had not imported langsmith yet (langchain-openai does), 62% of the CPU of the plugin,
    endpoint-fixture and cassette-plugin tests run on their own."""
    monkeypatch.setenv("PYTEST_ADDOPTS", NO_LANGSMITH)
    return pytester


# pytest-recording is left out of this session (pyproject.toml: its two autouse fixtures cost
# 0.3 ms a test, for the few pytester runs that use it, which load it themselves). Its import
# asks pytest to rewrite vcr.matchers; asked here as it did, before any test imports vcr, so
# those runs do not find the module imported without it (a warning, an error here).
pytest.register_assert_rewrite("vcr.matchers")

# The processes the tests start (agentrig run/serve, agents, bench scripts: about 150 of them)
# each compile agentrig's modules anew where PYTHONDONTWRITEBYTECODE is set (this machine, many
# CI images): compiled once here, they read them (checked: 18% of those tests' CPU time). A
# module edited since is compiled again (compileall compares the source's time and size).
if "PYTEST_XDIST_WORKER" not in os.environ:
    import compileall

    compileall.compile_dir(Path(__file__).parents[1] / "src" / "agentrig", quiet=1)


def _load_plugin(name: str) -> Any:
    """A module of tests/ (not a package) loaded by its path, registered under ``name``."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# pytest's assertion rewriting, kept in __pycache__ even where PYTHONDONTWRITEBYTECODE is set,
# and shared by the workers on a fresh checkout: see tests/rewrite_once.py.
_rewrite_once = _load_plugin("rewrite_once")
pytest_configure = _rewrite_once.pytest_configure
# xdist's loadgroup scheduler, without its per-test recount of each worker's pending tests
pytest_xdist_make_scheduler = _load_plugin("counted_scheduling").pytest_xdist_make_scheduler
# the pytest runs the tests start in this process read the installed distributions once
_load_plugin("metadata_once").read_installed_once()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collection with the rewritten modules kept (``rewrite_once``) and the garbage collector
    off: collection only adds to what lives on, and the full collections of that growing heap
    took 1.1 of its 6 CPU s; one collection at its end (``pytest_collection_finish``) frees its
    garbage (12 MiB more at the peak)."""
    gc.disable()
    try:
        return (yield from _rewrite_once.pytest_collection(session))
    finally:
        gc.enable()


def _agentrig_command_built_once() -> None:
    """typer's ``CliRunner.invoke`` builds the click command of the app it is given on every
    call (about 10 ms for agentrig's: typer evaluates the annotations of every command), and
    the tests invoke agentrig's hundreds of times (143 in the docs, CLI, shard and CI-doc
    tests alone). agentrig's app, whose commands are all registered when
    ``agentrig.harness.cli`` loads, is built once; any other app as before."""
    import typer.testing

    build = typer.testing._get_command
    # (app, its command) for agentrig's app as it is now: the command built again only when
    # the module was loaded anew (an in-process pytest run restores the modules it found)
    built: list[tuple[object, Any]] = []

    def get_command(app: Any) -> Any:
        cli = sys.modules.get("agentrig.harness.cli")
        if cli is None or app is not getattr(cli, "app", None):
            return build(app)
        if not built or built[0][0] is not app:
            built[:] = [(app, build(app))]
        return built[0][1]

    typer.testing._get_command = get_command


_agentrig_command_built_once()

R = TypeVar("R")

# --- running the suite in parallel (pyproject.toml: -n auto --dist loadgroup) -------------------

FEW_FILES = 8
"""Below this many test files, ``-n auto`` runs the tests in this process: a worker (a fresh
interpreter importing agentrig and collecting) costs more than it saves on a few files."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: none for a run of a few test files, else xdist's choice (one per CPU, or
    ``PYTEST_XDIST_AUTO_NUM_WORKERS``)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    root = Path(str(config.rootpath))
    given = [arg.split("::")[0] for arg in config.args] or list(config.getini("testpaths"))
    files = 0
    for arg in given:
        path = Path(arg) if Path(arg).is_absolute() else Path.cwd() / arg
        if not path.exists():
            path = root / arg
        files += len(list(path.rglob("test_*.py"))) if path.is_dir() else 1
        if files >= FEW_FILES:
            return None
    return 0


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``, the tests of a module that builds something once for the
    module (a fixture of module scope defined there: a wheel, a browser) run on one worker, so
    that it is built once, not once per worker; so do the tests of one ``xdist_group``."""
    _group_by_module_fixture(items)
    if config.getoption("loadgroup", default=False):
        for item in items:
            _name_group(item)


def _name_group(item: pytest.Item) -> None:
    """Append ``@GROUP`` to ``item``'s node id, which is how an xdist worker tells the
    scheduler an item's group. xdist does it in a hook of its own, which runs before this
    file's hook has marked the module groups, and on pytest 9.2 writes an attribute pytest no
    longer reads (pytest-xdist issue 1386): every group was spread over the workers, and each
    ran the doc runs and module fixtures of its share again."""
    groups = sorted(
        {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
    )
    if not groups or "@" in item.nodeid.rpartition("]")[2]:
        return
    nodeid = f"{item.nodeid}@{'_'.join(groups)}"
    if hasattr(item, "_id"):  # pytest >= 9.2: a structured id
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(nodeid)
    else:
        item._nodeid = nodeid


def _group_by_module_fixture(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.getparent(pytest.Module)
        info = getattr(item, "_fixtureinfo", None)
        if module is None or info is None or item.get_closest_marker("xdist_group"):
            continue
        if any(
            definition.scope in ("module", "package") and definition.baseid == module.nodeid
            for definitions in info.name2fixturedefs.values()
            for definition in definitions
        ):
            item.add_marker(pytest.mark.xdist_group(module.nodeid))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything collection built (test modules, the SDKs and frameworks they import) lives
    until the process ends: frozen, the garbage collector stops walking it in every full
    collection (and in the ones each in-process pytest run forces when it ends). What the
    tests build after it is frozen at the process's exit: the interpreter's last full
    collection would visit it all only to drop it."""
    gc.collect()  # collection's garbage, left while the collector was off (pytest_collection)
    gc.freeze()
    atexit.register(end_without_a_last_collection)


def pytest_runtest_call(item: pytest.Item) -> None:
    """A pytester run in this process ends with full garbage collections: frozen first, what the
    process holds (grown since collection) is not walked in each."""
    if "pytester" in getattr(item, "fixturenames", ()):
        gc.freeze()


HANG_BOUND_S = 60.0
"""How long a call may take before ``within_bound`` calls it a hang: far beyond any honest run
on a busy machine, far below the hours a hang takes. Not a speed check."""

HookSpec = tuple[Callable[..., Any], HookTrigger | str | Iterable[HookTrigger | str], int]


class MakeAgent(Protocol):
    def __call__(
        self,
        llm: InferenceProvider,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *capabilities: AgentCapability,
        hooks: Iterable[HookSpec] = (),
        events: EventBus | None = None,
        inline: bool = False,
        max_retries: int = 1,
    ) -> AgentLoop: ...


class Start(Protocol):
    def __call__(self, text: str = ..., **fields: Any) -> AgentState: ...


class Bounded(Protocol):
    def __call__(self, call: Callable[[], R], seconds: float = ...) -> R: ...


@pytest.fixture
def bounded() -> Bounded:
    """``bounded(call)``: see :func:`within_bound`."""
    return within_bound


def within_bound(call: Callable[[], R], seconds: float = HANG_BOUND_S) -> R:
    """``call()``'s result (or its exception), failing the test if it has not returned after
    ``seconds``: a regression test of a hang fails instead of hanging the suite. The call runs
    in a daemon thread, left behind if it hangs."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:
            outcome.append((False, error))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if not outcome:
        pytest.fail(f"still running after {seconds:.0f} s: a hang", pytrace=False)
    returned, value = outcome[0]
    if not returned:
        raise value
    return value  # type: ignore[no-any-return]


REAL_CASSETTES = Path(
    os.environ.get("AGENTRIG_REAL_CASSETTES")
    or Path(__file__).resolve().parents[2] / "shared" / "cassettes" / "real"
)
"""Cassettes other projects recorded against the real APIs (read in place, never copied);
``AGENTRIG_REAL_CASSETTES`` names the folder when the checkout is not beside it."""


@pytest.fixture
def real_cassette() -> Callable[[str], Path]:
    """The path of a shared real cassette; skips the test when the shared folder is absent."""
    pytest.importorskip("vcr")

    def find(relative: str) -> Path:
        path = REAL_CASSETTES / relative
        if not path.is_file():
            pytest.skip(f"shared cassette {relative} not available")
        return path

    return find


@pytest.fixture(scope="session")
def other_plugins_off() -> tuple[str, ...]:
    """``-p no:NAME`` for every installed pytest plugin but agentrig's and xdist's: for a pytest
    run in fresh interpreters (``-n 2``, ``runpytest_subprocess``) that checks agentrig's plugin
    alone. Each of those interpreters otherwise imports respx, hypothesis, syrupy, vcr... that
    the run never uses (measured: about 0.3 of the 0.8 CPU s a fresh pytest takes to start)."""
    from importlib.metadata import entry_points

    kept = {"agentrig", "xdist", "xdist.looponfail"}
    names = sorted({plugin.name for plugin in entry_points(group="pytest11")} - kept)
    return tuple(option for name in names for option in ("-p", f"no:{name}"))


@pytest.fixture
def clock() -> FakeClock:
    """Time that moves only when a turn, a tool or the test advances it."""
    return FakeClock()


@pytest.fixture
def ids() -> SeededIds:
    """Reproducible ids."""
    return SeededIds(7)


@pytest.fixture
def make_agent(clock: FakeClock, ids: SeededIds) -> MakeAgent:
    """Build an ``AgentLoop`` on the real driver, executor and hooks around a fake provider."""

    def make(
        llm: InferenceProvider,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *capabilities: AgentCapability,
        hooks: Iterable[HookSpec] = (),
        events: EventBus | None = None,
        inline: bool = False,
        max_retries: int = 1,
    ) -> AgentLoop:
        builder = (
            AgentBuilder.base()
            .with_clock(clock)
            .with_ids(ids)
            .with_capability(UseLlmConfig(llm, max_retries=max_retries))
            .with_tools(list(tools))
            .with_separated_tool_trace(not inline)
        )
        if events is not None:
            builder.with_events(events)
        for capability in capabilities:
            builder.with_capability(capability)
        for hook, triggers, priority in hooks:
            builder.add_hook(hook, triggers, priority)
        return builder.build()

    return make


@pytest.fixture
def start(clock: FakeClock, ids: SeededIds) -> Start:
    """A fresh state holding one user message, created on the test's clock and ids."""

    def make(text: str = "Hello", **fields: Any) -> AgentState:
        with runtime_context(clock=clock, ids=ids):
            return AgentState(**fields).with_user_message(text)

    return make


# --- hostile input: strategies shared by the loaders' fuzz tests ---------------------------------


class Hostile:
    """Hypothesis strategies for the fuzz tests of every loader: odd values, structural mutants
    of real data, damaged text. ``check(load, documented)`` runs one load within the hang bound
    and fails on any exception that is not a documented one."""

    TOKENS = (
        *("&a ", "*a", "!!set ", "!!pairs ", "!!omap ", "!!bool ", "!!int ", "!!binary "),
        *("!!timestamp ", "!!python/object ", "? ", "<<: ", "- ", ": ", "{", "}", "[", "]"),
        *(", ", "'", '"', "\\", "#", "|", ">", "\t", "\n", "\n  ", "\x00", "\ufeff", "\ud800"),
        *("name", "turns", "user", "version", "interactions", "2001-13-45", "maybe", ".nan"),
        *("1" + "0" * 4400, "NaN", "Infinity", "[" * 120, "{a: " * 60, "%YAML 1.1\n", "---\n"),
        *("0x" + "f" * 3572, "0" + "7" * 4800),  # integers YAML reads and Python cannot show
    )

    @staticmethod
    def values() -> Any:
        """Values a loader must refuse cleanly or accept: wrong types, huge and odd numbers,
        deep nesting, odd text."""
        from hypothesis import strategies as st

        leaves = st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.sampled_from([4300, 4301, 19, 20]).map(lambda digits: 10**digits),
            st.floats(),
            st.text(max_size=12),
            st.sampled_from(["", "2001-13-45", "yes", "\ud800", "\x00", "1e999"]),
            st.just(5000).map(lambda size: "a" * size),
        )
        nested = st.integers(min_value=95, max_value=300).map(Hostile._nested)
        shallow = st.recursive(
            leaves,
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=6), inner, max_size=3)
            ),
            max_leaves=6,
        )
        return st.one_of(shallow, nested)

    @staticmethod
    def _nested(depth: int) -> Any:
        value: Any = "x"
        for level in range(depth):
            value = [value] if level % 2 else {"k": value}
        return value

    @staticmethod
    def mutant(data: Any, base: Any) -> Any:
        """A structural mutant of ``base`` (plain data): a few nodes replaced, removed, added,
        wrapped or copied elsewhere. ``data`` is hypothesis's ``st.data()`` object."""
        from hypothesis import strategies as st

        value = copy.deepcopy(base)
        for _ in range(data.draw(st.integers(min_value=1, max_value=3), label="edits")):
            paths = list(Hostile._paths(value))
            path = data.draw(st.sampled_from(paths), label="at")
            action = data.draw(
                st.sampled_from(["replace", "remove", "add", "wrap", "copy"]), label="action"
            )
            if not path:
                value = data.draw(Hostile.values()) if action == "replace" else [value]
                continue
            *parent_path, last = path
            parent = value
            for part in parent_path:
                parent = parent[part]
            if action == "replace":
                parent[last] = data.draw(Hostile.values(), label="value")
            elif action == "remove":
                del parent[last]
            elif action == "add" and isinstance(parent, dict):
                key = data.draw(
                    st.sampled_from(["extra", "on", "<<", "", "1"]) | st.text(max_size=5)
                )
                parent[key] = data.draw(Hostile.values(), label="value")
            elif action == "wrap":
                parent[last] = [parent[last]] if data.draw(st.booleans()) else {"k": parent[last]}
            else:
                other = data.draw(st.sampled_from(paths), label="from")
                source = value
                for part in other:
                    source = source[part]
                parent[last] = copy.deepcopy(source) if source is not value else None
        return value

    @staticmethod
    def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[Any, ...]]:
        yield path
        if len(path) > 12:
            return
        items = (
            value.items()
            if isinstance(value, dict)
            else enumerate(value)
            if isinstance(value, list)
            else ()
        )
        for key, item in items:
            yield from Hostile._paths(item, (*path, key))

    @staticmethod
    def damaged(data: Any, raw: bytes) -> bytes:
        """``raw`` with a few bytes flipped, cut, or YAML/JSON tokens spliced in."""
        from hypothesis import strategies as st

        out = bytearray(raw)
        for _ in range(data.draw(st.integers(min_value=1, max_value=4), label="damages")):
            at = data.draw(st.integers(min_value=0, max_value=len(out)), label="offset")
            kind = data.draw(st.sampled_from(["flip", "cut", "token", "truncate"]), label="kind")
            if kind == "flip" and at < len(out):
                out[at] = data.draw(st.integers(min_value=0, max_value=255))
            elif kind == "cut":
                del out[at : at + data.draw(st.integers(min_value=1, max_value=40))]
            elif kind == "token":
                token = data.draw(st.sampled_from(Hostile.TOKENS), label="token")
                out[at:at] = token.encode("utf-8", "surrogatepass")
            else:
                del out[at:]
        return bytes(out)

    @staticmethod
    def yaml_texts() -> Any:
        """Random text made of YAML's tokens and a little noise."""
        from hypothesis import strategies as st

        pieces = st.sampled_from(Hostile.TOKENS) | st.text(max_size=4)
        return st.lists(pieces, max_size=30).map("".join)

    @staticmethod
    def check(
        load: Callable[[], Any], documented: tuple[type[BaseException], ...]
    ) -> BaseException | None:
        """Run ``load()`` within the hang bound; a documented error is returned, any other
        exception fails the test."""
        from hypothesis import event

        started = time.perf_counter()
        try:
            within_bound(load)
        except documented as error:
            event(f"refused: {type(error).__name__}")
            Hostile._log(started, "documented")
            return error
        except Exception as error:
            Hostile._log(started, "other")
            pytest.fail(
                f"undocumented {type(error).__name__} escaped: {error!r}"[:2000], pytrace=True
            )
        event("accepted")
        Hostile._log(started, "accepted")
        return None

    @staticmethod
    def _log(started: float, outcome: str) -> None:
        """With ``AGENTRIG_FUZZ_LOG=FILE``: one line per example (the test, the outcome, the
        seconds the load took), for the per-loader figures of a long fuzz run."""
        log = os.environ.get("AGENTRIG_FUZZ_LOG")
        if log:
            test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{test}\t{outcome}\t{time.perf_counter() - started:.6f}\n")


@pytest.fixture(scope="session")
def hostile() -> type[Hostile]:
    """The :class:`Hostile` strategies (a session fixture, so ``@given`` tests can use it)."""
    return Hostile
