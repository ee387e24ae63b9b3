"""``tools/mutation.py``: the scores of a mutation run, and which mutants only change message
text. mutmut itself is not needed: a run's results are written out by hand."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "mutation.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_tool", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


mutation = load_script()


@pytest.mark.parametrize(
    ("original", "mutant"),
    [
        ('raise E(f"bad {x}: y")', 'raise E(f"XXbad XX{x}: y")'),
        ('raise E("no such section")', 'raise E("NO SUCH SECTION")'),
        ('return ", ".join(names)', 'return "XX, XX".join(names)'),
    ],
)
def test_prose_changes_are_message_text(original: str, mutant: str) -> None:
    assert mutation.is_message_text(f"def f(x):\n    {original}", f"def f(x):\n    {mutant}")


@pytest.mark.parametrize(
    ("original", "mutant"),
    [
        ('return d["messages"]', 'return d["XXmessagesXX"]'),  # a name the code looks up
        ('return E(field="at")', 'return E(field="XXatXX")'),
        ("return x + 1", "return x + 2"),
        ('return "a b" if x else 1', 'return "a b" if not x else 1'),
        ('raise E(f"bad {x}")', 'raise E(f"bad {None}")'),
        ('return "a b"', 'return "a b"'),  # no change at all
    ],
)
def test_other_changes_are_behaviour(original: str, mutant: str) -> None:
    assert not mutation.is_message_text(f"def f(x):\n    {original}", f"def f(x):\n    {mutant}")


def test_any_string_of_a_repr_is_message_text() -> None:
    original = 'def __repr__(self):\n    return "Yes"'
    assert mutation.is_message_text(original, original.replace('"Yes"', '"XXYesXX"'))
    explain = '    def explain(self):\n        return "No"'  # indented, as a method
    assert mutation.is_message_text(explain, explain.replace('"No"', '"no"'))


def write_run(root: Path) -> None:
    """A run of four mutants of one module: killed, survived (text only), survived, no tests."""
    meta = root / "mutants" / "src" / "pkg" / "mod.py.meta"
    meta.parent.mkdir(parents=True)
    codes = {"pkg.mod.x_f__mutmut_1": 1, "pkg.mod.x_f__mutmut_2": 0}
    codes |= {"pkg.mod.x_f__mutmut_3": 0, "pkg.mod.x_f__mutmut_4": 33, "pkg.mod.x_f__mutmut_5": 34}
    codes |= {"pkg.mod.x_f__mutmut_6": None}  # left out of a sample: not run
    meta.write_text(json.dumps({"exit_code_by_key": codes}), "utf-8")


def sources(root: Path, path: str, name: str) -> tuple[str, str]:
    assert path == "src/pkg/mod.py"
    if name.endswith("_2"):
        return 'def f():\n    raise E("bad input")', 'def f():\n    raise E("XXbad inputXX")'
    return "def f():\n    return 1", "def f():\n    return 2"


def test_scores_per_module(tmp_path: Path) -> None:
    write_run(tmp_path)
    [result] = mutation.scores(tmp_path, sources)
    assert result.path == "src/pkg/mod.py"
    assert (len(result.killed), len(result.survived), len(result.untested)) == (1, 2, 1)
    assert result.other == ["pkg.mod.x_f__mutmut_5"]  # skipped: not counted
    assert result.text_only == {"pkg.mod.x_f__mutmut_2"}
    assert result.score() == pytest.approx(1 / 4)
    assert result.score(ignore_text=True) == pytest.approx(1 / 3)
    assert "| src/pkg/mod.py | 5 | 1 | 2 | 1 | 25.0% | 33.3% |" in mutation.table([result])


def test_a_module_without_results_has_no_score() -> None:
    assert mutation.ModuleScore("m.py").score() is None
    assert "| m.py | 0 | 0 | 0 | 0 | - | - |" in mutation.table([mutation.ModuleScore("m.py")])


def test_no_run_yet_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    (tmp_path / "pyproject.toml").write_text("", "utf-8")
    monkeypatch.chdir(tmp_path)
    assert mutation.main(["--no-run"]) == 1
    assert "no mutation results in mutants/" in capsys.readouterr().err


def test_the_json_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_run(tmp_path)
    (tmp_path / "pyproject.toml").write_text("", "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(mutation, "_sources", sources)
    assert mutation.main(["--no-run", "--json", str(tmp_path / "scores.json")]) == 0
    data = json.loads((tmp_path / "scores.json").read_text("utf-8"))
    assert data["src/pkg/mod.py"]["survived"] == ["pkg.mod.x_f__mutmut_2", "pkg.mod.x_f__mutmut_3"]
    assert data["src/pkg/mod.py"]["message_text_only"] == ["pkg.mod.x_f__mutmut_2"]
    assert data["src/pkg/mod.py"]["score_without_message_text"] == pytest.approx(1 / 3)


def test_a_sample_is_drawn_per_module_and_repeatable() -> None:
    names = {
        "src/pkg/a.py": [f"x_f__mutmut_{i}" for i in range(1, 51)],
        "src/pkg/b.py": ["x_g__mutmut_1"],
    }
    drawn = mutation.sample(names, 5, seed=1)
    assert len(drawn) == 6  # five of a, the only one of b
    assert drawn[-1] == "pkg.b.x_g__mutmut_1"
    assert all(name.startswith("pkg.a.x_f__mutmut_") for name in drawn[:5])
    assert mutation.sample(names, 5, seed=1) == drawn
    assert mutation.sample(names, 5, seed=2) != drawn


def test_a_sample_of_none_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    (tmp_path / "pyproject.toml").write_text("", "utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        mutation.main(["--sample", "0"])
    assert "--sample: must be a whole number >= 1, got 0" in capsys.readouterr().err
