"""The docs stand on their own: no link or path leads outside the repository, and no doc sends
the reader to an issue tracker entry or a design seed they cannot see."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *ROOT.glob("CHANGELOG.md")],
)
FENCE = re.compile(r"^```")
LINK = re.compile(r"\]\(([^)\s]+)\)")
RELATIVE_PATH = re.compile(r"(?<![\w.])((?:\.\./)+[\w./-]*)")
OUTSIDE = re.compile(r"(?:^|[\s`(\"'])(/work/|~/|shared/(?:DESIGN|STYLE|reference|cassettes))")
ISSUE = re.compile(r"\bissues?\s*#?\s*\d+|(?<![\w/&=])#\d+\b", re.IGNORECASE)
SHARED_DESIGN = re.compile(r"\bDESIGN(?:\.md|\s+D\d+)")
SEED = re.compile(r"\bseeds?\s+0\d\d\b|\bseed-0\d\d", re.IGNORECASE)


def prose_lines(doc: Path) -> list[tuple[int, str, bool]]:
    """Every line of ``doc`` with its number and whether it sits inside a code fence."""
    lines: list[tuple[int, str, bool]] = []
    in_code = False
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            in_code = not in_code
            lines.append((number, line, True))
            continue
        lines.append((number, line, in_code))
    return lines


def outside(root: Path, doc: Path, target: str) -> bool:
    path = (doc.parent / target.split("#")[0]).resolve()
    return not path.is_relative_to(root.resolve())


def problems_of(doc: Path, root: Path = ROOT) -> list[str]:
    """What in ``doc`` points outside ``root``, or names an issue or a design seed."""
    where = doc.relative_to(root)
    found: list[str] = []
    for number, line, in_code in prose_lines(doc):
        for target in LINK.findall(line):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            if outside(root, doc, target):
                found.append(f"{where}:{number}: link outside the repository: {target}")
            elif not (doc.parent / target.split("#")[0]).exists():
                found.append(f"{where}:{number}: link to a missing file: {target}")
        if not in_code:  # code may show a scenario's own relative paths ($schema=../...)
            for target in RELATIVE_PATH.findall(line):
                if outside(root, doc, target):
                    found.append(f"{where}:{number}: path outside the repository: {target}")
        found += [
            f"{where}:{number}: path outside the repository: {m}" for m in OUTSIDE.findall(line)
        ]
        found += [f"{where}:{number}: names an issue: {m}" for m in ISSUE.findall(line)]
        found += [f"{where}:{number}: names a design seed: {m}" for m in SEED.findall(line)]
        found += [
            f"{where}:{number}: path outside the repository: {m}"
            for m in SHARED_DESIGN.findall(line)
        ]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[str(doc.relative_to(ROOT)) for doc in DOCS])
def test_the_doc_points_only_inside_the_repository(doc: Path) -> None:
    assert problems_of(doc) == []


def test_the_readme_links_the_design_document() -> None:
    assert "](docs/design.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def probe(tmp_path: Path, text: str) -> Path:
    """A doc holding ``text`` in a stand-in repository beside a folder outside it."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "DESIGN.md").write_text("outside\n", encoding="utf-8")
    docs = tmp_path / "repo" / "docs"
    docs.mkdir(parents=True)
    (docs / "scenario-format.md").write_text("# Format\n", encoding="utf-8")
    doc = docs / "probe.md"
    doc.write_text(text, encoding="utf-8")
    return doc


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("See [the design](../../shared/DESIGN.md).", "link outside"),
        ("the map is `../../shared/DESIGN.md`", "path outside"),
        ("as `/work/shared/DESIGN.md` says", "path outside"),
        ("the figures issue #5 quotes", "names an issue"),
        ("(issue 12)", "names an issue"),
        ("fixed in #17", "names an issue"),
        ("as seed 002 says", "names a design seed"),
        ("resumed (DESIGN D3)", "path outside"),
        ("[gone](nowhere.md)", "missing file"),
    ],
)
def test_the_check_catches_each_kind_of_pointer(tmp_path: Path, text: str, kind: str) -> None:
    """Control: each kind of pointer, written into a doc inside the repository, is reported."""
    doc = probe(tmp_path, f"# Probe\n\n{text}\n")
    problems = problems_of(doc, tmp_path / "repo")
    assert problems, text
    assert all(kind in problem for problem in problems[:1]), problems


def test_the_check_leaves_ordinary_text_alone(tmp_path: Path) -> None:
    doc = probe(
        tmp_path,
        "# Probe\n\nSee [the format](scenario-format.md#tools) and `report.html#filter=tools`;\n"
        "commit 08105f3; FakeClock and SeededIds.\n\n```yaml\n"
        "# yaml-language-server: $schema=../scenario.schema.json\n```\n",
    )
    assert problems_of(doc, tmp_path / "repo") == []
