"""``agentrig run --shard i/n`` then ``agentrig merge``: the shards' reports joined into the
reports of a one-machine run, and every way a set of folders is not one run's shards refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from textwrap import dedent

import pytest
from typer.testing import CliRunner

from agentrig.harness import ShardMergeError, SuiteResult, merge_shards, normalized
from agentrig.harness.cli import app
from agentrig.harness.reporting import get_writer, writer_names

PASSING = """\
name: {name}
tags: [{tag}]
agent:
  tools:
    echo:
      params: {{text: string}}
      replies:
        - return: pong
turns:
  - user: ping {name}
    model:
      - call: echo(text=ping)
      - say: pong
    expect:
      status: completed
      final_response: {expected}
"""

runner = CliRunner()


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.output


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return write_suite(tmp_path / "scenarios")


@pytest.fixture(scope="module")
def two_shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The report folders of ``suite`` run as 2 shards, once for the module: copy before
    changing them."""
    out = tmp_path_factory.mktemp("two-shards")
    return run_shards(write_suite(out / "scenarios"), out, 2)


@pytest.fixture
def shards(two_shards: list[Path], tmp_path: Path) -> list[Path]:
    """A copy of ``two_shards`` of the test's own."""
    copies = [tmp_path / folder.name for folder in two_shards]
    for folder, copy in zip(two_shards, copies, strict=True):
        shutil.copytree(folder, copy)
    return copies


def write_suite(folder: Path) -> Path:
    """Eleven files: passing and failing scenarios under several tags, in nested folders whose
    order differs from the names' order, and two files that do not load."""
    for index in range(9):
        name = f"{'zyx'[index % 3]}-case-{index}"
        expected = "nope" if index in (2, 7) else "pong"
        text = PASSING.format(name=name, tag="even" if index % 2 == 0 else "odd", expected=expected)
        path = folder / f"group-{index % 2}" / f"{name}.scenario.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text), encoding="utf-8")
    (folder / "broken.scenario.yaml").write_text("name: broken\nturns: 3\n", encoding="utf-8")
    (folder / "group-1" / "also-broken.scenario.yaml").write_text("{", encoding="utf-8")
    return folder


def run_shards(suite: Path, out: Path, total: int, *options: str) -> list[Path]:
    """Run ``suite`` as ``total`` shards; their report folders."""
    folders = []
    for index in range(1, total + 1):
        folder = out / f"shard-{index}"
        code, output = invoke(
            "run", suite, "--shard", f"{index}/{total}", "--report-dir", folder, *options
        )
        assert code in (0, 1, 2), output
        folders.append(folder)
    return folders


def rendered(result: SuiteResult) -> dict[str, str]:
    """Every report of ``result`` with its wall times set to 0."""
    return {name: get_writer(name).render(normalized(result)) for name in writer_names()}


