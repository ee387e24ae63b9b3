"""pytest's assertion rewriting done once, not in every process on every run.

pytest rewrites the asserts of each test module, conftest and plugin module (agentrig's whole
package: it is a pytest plugin) when it imports them, and keeps the result in ``__pycache__``
(a ``*-pytest-*.pyc``, checked against the source before use) unless bytecode writing is off.
Where ``PYTHONDONTWRITEBYTECODE`` is set (this machine, many CI images) every process rewrote
all of them on every run: half of collection, in each xdist worker. With this plugin:

- collection writes what it rewrites (the rest of the process keeps its setting: the tests'
  own imports and the processes they start write nothing);
- the modules rewritten before collection (the plugins and the first conftest) are written at
  configuration time, so that the next run reads them too;
- on a fresh checkout, worker ``k`` of ``n`` rewrites the ``k``-th share of the files to
  collect before it collects, then the files before its share backwards until it meets
  those the previous worker wrote, while worker 0 collects (rewriting) from the start: the two
  workers of this machine meet instead of each rewriting everything. pytest's writes are atomic
  (a file of its own renamed into place), so two processes writing one pyc are safe.

Every assert is still rewritten, by pytest's own code; a changed file is rewritten again
(pytest compares the pyc with the source). ``tests/test_rewrite_once.py`` checks all of it.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

WORKER = "PYTEST_XDIST_WORKER"
WORKER_COUNT = "PYTEST_XDIST_WORKER_COUNT"


def _rewrite() -> ModuleType | None:
    """pytest's rewriting module where it has what this plugin calls (private API: where a
    pytest version lacks it, the plugin does nothing and pytest rewrites as it always did)."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:  # pragma: no cover
        return None
    needed = ("_rewrite_test", "_write_pyc", "_read_pyc", "get_cache_dir", "try_makedirs")
    return rewrite if all(hasattr(rewrite, name) for name in needed) else None


def _rewriting(config: pytest.Config) -> bool:
    return config.getoption("assertmode", default="rewrite") == "rewrite" and _rewrite() is not None


def pyc_of(source: Path) -> Path:
    """Where pytest keeps the rewritten code of ``source``."""
    rewrite = _rewrite()
    assert rewrite is not None
    return Path(rewrite.get_cache_dir(source)) / (source.name[:-3] + rewrite.PYC_TAIL)


def is_fresh(source: Path) -> bool:
    """Whether pytest would read ``source``'s rewritten code from its pyc."""
    rewrite = _rewrite()
    assert rewrite is not None
    return rewrite._read_pyc(source, pyc_of(source)) is not None


def write_rewritten(
    sources: Iterable[Path], config: pytest.Config, *, stop_at_fresh: bool = False
) -> int:
    """Rewrite and write each of ``sources`` whose pyc is missing or stale, as pytest's import
    hook does; with ``stop_at_fresh``, stop at the first fresh one (another process got there
    first). Returns how many were written."""
    rewrite = _rewrite()
    if rewrite is None:
        return 0
    from _pytest.assertion.rewrite import assertstate_key

    state = config.stash[assertstate_key]
    written = 0
    for source in sources:
        if is_fresh(source):
            if stop_at_fresh:
                break
            continue
        pyc = pyc_of(source)
        if not rewrite.try_makedirs(pyc.parent):
            continue
        stamp, code = rewrite._rewrite_test(source, config)
        written += bool(rewrite._write_pyc(state, code, stamp, pyc))
    return written


def files_to_collect(config: pytest.Config) -> list[Path]:
    """The conftests and test modules the run's paths hold."""
    base = Path(str(config.invocation_params.dir))
    paths = [base / arg.split("::")[0] for arg in config.args or config.getini("testpaths")]
    patterns = [*config.getini("python_files"), "conftest.py"]
    return files_under(paths, patterns, config.getini("norecursedirs"))


def files_under(paths: Iterable[Path], patterns: list[str], skip: list[str]) -> list[Path]:
    """The files under ``paths`` whose names match ``patterns``, in about the order pytest
    imports them (each directory's conftest first, then its entries by name), leaving out the
    directories ``skip`` matches."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(_walk(path, patterns, skip))
        elif path.suffix == ".py" and path.is_file():
            found.append(path)
    return list(dict.fromkeys(found))


def _walk(directory: Path, patterns: list[str], skip: list[str]) -> Iterator[Path]:
    conftest = directory / "conftest.py"
    if conftest.is_file() and "conftest.py" in patterns:
        yield conftest
    for entry in sorted(directory.iterdir(), key=lambda entry: entry.name):
        if entry.is_dir():
            if entry.name != "__pycache__" and not any(
                fnmatch.fnmatch(entry.name, pattern) for pattern in skip
            ):
                yield from _walk(entry, patterns, skip)
        elif entry.name != "conftest.py" and any(
            fnmatch.fnmatch(entry.name, pattern) for pattern in patterns
        ):
            yield entry


def split(files: list[Path], worker: int, workers: int) -> tuple[list[Path], list[Path]]:
    """Worker ``worker``'s share of ``files`` (consecutive files of about ``1/workers`` of the
    source bytes, each file where its middle byte falls: rewriting takes time in proportion),
    and the files before that share."""
    sizes = [file.stat().st_size for file in files]
    total = sum(sizes) or 1
    owners, done = [], 0
    for size in sizes:
        owners.append(min(workers - 1, (2 * done + size) * workers // (2 * total)))
        done += size
    start = next((index for index, owner in enumerate(owners) if owner >= worker), len(files))
    end = next((index for index, owner in enumerate(owners) if owner > worker), len(files))
    return files[start:end], files[:start]


def _own_packages(hook: object, root: Path) -> Iterator[Path]:
    """The modules of the packages marked for rewriting that live under the rootdir (agentrig,
    a pytest plugin itself): every test imports some, both workers at the start."""
    for name in sorted(getattr(hook, "_must_rewrite", ())):
        module = sys.modules.get(name)
        for directory in getattr(module, "__path__", ()):
            if Path(directory).resolve().is_relative_to(root):
                yield from sorted(Path(directory).rglob("*.py"))


def pytest_configure(config: pytest.Config) -> None:
    """Write what was rewritten before collection (the plugins, the first conftest) and the
    modules of the project's own plugin package, so that this run's workers and the next run
    read them (done by the controller, before it starts the workers, and by the first worker,
    which imports xdist's worker side)."""
    if os.environ.get(WORKER, "gw0") != "gw0" or not _rewriting(config):
        return
    hook = next((finder for finder in sys.meta_path if hasattr(finder, "_rewritten_names")), None)
    if hook is not None:
        written = list(hook._rewritten_names.values())
        if WORKER not in os.environ:  # the first worker finds them written
            written.extend(_own_packages(hook, config.rootpath.resolve()))
        write_rewritten(written, config)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collection writes the code it rewrites; a worker other than the first rewrites its share
    first."""
    setting = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        worker = os.environ.get(WORKER, "")
        if worker.startswith("gw") and _rewriting(session.config):
            index, count = int(worker[2:]), int(os.environ.get(WORKER_COUNT, "1"))
            if index:
                own, before = split(files_to_collect(session.config), index, count)
                write_rewritten(own, session.config, stop_at_fresh=True)
                # Then from the end of the previous share backwards, until the files the
                # previous worker has written: rewritten once, whichever is faster.
                write_rewritten(reversed(before), session.config, stop_at_fresh=True)
        return (yield)
    finally:
        sys.dont_write_bytecode = setting
