"""``FileSessionStore``: the file layout, atomic writes, corrupt files, and processes racing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentrig import (
    AgentState,
    FileSessionStore,
    SessionConflictError,
    SessionCorruptError,
    SessionError,
    SessionNotFoundError,
    StoredSession,
)
from agentrig.fakes import FakeClock


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def file_store(directory: Path) -> FileSessionStore:
    return FileSessionStore(directory, clock=FakeClock())


@pytest.fixture
def stored(file_store: FileSessionStore, start) -> StoredSession:
    return file_store.create(start("keep me"))


def document(store: FileSessionStore, session_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(store.path_of(session_id).read_text(encoding="utf-8"))
    return data


class TestLayout:
    def test_one_versioned_pretty_json_file_per_session(
        self, file_store: FileSessionStore, stored: StoredSession, directory: Path
    ) -> None:
        path = directory / f"{stored.session_id}.json"
        assert file_store.path_of(stored.session_id) == path
        data = document(file_store, stored.session_id)
        assert {
            key: data[key] for key in ("format", "format_version", "session_id", "version")
        } == {
            "format": "agentrig.session",
            "format_version": 1,
            "session_id": stored.session_id,
            "version": 1,
        }
        assert data["state"] == stored.state.to_dict()
        assert path.read_text(encoding="utf-8").startswith('{\n  "format"')

    def test_the_directory_is_created(self, tmp_path: Path) -> None:
        FileSessionStore(tmp_path / "a" / "b")
        assert (tmp_path / "a" / "b").is_dir()

    def test_a_directory_path_that_is_a_file_is_named(self, tmp_path: Path) -> None:
        path = tmp_path / "sessions"
        path.write_text("")
        with pytest.raises(SessionError, match="not a directory") as raised:
            FileSessionStore(path)
        assert str(path) in str(raised.value)

    @pytest.mark.parametrize("errno_name", ["EACCES", "EROFS", "ENOENT"])
    def test_a_directory_that_cannot_be_created_is_a_session_error(
        self, tmp_path: Path, start, monkeypatch: pytest.MonkeyPatch, errno_name: str
    ) -> None:
        # Simulated: the suite may run as root, whom a read-only folder does not stop.
        import errno

        code = getattr(errno, errno_name)
        path = tmp_path / "read-only" / "sessions"

        def refuse(self: Path, *args: object, **kwargs: object) -> None:
            raise OSError(code, os.strerror(code), str(self))

        monkeypatch.setattr(Path, "mkdir", refuse)
        with pytest.raises(SessionError, match="cannot be created") as raised:
            FileSessionStore(path)
        assert str(path) in str(raised.value)
        assert os.strerror(code) in str(raised.value)
        monkeypatch.undo()
        store = FileSessionStore(path)
        shutil.rmtree(path)
        monkeypatch.setattr(Path, "mkdir", refuse)
        with pytest.raises(SessionError, match="cannot be created"):
            store.create(start())

    def test_a_directory_removed_after_opening_is_made_again_on_write(
        self, file_store: FileSessionStore, directory: Path, start
    ) -> None:
        shutil.rmtree(directory)
        state = start()
        assert file_store.list_ids() == []
        with pytest.raises(SessionNotFoundError):
            file_store.save(state, expected_version=1)
        with pytest.raises(SessionNotFoundError):
            file_store.delete(state.agent_id)
        shutil.rmtree(directory, ignore_errors=True)
        created = file_store.create(state)
        assert file_store.load(state.agent_id) == created

    def test_a_file_put_in_place_of_the_directory_after_opening_is_named(
        self, file_store: FileSessionStore, directory: Path, start
    ) -> None:
        shutil.rmtree(directory)
        directory.write_text("", encoding="utf-8")
        with pytest.raises(SessionError, match="not a directory") as raised:
            file_store.create(start())
        assert str(directory) in str(raised.value)

    def test_delete_removes_the_lock_file_too(
        self, file_store: FileSessionStore, stored: StoredSession, directory: Path
    ) -> None:
        file_store.delete(stored.session_id)
        assert list(directory.iterdir()) == []

    def test_other_files_in_the_directory_are_not_sessions(
        self, file_store: FileSessionStore, stored: StoredSession, directory: Path
    ) -> None:
        (directory / "notes.txt").write_text("hi", encoding="utf-8")
        (directory / "my notes.json").write_text("{}", encoding="utf-8")
        (directory / f".{stored.session_id}.json.123.tmp").write_text("{", encoding="utf-8")
        assert file_store.list_ids() == [stored.session_id]


class TestAtomicWrites:
    def test_a_failed_write_leaves_the_old_file_and_no_temporary(
        self,
        file_store: FileSessionStore,
        stored: StoredSession,
        directory: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        before = file_store.path_of(stored.session_id).read_bytes()

        def disk_full(*args: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "replace", disk_full)
        with pytest.raises(SessionError, match="No space left on device") as raised:
            file_store.save(stored.state.with_metadata("lost", True), expected_version=1)
        assert "the stored version, if any, is unchanged" in str(raised.value)
        assert raised.value.session_id == stored.session_id
        monkeypatch.undo()
        assert file_store.path_of(stored.session_id).read_bytes() == before
        assert sorted(p.suffix for p in directory.iterdir()) == [".json", ".lock"]
        assert file_store.load(stored.session_id) == stored

    def test_a_process_killed_mid_write_leaves_the_old_version(
        self, file_store: FileSessionStore, stored: StoredSession, directory: Path
    ) -> None:
        crash = textwrap.dedent(
            f"""
            import os
            from agentrig import FileSessionStore

            store = FileSessionStore({str(directory)!r})
            loaded = store.load({stored.session_id!r})
            real_fsync = os.fsync
            def die_after_writing(fd):
                real_fsync(fd)
                os._exit(9)  # killed after the new data hit the disk, before the rename
            os.fsync = die_after_writing
            store.save(loaded.state.with_metadata("half", True), expected_version=1)
            """
        )
        result = subprocess.run([sys.executable, "-c", crash], check=False, timeout=60)
        assert result.returncode == 9
        leftovers = [p.name for p in directory.iterdir() if p.suffix == ".tmp"]
        assert len(leftovers) == 1  # the half-finished write, never renamed into place
        assert file_store.load(stored.session_id) == stored
        assert file_store.list_ids() == [stored.session_id]
        assert file_store.save(stored.state, expected_version=1).version == 2
        assert [p for p in directory.iterdir() if p.suffix == ".tmp"] == []  # cleaned up

    @pytest.mark.parametrize("errno_name", ["EACCES", "EROFS", "ENOSPC"])
    def test_a_refused_write_is_a_session_error_and_keeps_the_old_version(
        self,
        file_store: FileSessionStore,
        stored: StoredSession,
        monkeypatch: pytest.MonkeyPatch,
        errno_name: str,
    ) -> None:
        # Simulated: the suite may run as root, whom chmod does not stop.
        import errno
        import tempfile

        code = getattr(errno, errno_name)

        def refuse(*args: object, **kwargs: object) -> None:
            raise OSError(code, os.strerror(code), str(file_store.directory))

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
        with pytest.raises(SessionError, match=os.strerror(code)):
            file_store.save(stored.state.with_metadata("lost", True), expected_version=1)
        with pytest.raises(SessionError, match=os.strerror(code)):
            file_store.create(stored.state.evolve(agent_id="another"))
        monkeypatch.undo()
        assert file_store.load(stored.session_id) == stored

    def test_an_unlockable_folder_is_a_session_error(
        self, file_store: FileSessionStore, stored: StoredSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        real_open = os.open

        def no_lock_file(path: Any, flags: int, *args: Any) -> int:
            if str(path).endswith(".lock"):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, flags, *args)

        monkeypatch.setattr(os, "open", no_lock_file)
        with pytest.raises(SessionError, match="Permission denied"):
            file_store.delete(stored.session_id)
        monkeypatch.undo()
        assert file_store.load(stored.session_id) == stored


class TestNotRegularFiles:
    @pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
    def test_a_fifo_in_place_of_a_session_file_is_corrupt_not_a_hang(
        self, file_store: FileSessionStore, stored: StoredSession, bounded: Any
    ) -> None:
        path = file_store.path_of(stored.session_id)
        path.unlink()
        os.mkfifo(path)
        with pytest.raises(SessionCorruptError, match="not a regular file") as raised:
            bounded(lambda: file_store.load(stored.session_id))
        assert raised.value.location == str(path)
        with pytest.raises(SessionCorruptError):
            bounded(lambda: file_store.save(stored.state, expected_version=1))

    def test_a_symlink_loop_is_corrupt(
        self, file_store: FileSessionStore, stored: StoredSession
    ) -> None:
        path = file_store.path_of(stored.session_id)
        path.unlink()
        path.symlink_to(path)
        with pytest.raises(SessionCorruptError, match="cannot be read") as raised:
            file_store.load(stored.session_id)
        assert raised.value.location == str(path)

    def test_an_unreadable_file_is_a_session_error(
        self, file_store: FileSessionStore, stored: StoredSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        real_open = os.open

        def refuse(path: Any, flags: int, *args: Any) -> int:
            if str(path).endswith(".json"):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, flags, *args)

        monkeypatch.setattr(os, "open", refuse)
        with pytest.raises(SessionError, match="Permission denied"):
            file_store.load(stored.session_id)


Damage = Any  # (file text, parsed document) -> new text or document


def without(key: str) -> Damage:
    return lambda text, data: {k: v for k, v in data.items() if k != key}


def in_state(**changes: Any) -> Damage:
    return lambda text, data: {**data, "state": {**data["state"], **changes}}


HEADER_DAMAGE = [
    pytest.param(lambda t, d: t[: len(t) // 2], "<root>", "not valid JSON (line", id="truncated"),
    pytest.param(lambda t, d: "[1, 2]", "<root>", "expected a JSON object, got list", id="list"),
    pytest.param(lambda t, d: {**d, "version": 0}, "version", ">= 1", id="bad-version"),
    pytest.param(
        lambda t, d: {**d, "format_version": 7},
        "format_version",
        "less than or equal to 1",
        id="future",
    ),
    pytest.param(lambda t, d: {**d, "session_id": "x"}, "session_id", "another", id="renamed"),
    pytest.param(without("created_at"), "created_at", "Field required", id="missing-field"),
    pytest.param(lambda t, d: {**d, "version": "1"}, "version", "integer", id="version-text"),
    pytest.param(lambda t, d: {**d, "version": 1.0}, "version", "integer", id="version-float"),
    pytest.param(lambda t, d: {**d, "version": True}, "version", "integer", id="version-bool"),
    pytest.param(
        lambda t, d: {**d, "created_at": 1767225600}, "created_at", "datetime", id="epoch"
    ),
    pytest.param(
        lambda t, d: {**d, "updated_at": "2026-01-01"}, "updated_at", "ISO-8601", id="date-only"
    ),
    pytest.param(
        lambda t, d: {**d, "format_version": True}, "format_version", "integer", id="format-bool"
    ),
    pytest.param(lambda t, d: t.replace("{", '{"version": 1,', 1), "<root>", "duplicate", id="dup"),
]
STATE_DAMAGE = [
    pytest.param(in_state(execution_count=-1), "state.execution_count", ">= 0", id="bad-count"),
    pytest.param(in_state(agent_id="x"), "state.agent_id", "another session", id="foreign"),
    pytest.param(
        in_state(execution_count="1"), "state.execution_count", "integer", id="count-text"
    ),
    pytest.param(in_state(created_at="2026-01-01T00:00:00"), "state.created_at", "ISO", id="naive"),
    pytest.param(without("state"), "state", "Field required", id="no-state"),
]


def damage(store: FileSessionStore, session_id: str, edit: Damage) -> Path:
    path = store.path_of(session_id)
    text = path.read_text(encoding="utf-8")
    damaged = edit(text, json.loads(text))
    path.write_text(damaged if isinstance(damaged, str) else json.dumps(damaged), "utf-8")
    return path


class TestCorruptFiles:
    @pytest.mark.parametrize(("edit", "field", "reason"), HEADER_DAMAGE + STATE_DAMAGE)
    def test_loading_a_damaged_file_names_the_file_and_the_field(
        self,
        file_store: FileSessionStore,
        stored: StoredSession,
        edit: Damage,
        field: str,
        reason: str,
    ) -> None:
        path = damage(file_store, stored.session_id, edit)
        with pytest.raises(SessionCorruptError) as raised:
            file_store.load(stored.session_id)
        message = str(raised.value).replace("greater than or equal to", ">=")
        assert raised.value.location == str(path)
        assert f"{path} is corrupt at field '{field}'" in message
        assert reason in message
        assert "Nothing was changed" in message

    @pytest.mark.parametrize("edit", [pytest.param(p.values[0], id=p.id) for p in HEADER_DAMAGE])
    def test_no_write_touches_a_file_whose_header_is_damaged(
        self, file_store: FileSessionStore, stored: StoredSession, edit: Damage
    ) -> None:
        path = damage(file_store, stored.session_id, edit)
        before = path.read_bytes()
        with pytest.raises(SessionCorruptError):
            file_store.save(stored.state, expected_version=1)
        with pytest.raises(SessionCorruptError):
            file_store.create(stored.state)
        with pytest.raises(SessionCorruptError):
            file_store.delete(stored.session_id)
        assert path.read_bytes() == before

    def test_a_damaged_state_can_be_replaced_or_deleted_with_its_version(
        self, file_store: FileSessionStore, stored: StoredSession
    ) -> None:
        path = file_store.path_of(stored.session_id)
        data = json.loads(path.read_text(encoding="utf-8"))
        data["state"]["context"] = "garbage"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(SessionCorruptError, match=r"state\.context"):
            file_store.load(stored.session_id)
        with pytest.raises(SessionConflictError):
            file_store.save(stored.state, expected_version=2)
        repaired = file_store.save(stored.state, expected_version=1)
        assert file_store.load(stored.session_id) == repaired
        path.write_text(json.dumps(data), encoding="utf-8")
        file_store.delete(stored.session_id, expected_version=1)
        assert not file_store.exists(stored.session_id)

    def test_a_hand_edit_that_stays_valid_is_read_back(
        self, file_store: FileSessionStore, stored: StoredSession
    ) -> None:
        path = file_store.path_of(stored.session_id)
        data = json.loads(path.read_text(encoding="utf-8"))
        data["state"]["context"]["system_prompt"] = "Edited by hand."
        path.write_text(json.dumps(data), encoding="utf-8")
        assert file_store.load(stored.session_id).state.system_prompt() == "Edited by hand."


# --- processes racing ------------------------------------------------------------------------

SAVE_ONCE = """
import sys
from agentrig import FileSessionStore, SessionConflictError