def read(folder: Path) -> SuiteResult:
    return SuiteResult.from_dict(json.loads((folder / "report.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize("options", [(), ("-k", "even or broken")], ids=["all", "keyword"])
def test_four_shards_merge_into_the_reports_of_one_machine(
    suite: Path, tmp_path: Path, options: tuple[str, ...]
) -> None:
    code, output = invoke("run", suite, "--report-dir", tmp_path / "one", *options)
    assert code == 2, output
    shards = run_shards(suite, tmp_path, 4, *options)
    code, output = invoke("merge", *reversed(shards), "--report-dir", tmp_path / "merged")
    assert code == 2, output  # as the one-machine run: files that did not load
    one, merged = read(tmp_path / "one"), read(tmp_path / "merged")
    assert [s.name for s in merged.scenarios] == [s.name for s in one.scenarios]
    assert rendered(merged) == rendered(one)
    # Each file written is the rendering of the merged result (only the wall times differ).
    for name in writer_names():
        writer = get_writer(name)
        text = (tmp_path / "merged" / writer.filename).read_text(encoding="utf-8")
        assert text == writer.render(merged)
    assert merged.wall_time_s == max(read(folder).wall_time_s for folder in shards)
    assert not (tmp_path / "merged" / "shard.json").exists()


def test_a_passing_merge_exits_0_and_a_failing_one_1(suite: Path, tmp_path: Path) -> None:
    for broken in suite.rglob("*broken*"):  # a file that does not load is in every selection
        broken.unlink()
    shards = run_shards(suite, tmp_path / "all", 2)
    assert invoke("merge", *shards, "--report-dir", tmp_path / "m1")[0] == 1
    passing = run_shards(suite, tmp_path / "pass", 3, "-k", "not case-2 and not case-7")
    code, output = invoke("merge", *passing, "--report-dir", tmp_path / "m0", "--report", "junit")
    assert code == 0, output
    assert "7 passed, 0 failed" in output
    assert sorted(p.name for p in (tmp_path / "m0").iterdir()) == ["junit.xml"]


def test_a_missing_shard_is_refused_naming_it(suite: Path, tmp_path: Path) -> None:
    shards = run_shards(suite, tmp_path, 4)
    code, output = invoke("merge", shards[0], shards[2], "--report-dir", tmp_path / "m")
    assert code == 2
    assert "shard(s) 2/4, 4/4 missing" in " ".join(output.split())
    assert not (tmp_path / "m").exists()


def test_a_shard_given_twice_is_refused(shards: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(shards[1], copy)
    with pytest.raises(ShardMergeError, match=r"shard 2/2 given twice: .*shard-2 and .*copy"):
        merge_shards([*shards, copy])


def test_shards_of_different_suites_or_splits_are_refused(suite: Path, tmp_path: Path) -> None:
    halves = run_shards(suite, tmp_path / "halves", 2)
    thirds = run_shards(suite, tmp_path / "thirds", 3)
    with pytest.raises(ShardMergeError, match="shards of different splits"):
        merge_shards([halves[0], thirds[1]])
    selected = run_shards(suite, tmp_path / "k", 2, "-k", "odd")
    with pytest.raises(ShardMergeError, match="ran different suites"):
        merge_shards([halves[0], selected[1]])
    # The same names and paths, but a file's content changed between the shards' runs.
    edited = suite / "group-0" / "z-case-0.scenario.yaml"
    edited.write_text(edited.read_text(encoding="utf-8") + "description: edited\n", "utf-8")
    later = run_shards(suite, tmp_path / "later", 2)
    with pytest.raises(ShardMergeError, match="ran different suites"):
        merge_shards([halves[0], later[1]])
    assert merge_shards([later[1], later[0]])[0].total == 11


def test_folders_that_are_not_shards_are_refused_with_what_is_missing(
    suite: Path, tmp_path: Path
) -> None:
    invoke("run", suite, "--report-dir", tmp_path / "whole")
    with pytest.raises(ShardMergeError, match=r"whole: no shard\.json: not the report folder"):
        merge_shards([tmp_path / "whole"])
    with pytest.raises(ShardMergeError, match="nowhere: no such folder"):
        merge_shards([tmp_path / "nowhere"])
    with pytest.raises(ShardMergeError, match="no shard folders given"):
        merge_shards([])
    shards = run_shards(suite, tmp_path / "junit", 2, "--report", "junit")
    with pytest.raises(ShardMergeError, match=r"no report\.json: run the shard with the json"):
        merge_shards(shards)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda data: data.update(format="other"), "format: expected 'agentrig-shard'"),
        (lambda data: data.update(version=9), "version: expected 1, got 9"),
        (lambda data: data.update(shard=[3, 2]), r"shard: expected \[i, n\]"),
        (lambda data: data.update(shard=[True, 2]), r"shard: expected \[i, n\]"),
        (lambda data: data.update(suite=""), "suite: expected the suite's fingerprint"),
        (lambda data: data.update(size=-1), "size: expected a count"),
        (lambda data: data.update(positions=[99]), "positions: expected places below size"),
        (lambda data: data["positions"].reverse(), "positions: expected increasing places"),
        (lambda data: data.update(unloadable=99), "unloadable: expected a count"),
        (lambda data: data["positions"].pop(), "report.json holds 6 scenario"),
    ],
)
def test_a_damaged_shard_file_is_refused_naming_the_field(
    shards: list[Path], tmp_path: Path, edit: object, message: str
) -> None:
    path = shards[0] / "shard.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)  # type: ignore[operator]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ShardMergeError, match=message):
        merge_shards(shards)
    code, output = invoke("merge", *shards, "--report-dir", tmp_path / "m")
    assert code == 2
    assert "error:" in output


def test_a_damaged_report_is_refused(shards: list[Path]) -> None:
    (shards[1] / "report.json").write_text('{"format": "x"}', encoding="utf-8")
    with pytest.raises(ShardMergeError, match=r"report\.json: not an agentrig JSON report"):
        merge_shards(shards)
    (shards[1] / "shard.json").write_text("{", encoding="utf-8")
    with pytest.raises(ShardMergeError, match=r"shard\.json: not readable JSON"):
        merge_shards(shards)
