"""The shards of a suite run on several machines (``agentrig run --shard i/n``), and joining
their reports into the one set a single machine would have written (``agentrig merge``).

A shard's run writes ``shard.json`` beside its reports: which part it is (``i`` of ``n``), a
fingerprint of the whole selection (every selected file's path, name and bytes, in order), and
where each of its scenarios sits in that selection. ``merge_shards`` reads the shards' JSON
reports, refuses parts of different suites or splits, a missing part or one given twice, and
puts the scenarios back in the order of a one-machine run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from agentrig.errors import InvalidInputError
from agentrig.harness.errors import ScenarioFileError, ShardMergeError
from agentrig.harness.results import SuiteResult
from agentrig.harness.scenarios.model import Scenario

__all__ = [
    "REPORT_FILE",
    "SHARD_FILE",
    "ShardInfo",
    "merge_shards",
    "read_shard",
    "shard_info",
]

SHARD_FILE = "shard.json"
"""The file a ``--shard`` run writes beside its reports."""

REPORT_FILE = "report.json"
"""The JSON report, the one ``merge_shards`` reads the results from."""

SHARD_FORMAT = "agentrig-shard"
SHARD_VERSION = 1

Entry = Scenario | ScenarioFileError


@dataclass(frozen=True)
class ShardInfo:
    """Part ``index`` of ``total`` of the suite ``suite`` (a fingerprint) of ``size`` entries;
    ``positions`` are the places of this part's results in the whole selection's order, and
    ``unloadable`` counts the files of this part that did not load."""

    index: int
    total: int
    suite: str
    size: int
    positions: tuple[int, ...]
    unloadable: int

    @property
    def label(self) -> str:
        """``"i/n"``."""
        return f"{self.index}/{self.total}"

    def to_dict(self) -> dict[str, Any]:
        """The content of ``shard.json``."""
        return {
            "format": SHARD_FORMAT,
            "version": SHARD_VERSION,
            "shard": [self.index, self.total],
            "suite": self.suite,
            "size": self.size,
            "positions": list(self.positions),
            "unloadable": self.unloadable,
        }

    def write(self, directory: Path) -> Path:
        """Write ``shard.json`` into ``directory`` (which exists) and return its path."""
        path = directory / SHARD_FILE
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return path


def shard_info(
    selection: Sequence[Entry], part: Sequence[Entry], shard: tuple[int, int]
) -> ShardInfo:
    """The :class:`ShardInfo` of ``part`` (in ``selection``'s order), the entries shard
    ``shard`` runs of ``selection``: what a one-machine run of the same command reports."""
    where = {id(entry): position for position, entry in enumerate(selection)}
    positions = tuple(sorted(where[id(entry)] for entry in part))
    unloadable = sum(isinstance(entry, ScenarioFileError) for entry in part)
    return ShardInfo(
        shard[0], shard[1], _fingerprint(selection), len(selection), positions, unloadable
    )


def _fingerprint(selection: Sequence[Entry]) -> str:
    """A digest of every selected entry's file path, name and bytes, in order: shards of the
    same command on the same checkout agree; a changed file or selection does not."""
    digest = hashlib.sha256()
    for entry in selection:
        path, name = _identity(entry)
        digest.update(f"{len(path)}:{path}\0{name}\0".encode("utf-8", "surrogatepass"))
        try:
            digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()


def _identity(entry: Entry) -> tuple[str, str]:
    if isinstance(entry, ScenarioFileError):
        return entry.path, ""
    source = entry.source
    return (source.path if source is not None else ""), entry.name


def read_shard(directory: Path) -> tuple[ShardInfo, SuiteResult]:
    """The ``shard.json`` and the JSON report of a shard's report folder; a clear
    :class:`ShardMergeError` for a folder that is not one."""
    info_path, report_path = directory / SHARD_FILE, directory / REPORT_FILE
    if not directory.is_dir():
        raise ShardMergeError(f"{directory}: no such folder")
    if not info_path.is_file():
        raise ShardMergeError(
            f"{directory}: no {SHARD_FILE}: not the report folder of an `agentrig run --shard "
            "i/n` run"
        )
    if not report_path.is_file():
        raise ShardMergeError(
            f"{directory}: no {REPORT_FILE}: run the shard with the json report (the default, "
            "or --report json)"
        )
    info = _parse_info(info_path)
    try:
        result = SuiteResult.from_dict(json.loads(report_path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError, InvalidInputError) as error:
        raise ShardMergeError(f"{report_path}: not an agentrig JSON report: {error}") from None
    if len(result.scenarios) != len(info.positions):
        raise ShardMergeError(
            f"{directory}: {REPORT_FILE} holds {len(result.scenarios)} scenario(s) but "
            f"{SHARD_FILE} places {len(info.positions)}: the two files are of different runs"
        )
    return info, result


def _parse_info(path: Path) -> ShardInfo:
    """``shard.json`` read and checked field by field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ShardMergeError(f"{path}: not readable JSON: {error}") from None
    if not isinstance(data, dict) or data.get("format") != SHARD_FORMAT:
        raise ShardMergeError(f"{path}: format: expected {SHARD_FORMAT!r}")
    if data.get("version") != SHARD_VERSION:
        raise ShardMergeError(
            f"{path}: version: expected {SHARD_VERSION}, got {data.get('version')!r}"
        )
    shard, suite = data.get("shard"), data.get("suite")
    size, positions, unloadable = data.get("size"), data.get("positions"), data.get("unloadable")
    if not (_ints(shard) and len(shard) == 2 and 1 <= shard[0] <= shard[1]):
        raise ShardMergeError(f"{path}: shard: expected [i, n] with 1 <= i <= n, got {shard!r}")
    if not isinstance(suite, str) or not suite:
        raise ShardMergeError(f"{path}: suite: expected the suite's fingerprint")
    if not (_is_int(size) and size >= 0):
        raise ShardMergeError(f"{path}: size: expected a count, got {size!r}")
    if not (_ints(positions) and all(0 <= p < size for p in positions)):
        raise ShardMergeError(f"{path}: positions: expected places below size {size}")
    if positions != sorted(set(positions)):
        raise ShardMergeError(f"{path}: positions: expected increasing places, each once")
    if not (_is_int(unloadable) and 0 <= unloadable <= len(positions)):
        raise ShardMergeError(f"{path}: unloadable: expected a count, got {unloadable!r}")
    return ShardInfo(shard[0], shard[1], suite, size, tuple(positions), unloadable)


def _is_int(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is an int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(values: Any) -> TypeGuard[list[int]]:
    """Whether ``values`` is a list of ints (not bools)."""
    return isinstance(values, list) and all(_is_int(value) for value in values)


def merge_shards(directories: Sequence[Path]) -> tuple[SuiteResult, int]:
    """The one result of the shards in ``directories`` (one folder per shard, in any order),
    with the scenarios in the order of a one-machine run and its wall time the longest
    shard's; and the number of files that did not load.

    Raises :class:`ShardMergeError` when a folder is not a shard's, when shards come from
    different suites or splits, or when a shard is missing or given twice.
    """
    if not directories:
        raise ShardMergeError("no shard folders given")
    shards = [(directory, *read_shard(directory)) for directory in directories]
    first_dir, first, _ = shards[0]
    seen: dict[int, Path] = {}
    for directory, info, _ in shards:
        if info.total != first.total:
            raise ShardMergeError(
                f"{directory} is shard {info.label} but {first_dir} is shard {first.label}: "
                "shards of different splits"
            )
        if (info.suite, info.size) != (first.suite, first.size):
            raise ShardMergeError(
                f"{directory} (shard {info.label}) and {first_dir} (shard {first.label}) ran "
                "different suites: other scenario files, other contents or another selection"
            )
        if info.index in seen:
            raise ShardMergeError(
                f"shard {info.label} given twice: {seen[info.index]} and {directory}"
            )
        seen[info.index] = directory
    missing = [f"{index}/{first.total}" for index in range(1, first.total + 1) if index not in seen]
    if missing:
        raise ShardMergeError(
            f"shard(s) {', '.join(missing)} missing: give the report folder of every one of "
            f"the {first.total} shards"
        )
    placed: dict[int, Any] = {}
    for directory, info, result in shards:
        for position, scenario in zip(info.positions, result.scenarios, strict=True):
            if position in placed:
                raise ShardMergeError(
                    f"{directory}: scenario {scenario.name!r} is also in another shard's report"
                )
            placed[position] = scenario
    if len(placed) != first.size:
        raise ShardMergeError(
            f"the shards hold {len(placed)} of the suite's {first.size} scenario(s)"
        )
    merged = SuiteResult(
        scenarios=tuple(placed[position] for position in range(first.size)),
        wall_time_s=max(result.wall_time_s for _, _, result in shards),
    )
    return merged, sum(info.unloadable for _, info, _ in shards)
