"""The install commands of the docs work for a user who copies them.

agentrig is installed from a checkout or from a wheel built from one (README, "Use it in your
project"); no package index serves it, so ``pip install 'agentrig[extra]'`` fails with "No
matching distribution found for agentrig".
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "bench").glob("*.py"))
"""The code whose messages and docstrings tell a user what to install."""
FROM_AN_INDEX = re.compile(r"pip install\s+(?:-\S+\s+)*['\"]?agentrig(?:\[[^\]]*\])?(?=['\"\s`]|$)")


def index_installs(text: str) -> list[str]:
    """The lines of ``text`` that install agentrig by its name, from a package index."""
    return [line.strip() for line in text.splitlines() if FROM_AN_INDEX.search(line)]


@pytest.mark.parametrize("doc", DOCS, ids=[str(doc.relative_to(ROOT)) for doc in DOCS])
def test_no_doc_installs_agentrig_from_a_package_index(doc: Path) -> None:
    assert index_installs(doc.read_text(encoding="utf-8")) == []


def test_no_message_or_docstring_installs_agentrig_from_a_package_index() -> None:
    found = {
        str(path.relative_to(ROOT)): lines
        for path in SOURCES
        if (lines := index_installs(path.read_text(encoding="utf-8")))
    }
    assert found == {}


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("Install the extra: `pip install 'agentrig[hypothesis]'`.", True),
        ("pip install agentrig", True),
        ('pip install -U "agentrig[openai,anthropic]"', True),
        ("pip install './agentrig[test]'                 # from the checkout", False),
        ("pip install 'dist/agentrig-0.1.0-py3-none-any.whl[test,openai]'", False),
        ("pip install -e '.[bench]'", False),
    ],
)
def test_the_check_tells_an_index_install_from_a_checkout_or_a_wheel(
    line: str, found: bool
) -> None:
    assert bool(index_installs(line)) is found
