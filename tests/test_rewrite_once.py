"""The suite's assertion-rewriting cache (``tests/rewrite_once.py``): pytest's rewritten code is
written once where ``PYTHONDONTWRITEBYTECODE`` is set, read by later runs, rewritten again when
a file changes, and shared by the workers of a fresh checkout; asserts keep their
introspection."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

rewrite_once = sys.modules["rewrite_once"]  # loaded by tests/conftest.py

FAILING = "def test_sum():\n    total = 3\n    assert total == 4\n"


def _files(folder: Path, sizes: list[int]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for index, size in enumerate(sizes):
        file = folder / f"test_{index}.py"
        file.write_text(f"X = {'1' * max(size - 5, 1)}\n")
        files.append(file)
    return files


def test_the_shares_split_the_files_by_bytes_in_order(tmp_path: Path) -> None:
    files = _files(tmp_path, [100, 100, 100, 700])
    assert rewrite_once.split(files, 0, 2) == (files[:3], [])
    assert rewrite_once.split(files, 1, 2) == (files[3:], files[:3])
    thirds = [rewrite_once.split(files, worker, 3) for worker in range(3)]
    assert [file for share, _ in thirds for file in share] == files
    for share, before in thirds:
        assert before == files[: files.index(share[0])] if share else before == files


def test_the_files_to_collect_come_in_pytests_order(tmp_path: Path) -> None:
    for name in ("b/test_z.py", "b/conftest.py", "a/test_y.py", "test_x.py", "helper.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("")
    for skipped in ("__pycache__/test_old.py", "build/test_built.py"):
        (tmp_path / skipped).parent.mkdir(exist_ok=True)
        (tmp_path / skipped).write_text("")
    (tmp_path / "conftest.py").write_text("")
    found = rewrite_once.files_under([tmp_path], ["test_*.py", "conftest.py"], ["build"])
    assert [str(file.relative_to(tmp_path)) for file in found] == [
        "conftest.py",
        "a/test_y.py",
        "b/conftest.py",
        "b/test_z.py",
        "test_x.py",
    ]


def test_the_written_code_is_pytests_rewritten_code(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = tmp_path / "test_sum.py"
    source.write_text(FAILING)
    assert not rewrite_once.is_fresh(source)
    assert rewrite_once.write_rewritten([source], request.config) == 1
    assert rewrite_once.is_fresh(source)
    from _pytest.assertion.rewrite import _read_pyc

    code = _read_pyc(source, rewrite_once.pyc_of(source))
    namespace: dict[str, object] = {}
    exec(code, namespace)
    with pytest.raises(AssertionError, match=r"assert 3 == 4"):
        namespace["test_sum"]()  # type: ignore[operator]
    assert rewrite_once.write_rewritten([source], request.config) == 0  # fresh: left alone
    source.write_text(FAILING.replace("4", "5"))
    assert not rewrite_once.is_fresh(source)  # changed: rewritten again
    assert rewrite_once.write_rewritten([source], request.config) == 1


def test_a_worker_stops_where_another_has_written(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    files = _files(tmp_path, [50, 50, 50])
    rewrite_once.write_rewritten([files[1]], request.config)
    assert rewrite_once.write_rewritten(files, request.config, stop_at_fresh=True) == 1
    assert [rewrite_once.is_fresh(file) for file in files] == [True, True, False]


def _pytest_run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_ADDOPTS": "",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_WORKER_COUNT", None)
    command = [sys.executable, "-m", "pytest", "-p", "rewrite_once", "-p", "xdist", *args]
    return subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_two_workers_write_once_and_later_runs_read(tmp_path: Path) -> None:
    """A fresh project, two workers, bytecode writing off: every test module's rewritten code
    is written; the next run reads it (no pyc replaced), the introspection of a failing assert
    is the same, the tests run with bytecode writing still off; an edited module alone is
    rewritten."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (tmp_path / "conftest.py").write_text("")
    for index in range(6):
        (tmp_path / f"test_m{index}.py").write_text(
            "import sys\n\n\ndef test_flag():\n    assert sys.dont_write_bytecode is True\n"
        )
    (tmp_path / "test_sum.py").write_text(FAILING)
    modules = sorted(tmp_path.glob("*.py"))

    first = _pytest_run(tmp_path, "-n", "2")
    assert "1 failed, 6 passed" in first.stdout, first.stdout + first.stderr
    assert "assert 3 == 4" in first.stdout
    assert all(rewrite_once.is_fresh(module) for module in modules)
    inodes = {module: rewrite_once.pyc_of(module).stat().st_ino for module in modules}

    second = _pytest_run(tmp_path, "-n", "2")
    assert "1 failed, 6 passed" in second.stdout, second.stdout + second.stderr
    assert "assert 3 == 4" in second.stdout
    assert {module: rewrite_once.pyc_of(module).stat().st_ino for module in modules} == inodes

    (tmp_path / "test_m3.py").write_text("def test_changed():\n    assert 2 + 2 == 4\n")
    third = _pytest_run(tmp_path, "-n", "2")
    assert "1 failed, 6 passed" in third.stdout, third.stdout + third.stderr
    replaced = [m for m in modules if rewrite_once.pyc_of(m).stat().st_ino != inodes[m]]
    assert replaced == [tmp_path / "test_m3.py"]
    assert rewrite_once.is_fresh(tmp_path / "test_m3.py")
