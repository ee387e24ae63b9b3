"""Every code example in README.md and docs/*.md runs, and shows what really happens.

The rules a doc writer follows (one test item per block, named ``docs/x.md:LINE``):

- **One working directory and one namespace per doc.** The blocks of a doc run in order, in a
  fresh temporary directory holding a copy of the bundled ``scenarios/`` (empty for the docs of
  ``SELF_CONTAINED``, which a user follows in their own project). Its ``python`` blocks
  share one namespace, as if they were one module: a block may use what an earlier one defined.
  The environment holds dummy ``OPENAI_API_KEY``/``ANTHROPIC_API_KEY`` values, so providers can
  be built, and agentrig's real-call block is on, so no block reaches an API.
- **python** blocks are executed. A line ``EXPR  # -> RESULT`` asserts ``EXPR == RESULT``, where
  ``RESULT`` is a Python expression evaluated in the block's namespace plus agentrig's public
  names (put an explanation on a comment line of its own). A block that defines pytest tests
  (``def test_*``, ``Test*``) is also written out as a test module (the doc's python blocks so far,
  at their doc line numbers; ``test_example.py`` unless marked ``<!-- file: NAME -->``, in which
  case the block goes to that file, e.g. a ``conftest.py``; a block so marked is written out at
  once, tests or not, and the doc's directory is on ``sys.path`` while its blocks run, as the
  current folder is for ``python -m``) and its tests run under pytest with
  agentrig's plugin: first with ``--agentrig-record-mode=once --snapshot-update``, then, when
  that wrote files (cassettes, snapshots), again as a plain ``pytest`` run that replays them.
- **yaml** blocks with ``name:`` and ``turns:`` are scenarios: loaded and run; they must pass
  (a live scenario, with ``user:``/``judge:``/``trials:``, and those only the endpoint plays,
  with ``model: auto`` or an ``agent.adapter``, are only loaded).
  A block marked ``<!-- fragment -->`` is loaded inside a minimal scenario; one marked
  ``<!-- file: PATH -->`` is saved as ``PATH`` (in the doc's directory), for later blocks to use.
- **bash**/**console** lines that start with ``agentrig`` run through typer's ``CliRunner``, lines
  that start with ``pytest`` through pytest in process; a trailing ``# ... exits N`` sets the
  expected exit code (default 0). Other lines (installing, benchmarks) are not run.
- **text**/**yaml** blocks marked ``<!-- output -->`` must equal the one file the previous
  python block's tests wrote (a cassette, a snapshot).
- ``<!-- not run: REASON -->`` right before a fence skips the block (a real API key or a
  recording of the real API is needed); keep those rare. Other unmarked ``text`` blocks and
  blocks without a language are not checked.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agentrig
from agentrig.harness.cassettes.network_block import block_real_llm_calls
from agentrig.harness.cli import app
from agentrig.harness.runner import run_scenario
from agentrig.harness.scenarios.loader import load_scenario

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\S*)\s*$")
MARK = re.compile(r"^<!--\s*(.*?)\s*-->$")
RUNNABLE = {"python", "yaml", "bash", "console", "shell", "sh"}
DEFAULT_MODULE = "test_example.py"
DUMMY_ENV = {"OPENAI_API_KEY": "sk-docs-dummy", "ANTHROPIC_API_KEY": "sk-ant-docs-dummy"}
SELF_CONTAINED = {
    "tutorial.md",
    "endpoint.md",
    "endpoint-frameworks.md",
    "fuzz-any-agent.md",
    "record-replay.md",
    "scenario-format.md",
    "async.md",
    "snapshots.md",
    "property-testing.md",
    "sessions.md",
    "providers.md",
}
"""Docs a new user follows in a project of their own: they run in an empty folder, so every file
their blocks use must be one they write (a ``<!-- file: PATH -->`` block), not a bundled one."""
MINIMAL_SCENARIO = "name: fragment\nturns:\n  - user: Hi\n    model: [{say: Hello}]\n"


@dataclass(frozen=True)
class Block:
    """One fenced code block of a doc."""

    doc: Path
    line: int  # the line of the opening fence, from 1
    lang: str
    text: str
    marks: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    def mark(self, name: str) -> str | None:
        """The value of mark ``name`` (``""`` for a bare mark), or None."""
        for mark in self.marks:
            key, _, value = mark.partition(":")
            if key.strip() == name:
                return value.strip()
        return None

    @property
    def checked(self) -> bool:
        return self.lang in RUNNABLE or self.mark("output") is not None


def blocks_of(doc: Path) -> list[Block]:
    """The fenced blocks of ``doc`` with the HTML comment marks right above each fence."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while not lines[end].startswith("```"):
            end += 1
        marks: list[str] = []
        above = index - 1
        while above >= 0 and (found := MARK.match(lines[above].strip())):
            marks.insert(0, found.group(1))
            above -= 1
        text = "\n".join(lines[index + 1 : end]) + "\n"
        blocks.append(Block(doc, index + 1, opening.group(1), text, tuple(marks)))
        index = end + 1
    return blocks


ALL_BLOCKS = [block for doc in DOCS for block in blocks_of(doc) if block.checked]


# --- python ------------------------------------------------------------------------------------


class OutputMismatch(AssertionError):
    """A ``# -> RESULT`` comment that does not say what the code gives."""


def check_output(value: object, expected: str, line: int, namespace: dict[str, Any]) -> None:
    scope = {**vars(agentrig), **namespace}
    wanted = eval(expected, scope)
    if value != wanted:
        raise OutputMismatch(f"line {line}: the doc says {expected}, the code gives {value!r}")


def compile_block(block: Block) -> Any:
    """The block as code whose line numbers are the doc's, with its ``# ->`` lines checked."""
    source = "\n" * block.line + block.text
    tree = ast.parse(source, filename=str(block.doc))
    lines = source.splitlines()
    for index, statement in enumerate(tree.body):
        if not isinstance(statement, ast.Expr) or statement.end_lineno is None:
            continue
        _, arrow, expected = lines[statement.end_lineno - 1].partition("# -> ")
        if not arrow:
            continue
        call = ast.Call(
            func=ast.Name("__doc_check__", ast.Load()),
            args=[
                statement.value,
                ast.Constant(expected.strip()),
                ast.Constant(statement.end_lineno),
                ast.Call(ast.Name("globals", ast.Load()), [], []),
            ],
            keywords=[],
        )
        tree.body[index] = ast.copy_location(ast.Expr(call), statement)
    return compile(ast.fix_missing_locations(tree), str(block.doc), "exec")


def defined_tests(block: Block) -> list[str]:
    """The pytest tests a python block defines, top level."""
    names: list[str] = []
    for statement in ast.parse(block.text).body:
        if isinstance(statement, ast.FunctionDef | ast.ClassDef) and statement.name.startswith(
            "test" if isinstance(statement, ast.FunctionDef) else "Test"
        ):
            names.append(statement.name)
        elif isinstance(statement, ast.Assign):
            names += [
                target.id
                for target in statement.targets
                if isinstance(target, ast.Name) and target.id.startswith("Test")
            ]
    return names


@dataclass
class PytestRun:
    """What a nested pytest run reported."""

    exit_code: int
    failures: list[str] = field(default_factory=list)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failures.append(f"{report.nodeid} ({report.when}):\n{report.longreprtext}")


def run_pytest(args: list[str]) -> PytestRun:
    """pytest in this process (with agentrig's plugin, as a user runs it), modules restored."""
    modules, path = dict(sys.modules), list(sys.path)
    run = PytestRun(0)
    # pytest ends a session with full collections (to report unraisable exceptions); frozen,
    # what this process holds is not walked in each (0.5 s a collection, two a run)
    gc.freeze()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            run.exit_code = int(
                pytest.main(
                    ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args], plugins=[run]
                )
            )
    finally:
        for name in set(sys.modules) - set(modules):
            del sys.modules[name]
        sys.path[:] = path
    return run


# --- the runner of one doc ---------------------------------------------------------------------


class DocRun:
    """Runs the checked blocks of one doc in order, in one directory, keeping each outcome."""

    def __init__(self, doc: Path, workdir: Path) -> None:
        self.workdir = workdir
        self.namespace: dict[str, Any] = {"__name__": "docs_example", "__doc_check__": check_output}
        self.files: dict[str, list[Block]] = {}
        self.written: list[Path] = []
        if doc.name not in SELF_CONTAINED:
            shutil.copytree(ROOT / "scenarios", workdir / "scenarios")
        (workdir / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n", encoding="utf-8")
        self.outcomes: dict[int, BaseException | None] = {}
        for block in blocks_of(doc):
            if block.checked:
                self.outcomes[block.line] = self.attempt(block)

    def attempt(self, block: Block) -> BaseException | None:
        if block.mark("not run") is not None:
            return None
        with self.inside():
            try:
                self.run(block)
            except Exception as error:
                return error
        return None

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        before, saved = Path.cwd(), {key: os.environ.get(key) for key in DUMMY_ENV}
        os.chdir(self.workdir)
        os.environ.update(DUMMY_ENV)
        sys.path.insert(0, str(self.workdir))
        try:
            with block_real_llm_calls():
                yield
        finally:
            sys.path.remove(str(self.workdir))
            os.chdir(before)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def run(self, block: Block) -> None:
        if block.mark("output") is not None:
            self.compare_output(block)
        elif block.lang == "python":
            self.run_python(block)
        elif block.lang == "yaml":
            self.run_yaml(block)
        else:
            self.run_shell(block)

    def run_python(self, block: Block) -> None:
        exec(compile_block(block), self.namespace)
        name = block.mark("file") or DEFAULT_MODULE
        self.files.setdefault(name, []).append(block)
        tests = defined_tests(block)
        if tests or block.mark("file") is not None:
            module = self.write_module(name)
        if tests:
            self.written = self.run_tests([f"{module.name}::{test}" for test in tests])

    def write_module(self, name: str) -> Path:
        text = ""
        for block in self.files[name]:
            text += "\n" * (block.line - text.count("\n")) + block.text
        path = self.workdir / name
        path.write_text(text, encoding="utf-8")
        return path

    def run_tests(self, node_ids: list[str]) -> list[Path]:
        before = self.snapshot_files()
        first = run_pytest(["--agentrig-record-mode=once", "--snapshot-update", *node_ids])
        assert first.exit_code == 0, "\n".join(first.failures) or f"pytest exit {first.exit_code}"
        written = sorted(
            path for path, stamp in self.snapshot_files().items() if before.get(path) != stamp
        )
        if written:
            replay = run_pytest(node_ids)
            assert replay.exit_code == 0, "\n".join(replay.failures) or "replay failed"
        return written

    def snapshot_files(self) -> dict[Path, int]:
        return {
            path: path.stat().st_mtime_ns
            for path in self.workdir.rglob("*")
            if path.is_file()
            and path.suffix != ".py"
            and not any(
                part.startswith(".") or part == "__pycache__"
                for part in path.relative_to(self.workdir).parts
            )
        }

    def compare_output(self, block: Block) -> None:
        assert len(self.written) == 1, f"the tests above wrote {self.written}, not one file"
        actual = self.written[0].read_text(encoding="utf-8")
        assert actual == block.text, f"{self.written[0].name} holds:\n{actual}"

    def run_yaml(self, block: Block) -> None:
        text = block.text
        if block.mark("fragment") is not None:
            text += MINIMAL_SCENARIO
        path = self.workdir / (block.mark("file") or f"doc-{block.line}.scenario.yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        scenario = load_scenario(path)
        if scenario.is_live:  # its trials need models: the doc's shell blocks run those
            return
        if scenario.agent.adapter is not None or any(turn.is_auto for turn in scenario.turns):
            return  # only the endpoint plays it (to the adapter, to the doc's code)
        result = run_scenario(scenario)
        assert result.passed, result

    def run_shell(self, block: Block) -> None:
        for line in block.text.splitlines():
            command, _, comment = line.partition(" #")
            words = shlex.split(command)
            if not words or words[0] not in ("agentrig", "pytest"):
                continue
            exits = re.search(r"exits (\d+)", comment)
            expected = int(exits.group(1)) if exits else 0
            if words[0] == "agentrig":
                result = CliRunner().invoke(app, words[1:])
                code, output = result.exit_code, result.output
            else:
                run = run_pytest(words[1:])
                code, output = run.exit_code, "\n".join(run.failures)
            assert code == expected, f"{line.strip()!r} exited {code}, not {expected}:\n{output}"


# --- the tests ---------------------------------------------------------------------------------

_RUNS: dict[Path, DocRun] = {}


@pytest.fixture
def doc_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    def get(doc: Path) -> DocRun:
        if doc not in _RUNS:
            _RUNS[doc] = DocRun(doc, tmp_path_factory.mktemp(doc.stem))
        return _RUNS[doc]

    return get


@pytest.mark.parametrize(
    "block",
    [
        # A doc's blocks run all at once, on the worker of its first block (--dist loadgroup).
        pytest.param(block, marks=pytest.mark.xdist_group(block.doc.name), id=block.where)
        for block in ALL_BLOCKS
    ],
)
def test_doc_block(block: Block, doc_run: Any) -> None:
    reason = block.mark("not run")
    if reason is not None:
        pytest.skip(f"not run: {reason}")
    outcome = doc_run(block.doc).outcomes[block.line]
    if outcome is not None:
        raise outcome


def test_every_doc_has_its_blocks_checked() -> None:
    with_code = {block.doc.name for block in ALL_BLOCKS}
    run = {block.doc.name for block in ALL_BLOCKS if block.mark("not run") is None}
    assert run == with_code == {doc.name for doc in DOCS} - {"architecture.md"}
    assert len(ALL_BLOCKS) >= 30
