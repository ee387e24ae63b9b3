"""The example in docs/sessions.md runs and does what the page says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentrig as ar

PAGE = Path(__file__).parents[2] / "docs" / "sessions.md"


def test_the_documented_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [example] = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(example, namespace)
    session, saved, conflict = namespace["session"], namespace["saved"], namespace["conflict"]
    assert isinstance(session, ar.StoredSession)
    assert isinstance(saved, ar.StoredSession)
    assert (session.version, saved.version) == (1, 2)
    assert isinstance(conflict, ar.SessionConflictError)
    assert (conflict.expected_version, conflict.stored_version) == (1, 2)
    stored = ar.FileSessionStore(tmp_path / "sessions").load(session.session_id)
    assert stored == saved
    assert stored.state.messages().to_text().endswith("2 + 2 = 4.")
    assert (tmp_path / "sessions" / f"{session.session_id}.json").is_file()


def test_the_page_lists_every_store_method() -> None:
    page = PAGE.read_text(encoding="utf-8")
    methods = [name for name in vars(ar.SessionStore) if not name.startswith("_")]
    assert methods
    assert all(f"`{name}(" in page for name in methods)
