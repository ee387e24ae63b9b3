"""Mutation testing of the core modules: run mutmut, then score each module.

Usage (from the repository root, with the ``mutation`` extra installed)::

    python tools/mutation.py                 # mutmut run, then the scores
    python tools/mutation.py --no-run        # the scores of the last run
    python tools/mutation.py --survivors     # ... and the diff of every surviving mutant
    python tools/mutation.py --sample 40     # 40 mutants of each module, drawn with a seed

The modules and the tests are configured in ``[tool.mutmut]`` of ``pyproject.toml``; mutmut
works in ``mutants/`` (a copy of the sources, reused by the next run). A run takes minutes to
half an hour: it is run on demand, never by the test suite or CI. See docs/mutation-testing.md.

Each module gets two scores: killed mutants over all mutants that ran, and the same ignoring
mutants that only change message text (see ``is_message_text``), which the tests pin only where
users rely on the text.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

KILLED = {1, 3, 24, -24, 36, 37, 152, 255, -9, -11}  # a failing test, a timeout, a crash
SURVIVED = {0}
NO_TESTS = {5, 33}
TEXT_FUNCTIONS = {"__repr__", "__str__", "explain"}  # whose strings are only read by people


@dataclass
class ModuleScore:
    """The outcome of every mutant of one module."""

    path: str
    killed: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)
    untested: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # skipped, suspicious
    text_only: set[str] = field(default_factory=set)

    def score(self, *, ignore_text: bool = False) -> float | None:
        """Killed over killed, survived and untested mutants; None when none ran."""
        counted = [self.killed, self.survived, self.untested]
        if ignore_text:
            counted = [[name for name in names if name not in self.text_only] for names in counted]
        total = sum(len(names) for names in counted)
        return None if total == 0 else len(counted[0]) / total


def is_message_text(original: str, mutant: str) -> bool:
    """Whether ``mutant`` differs from ``original`` (two versions of one function's source) only
    in message text: string constants that are prose (not an identifier such as a section name,
    a key or an enum value), or any string of ``__repr__``, ``__str__`` or ``explain``."""
    before, after = _parse(original), _parse(mutant)
    if before is None or after is None or _without_strings(before) != _without_strings(after):
        return False
    name = before.name if isinstance(before, ast.FunctionDef | ast.AsyncFunctionDef) else ""
    changed = [
        old.value
        for old, new in zip(_strings(before), _strings(after), strict=True)
        if old.value != new.value
    ]
    return bool(changed) and (name in TEXT_FUNCTIONS or all(_prose(text) for text in changed))


def _parse(source: str) -> ast.stmt | None:
    try:
        body = ast.parse(textwrap.dedent(source)).body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 else None


def _strings(node: ast.AST) -> Iterator[ast.Constant]:
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            yield child


def _without_strings(node: ast.AST) -> str:
    copy = ast.parse(ast.unparse(node))
    for constant in _strings(copy):
        constant.value = ""
    return ast.dump(copy)


def _prose(text: str) -> bool:
    return not text.isidentifier()


SourceReader = Callable[[Path, str, str], tuple[str, str]]


def scores(root: Path, read_sources: SourceReader | None = None) -> list[ModuleScore]:
    """The score of every mutated module under ``root/mutants`` (mutmut's last run);
    ``read_sources(root, path, name)`` gives a mutant's original and mutated function (by
    default read with mutmut)."""
    read = read_sources or _sources
    results = []
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        path = str(meta.relative_to(root / "mutants"))[: -len(".meta")]
        outcome = ModuleScore(path)
        every: dict[str, int | None] = json.loads(meta.read_text("utf-8"))["exit_code_by_key"]
        exit_codes = {name: code for name, code in every.items() if code is not None}  # not run
        for name, code in exit_codes.items():
            if code in KILLED:
                outcome.killed.append(name)
            elif code in SURVIVED:
                outcome.survived.append(name)
            elif code in NO_TESTS:
                outcome.untested.append(name)
            else:
                outcome.other.append(name)
        outcome.text_only = {
            name for name in exit_codes if is_message_text(*read(root, path, name))
        }
        results.append(outcome)
    return results


def _sources(root: Path, path: str, name: str) -> tuple[str, str]:
    """The original and the mutated source of mutant ``name``'s function, read with mutmut."""
    import libcst
    from mutmut.mutation import diff_apply

    previous = Path.cwd()
    os.chdir(root)  # mutmut reads relative to the project root
    try:
        functions = diff_apply.read_functions_from_index(name, path)
        if functions is None:
            module = diff_apply.read_mutants_module(path)
            functions = (
                diff_apply.read_original_function(module, name),
                diff_apply.read_mutant_function(module, name),
            )
    finally:
        os.chdir(previous)
    original, mutant = (libcst.Module([function]).code for function in functions)
    return original, mutant


def diff(root: Path, name: str) -> str:
    """mutmut's diff of mutant ``name``."""
    from mutmut.mutation import diff_apply

    previous = Path.cwd()
    os.chdir(root)
    try:
        return diff_apply.get_diff_for_mutant(name)
    finally:
        os.chdir(previous)


def table(results: Sequence[ModuleScore]) -> str:
    """The scores as a Markdown table."""

    def percent(value: float | None) -> str:
        return "-" if value is None else f"{value:.1%}"

    lines = [
        "| module | mutants | killed | survived | no tests | score | score, message text aside |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        total = sum(map(len, (result.killed, result.survived, result.untested, result.other)))
        lines.append(
            f"| {result.path} | {total} | {len(result.killed)} | {len(result.survived)} | "
            f"{len(result.untested)} | {percent(result.score())} | "
            f"{percent(result.score(ignore_text=True))} |"
        )
    return "\n".join(lines)


def sample(names_by_module: dict[str, Sequence[str]], size: int, seed: int) -> list[str]:
    """``size`` mutant names of each module (all of a module with fewer), drawn with ``seed``:
    mutmut's full names (``pkg.mod.x_f__mutmut_3``) from each module path (``src/pkg/mod.py``)
    and its mutants' names within the module."""
    chosen = []
    for path, names in sorted(names_by_module.items()):
        module = path.removesuffix(".py").removeprefix("src/").replace("/", ".")
        drawn = random.Random(f"{seed}:{path}").sample(sorted(names), min(size, len(names)))
        chosen += [f"{module}.{name}" for name in sorted(drawn)]
    return chosen


def _mutant_names(root: Path) -> dict[str, Sequence[str]]:
    """The names of the mutants mutmut makes of each module in ``only_mutate``."""
    import tomllib

    from mutmut.mutation.file_mutation import mutate_file_contents

    config = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    return {
        path: mutate_file_contents(path, (root / path).read_text("utf-8")).mutant_names
        for path in config["only_mutate"]
    }


def run_mutmut(max_children: int | None, names: Sequence[str] = ()) -> int:
    """``mutmut run`` (of ``names`` only, if any), with Ctrl-C at its default even when started
    from a background job (the suite's Ctrl-C tests need it)."""
    command = [sys.executable, "-m", "mutmut", "run"]
    if max_children is not None:
        command += ["--max-children", str(max_children)]
    command += names

    def default_ctrl_c() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return subprocess.run(command, preexec_fn=default_ctrl_c, check=False).returncode


def main(argv: Sequence[str] | None = None) -> int:
    """Run mutmut (unless ``--no-run``) and print the scores."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-run", action="store_true", help="score the last run only")
    parser.add_argument("--max-children", type=int, help="mutmut's parallel workers")
    parser.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    parser.add_argument("--json", type=Path, help="also write the scores to this file")
    parser.add_argument("--sample", type=int, help="run only this many mutants of each module")
    parser.add_argument("--seed", type=int, default=0, help="which sample (default 0)")
    options = parser.parse_args(argv)
    root = Path.cwd()
    if not (root / "pyproject.toml").is_file():
        parser.error("run from the repository root (where pyproject.toml is)")
    if options.sample is not None and options.sample < 1:
        parser.error(f"--sample: must be a whole number >= 1, got {options.sample}")
    if not options.no_run:
        names = (
            []
            if options.sample is None
            else sample(_mutant_names(root), options.sample, options.seed)
        )
        code = run_mutmut(options.max_children, names)
        if code != 0:
            print(f"mutmut run exited with {code}", file=sys.stderr)
            return code
    results = scores(root)
    if not results:
        print("no mutation results in mutants/: run without --no-run first", file=sys.stderr)
        return 1
    print(table(results))
    if options.survivors:
        for result in results:
            for name in result.survived + result.untested:
                kind = "message text" if name in result.text_only else "behaviour"
                print(f"\n## {name} ({kind})\n{diff(root, name)}")
    if options.json is not None:
        data = {
            result.path: {
                "killed": len(result.killed),
                "survived": sorted(result.survived),
                "no_tests": sorted(result.untested),
                "other": sorted(result.other),
                "message_text_only": sorted(result.text_only),
                "score": result.score(),
                "score_without_message_text": result.score(ignore_text=True),
            }
            for result in results
        }
        options.json.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
