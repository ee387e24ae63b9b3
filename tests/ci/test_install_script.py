"""``.ci/install``, the README's first command: a warm run is near-instant (it installs nothing
when the venv came from the same ``pyproject.toml``), and a fresh clone or a changed
``pyproject.toml`` installs everything. Fake interpreters log what the script asks of them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

FAKE_PYTHON3 = """\
#!/bin/sh
echo "python3 $1 $(printf '%s' "$2" | head -n 1)" >> "$LOG"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p .venv/bin
    cp "$FAKE_VENV_PYTHON" .venv/bin/python
    exit 0
fi
exec "$REAL_PYTHON" "$@"
"""

FAKE_VENV_PYTHON = """\
#!/bin/sh
echo "venv-python $1 $(printf '%s' "$2" | head -n 1) $5 $6" >> "$LOG"
case "$*" in
    *"pip install --quiet -e"*) printf '#!/bin/sh\\n' > .venv/bin/agentrig; chmod +x .venv/bin/agentrig ;;
    "-c"*) PYTHONPATH="$PWD/src" exec "$REAL_PYTHON" "$@" ;;
esac
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout holding the install script, pyproject.toml and an importable agentrig."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "install", tmp_path / ".ci" / "install")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "src" / "agentrig").mkdir(parents=True)
    (tmp_path / "src" / "agentrig" / "__init__.py").write_text("", encoding="utf-8")
    for name, text in (("python3", FAKE_PYTHON3), ("venv-python", FAKE_VENV_PYTHON)):
        (tmp_path / "fakes").mkdir(exist_ok=True)
        fake = tmp_path / "fakes" / name
        fake.write_text(text, encoding="utf-8")
        fake.chmod(0o755)
    return tmp_path


def install(checkout: Path) -> list[str]:
    """Run ``bash .ci/install``; what it asked of the interpreters, one line a call."""
    log = checkout / "log.txt"
    log.write_text("", encoding="utf-8")
    env = {
        **os.environ,
        "PYTHON": str(checkout / "fakes" / "python3"),
        "FAKE_VENV_PYTHON": str(checkout / "fakes" / "venv-python"),
        "REAL_PYTHON": sys.executable,
        "LOG": str(log),
    }
    subprocess.run(["bash", ".ci/install"], cwd=checkout, env=env, check=True)
    # (the hash of pyproject.toml and the script, which every run computes, is left out)
    return [line for line in log.read_text(encoding="utf-8").splitlines() if "hashlib" not in line]


def installs(calls: list[str]) -> bool:
    return any("-m venv" in call for call in calls) and any("-e .[dev]" in call for call in calls)


def test_a_warm_install_installs_nothing_and_a_changed_pyproject_installs_again(
    checkout: Path,
) -> None:
    assert installs(install(checkout))  # a fresh clone: everything
    warm = install(checkout)
    assert not installs(warm)
    assert [call.split()[0] for call in warm] == ["venv-python"]  # the one import check
    with (checkout / "pyproject.toml").open("a", encoding="utf-8") as pyproject:
        pyproject.write("\n# a new dependency\n")
    assert installs(install(checkout))
    assert not installs(install(checkout))


def test_a_broken_venv_is_installed_again(checkout: Path) -> None:
    install(checkout)
    (checkout / ".venv" / "bin" / "agentrig").unlink()  # the script is gone
    assert installs(install(checkout))
    (checkout / "src" / "agentrig" / "__init__.py").unlink()  # agentrig no longer imports
    assert installs(install(checkout))


def test_a_test_parametrized_over_nothing_fails_collection_rather_than_skipping(
    pytester: pytest.Pytester,
) -> None:
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    ini = options["tool"]["pytest"]["ini_options"]
    pytester.makeini(f"[pytest]\nempty_parameter_set_mark = {ini['empty_parameter_set_mark']}\n")
    pytester.makepyfile(
        """
        import pytest

        CASES = []  # e.g. files a glob did not find

        @pytest.mark.parametrize("case", CASES)
        def test_each(case):
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*Empty parameter set*test_each*"])