store = FileSessionStore(sys.argv[1])
loaded = store.load(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
try:
    store.save(loaded.state.with_metadata("winner", sys.argv[3]), expected_version=1)
    print("saved")
except SessionConflictError as error:
    print(f"conflict {error.expected_version}->{error.stored_version}")
"""

INCREMENT = """
import sys
from agentrig import FileSessionStore, SessionConflictError

store = FileSessionStore(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
done = 0
while done < int(sys.argv[3]):
    loaded = store.load(sys.argv[2])
    count = loaded.state.metadata()["count"]
    try:
        store.save(loaded.state.with_metadata("count", count + 1), expected_version=loaded.version)
    except SessionConflictError:
        continue
    done += 1
print("done")
"""


def race(script: str, *args: str, processes: int = 2) -> list[str]:
    """Run ``script`` in ``processes`` processes, released together once all are ready."""
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args, str(number)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for number in range(processes)
    ]
    for worker in workers:
        assert worker.stdout is not None
        assert worker.stdout.readline() == "ready\n"
    outputs = []
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        out, _ = worker.communicate(timeout=120)
        assert worker.returncode == 0
        outputs.append(out.strip())
    return outputs


class TestProcessesRacing:
    def test_exactly_one_of_two_processes_saving_the_same_version_wins(
        self, file_store: FileSessionStore, stored: StoredSession, directory: Path
    ) -> None:
        outcomes = race(SAVE_ONCE, str(directory), stored.session_id)
        assert sorted(outcomes) == ["conflict 1->2", "saved"]
        winner = str(outcomes.index("saved"))
        final = file_store.load(stored.session_id)
        assert (final.version, final.state.metadata()) == (2, {"winner": winner})

    def test_no_update_is_lost_when_processes_retry_on_conflict(
        self, file_store: FileSessionStore, directory: Path
    ) -> None:
        created = file_store.create(AgentState(agent_id="counter").with_metadata("count", 0))
        assert race(INCREMENT, str(directory), created.session_id, "20") == ["done", "done"]
        final = file_store.load(created.session_id)
        assert (final.version, final.state.metadata()["count"]) == (41, 40)
