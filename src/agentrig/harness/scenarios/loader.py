"""Load scenario files into :class:`~agentrig.harness.scenarios.model.Scenario` objects.

Every problem in a file raises one :class:`~agentrig.harness.errors.ScenarioFileError` that
lists all of them, each with file, line, column and field path::

    scenarios/weather.scenario.yaml:14:15: turns[0].expect.status: 'complete' is not one of:
    completed, stopped, failed (did you mean 'completed'?)

Directory rule of :func:`load_scenarios`: a directory is searched recursively for
``*.scenario.yaml`` files, in sorted order, skipping every directory named ``failing`` below it
(that is where scenarios that are *meant* to fail live). Name a ``failing`` directory, or a file
in one, explicitly to load it. Symbolic links to directories are not followed.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.model import (
    BUILDER_REFERENCE_PATTERN,
    IDENTIFIER_PATTERN,
    INVARIANT_NAME_PATTERN,
    SCENARIO_NAME_PATTERN,
    PendingLocation,
    Scenario,
    ToolCallSpec,
    parse_call_shorthand,
)
from agentrig.harness.scenarios.source_map import bind_models
from agentrig.harness.scenarios.yaml_source import FieldPath, Location, YamlSource, load_yaml_file

__all__ = [
    "JSON_SCHEMA_DIALECT",
    "MANY_YOUNG_OBJECTS",
    "SCENARIO_SUFFIX",
    "SKIPPED_DIRECTORY",
    "LoadedSuite",
    "ToolCallSpec",
    "collector_paused",
    "file_error",
    "load_scenario",
    "load_scenarios",
    "load_suite",
    "many_young_objects",
    "parse_call_shorthand",
    "scenario_json_schema",
]

SCENARIO_SUFFIX = ".scenario.yaml"
SKIPPED_DIRECTORY = "failing"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

StrPath = str | os.PathLike[str]


def load_scenario(path: StrPath) -> Scenario:
    """Load one scenario file; raises :class:`ScenarioFileError` listing every problem."""
    source = load_yaml_file(path, depth=1)  # the rest of the locations only when needed
    data = _top_level(source)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise file_error(exc, source) from None
    _bind_locations(scenario, source)
    source.drop_data()  # the models hold what was read; locations parse the text again
    return scenario


def load_scenarios(paths: StrPath | Iterable[StrPath]) -> list[Scenario]:
    """Load files and directories (see the module docstring for the directory rule).

    Scenario names must be unique across everything loaded. Problems in all files are
    gathered into one :class:`ScenarioFileError`.
    """
    suite = load_suite(paths)
    problems = [problem for error in suite.broken for problem in error.errors]
    if problems:
        raise ScenarioFileError.combine(problems)
    return suite.scenarios


@dataclass(frozen=True)
class LoadedSuite:
    """What :func:`load_suite` found: each file, in order, as its scenario or its error."""

    entries: tuple[Scenario | ScenarioFileError, ...]

    @property
    def scenarios(self) -> list[Scenario]:
        """The files that loaded."""
        return [entry for entry in self.entries if isinstance(entry, Scenario)]

    @property
    def broken(self) -> list[ScenarioFileError]:
        """One error per file that did not load, listing every problem of that file."""
        return [entry for entry in self.entries if isinstance(entry, ScenarioFileError)]


def load_suite(paths: StrPath | Iterable[StrPath]) -> LoadedSuite:
    """Load files and directories like :func:`load_scenarios`, without giving up on the first
    bad file: a file that does not load (or repeats the name of an earlier one) is kept, in its
    place, as its :class:`ScenarioFileError`, and the others load."""
    entries: list[Scenario | ScenarioFileError] = []
    with collector_paused():
        for file in _scenario_files(paths):
            try:
                entries.append(load_scenario(file))
            except ScenarioFileError as exc:
                entries.append(exc)
        _to_oldest_generation()
    loaded = [entry for entry in entries if isinstance(entry, Scenario)]
    duplicates = {id(error.scenario): error.error for error in _duplicate_names(loaded)}
    return LoadedSuite(tuple(duplicates.get(id(entry), entry) for entry in entries))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside (as while files load): loading makes many objects and
    little garbage, and each full collection would visit every scenario loaded so far (40%
    of the loading time of 1,000 files, for nothing collected). Reference counting still frees
    what is dropped; cycles wait for the next collection."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


MANY_YOUNG_OBJECTS = 20_000
"""How many objects made with the collector off are worth moving out of its young generation
(:func:`many_young_objects`): visiting fewer twice (the next young collection, then the next
generation's) costs about 1 ms; 1,000 scenario files make about 290,000."""


def many_young_objects() -> bool:
    """Whether the collector's young generation holds :data:`MANY_YOUNG_OBJECTS` or more: only
    then is finding out whether the process froze objects (``gc.get_freeze_count`` walks every
    frozen object: 80 ms in a host that froze 9 million) worth it."""
    return gc.get_count()[0] >= MANY_YOUNG_OBJECTS


def _to_oldest_generation() -> None:
    """Move what the collector tracks into its oldest generation, without visiting it: all that
    was made while it was off is young, and the first young collection after would visit every
    scenario just loaded (then the next generation's, again), though they live on. ``freeze``
    and ``unfreeze`` only move lists; skipped when something is frozen already (a host's
    freeze is not this function's to undo), and for a few files (:func:`many_young_objects`)."""
    if many_young_objects() and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file, for editors and validators."""
    schema = Scenario.model_json_schema()
    return {"$schema": JSON_SCHEMA_DIALECT, **schema, "title": _TITLE, "description": _ABOUT}


_TITLE = "agentrig scenario file"
_ABOUT = (
    "A scenario: the agent under test, the user's turns with the model's scripted replies, "
    "and what to expect after each turn. See docs/scenario-format.md."
)


# --- finding files ----------------------------------------------------------------------------


def _scenario_files(paths: StrPath | Iterable[StrPath]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files: list[Path] = []
    seen: set[str] = set()
    for path in paths:
        for file, real in _expand(Path(path)):
            if real not in seen:
                seen.add(real)
                files.append(file)
    return files


def _expand(path: Path) -> list[tuple[Path, str]]:
    """The files ``path`` names, each with its real path (symlinks resolved), in order."""
    if not path.is_dir():
        return [(path, os.path.realpath(path))]
    found: list[tuple[Path, str]] = []
    _search(str(path), set(), found)
    found.sort(key=lambda item: item[0])
    return found


def _search(folder: str, visited: set[str], found: list[tuple[Path, str]]) -> None:
    """Add the scenario files below ``folder`` to ``found``, as ``os.walk(followlinks=True)``
    goes: symlinked folders are searched, a folder reached again (a loop) only once, and a
    folder that cannot be listed is skipped. Only a symlink's real path needs resolving: any
    other file's is its real folder's (``os.scandir`` tells which without a call a file)."""
    real_folder = os.path.realpath(folder)
    visited.add(real_folder)
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return
    subfolders: list[str] = []
    for entry in entries:
        try:
            is_folder = entry.is_dir()
        except OSError:
            is_folder = False
        if is_folder:
            subfolders.append(entry.name)
        elif entry.name.endswith(SCENARIO_SUFFIX):
            symlink = entry.is_symlink()
            real = (
                os.path.realpath(entry.path) if symlink else os.path.join(real_folder, entry.name)
            )
            found.append((Path(entry.path), real))
    subfolders = sorted(  # chosen before any is searched, as os.walk chooses them
        os.path.join(folder, name)
        for name in subfolders
        if name != SKIPPED_DIRECTORY and os.path.realpath(os.path.join(folder, name)) not in visited
    )
    for subfolder in subfolders:
        _search(subfolder, visited, found)


@dataclass(frozen=True)
class _Duplicate:
    scenario: Scenario
    error: ScenarioFileError


def _duplicate_names(scenarios: list[Scenario]) -> list[_Duplicate]:
    """Each scenario whose name an earlier one has, with the error that says so."""
    first: dict[str, Scenario] = {}
    problems = []
    for scenario in scenarios:
        other = first.setdefault(scenario.name, scenario)
        if other is not scenario and scenario.source is not None:
            where = scenario.source
            reason = f"duplicate scenario name {scenario.name!r}, also used at {other.source}"
            error = ScenarioFileError(
                where.path, reason, line=where.line, column=where.column, field="name"
            )
            problems.append(_Duplicate(scenario, error))
    return problems


# --- locations --------------------------------------------------------------------------------


def _top_level(source: YamlSource) -> dict[str, Any]:
    if isinstance(source.data, dict):
        return source.data
    if source.data is None:
        reason = "the file is empty; a scenario needs at least name: and turns:"
        raise ScenarioFileError(source.path, reason)
    where = source.location(())
    kind = "a list" if isinstance(source.data, list) else f"the value {source.data!r}"
    reason = f"the top level must be a mapping with name:, turns: and so on, not {kind}"
    raise _at(source, where, reason)


def _at(source: YamlSource, where: Location | None, reason: str, **extra: Any) -> ScenarioFileError:
    line, column = where if where is not None else (None, None)
    return ScenarioFileError(source.path, reason, line=line, column=column, **extra)


def _bind_locations(scenario: Scenario, source: YamlSource) -> None:
    """Tell each model of ``scenario`` its file and path (the location is found when first
    asked for: ``ScenarioModel.source`` resolves it)."""
    bind_models(scenario, (), source)
    scenario._bind_source(PendingLocation(source, ("name",), key=True))
    scenario._bind_yaml(source)


# --- validation errors ------------------------------------------------------------------------


def file_error(
    exc: ValidationError, source: YamlSource, root: type[BaseModel] = Scenario
) -> ScenarioFileError:
    """Every problem of ``exc`` (validating ``root`` from ``source``) as one error naming the file,
    line and field of each."""
    everything = exc.errors(include_url=False)
    bad_keys = {error["loc"][:-1] for error in everything if error["loc"][-1:] == ("[key]",)}
    errors = [
        error
        for error in everything
        if not _is_noise(error) and error["loc"] not in bad_keys  # the value of a bad key
    ] or everything
    problems = [_problem(error, source, root) for error in errors]
    problems.sort(key=lambda problem: (problem.line or 0, problem.column or 0))
    return ScenarioFileError.combine(problems)


def _is_noise(error: ErrorDetails) -> bool:
    """A length error pydantic adds when items of a long enough list were invalid."""
    value = error["input"]
    if error["type"] != "too_short" or not isinstance(value, list):
        return False
    minimum: int = error["ctx"]["min_length"]  # pydantic's too_short always has ctx
    return len(value) >= minimum


def _problem(error: ErrorDetails, source: YamlSource, root: type[BaseModel]) -> ScenarioFileError:
    loc, kind = error["loc"], error["type"]
    if kind == "missing" and loc:
        # Match the missing key's parent: the key itself is not in the file, and matching it
        # would take a key of the same name higher up (the scenario's name for a model's).
        path, _ = _match_loc(source.data, loc[:-1])
        found = False
    else:
        path, found = _match_loc(source.data, loc)
    # A key that is not in the file (missing, or one a rule is about) is named in full, at its
    # parent's line.
    missing = kind in ("missing", "scenario_rule") and not found and bool(loc)
    # A rule of one member of a union (``retries: {}``) ends in the member's tag: no key.
    missing = missing and not str(loc[-1]).startswith("function-")
    shown = (*path, loc[-1]) if missing else path
    on_key = kind == "extra_forbidden" or (bool(loc) and loc[-1] == "[key]")
    where = source.key_locations.get(path) if on_key else None
    reason, valid = _reason(error, shown, root)
    field = _dotted(shown)
    return _at(source, where or source.location(path), reason, field=field, valid=valid)


def _match_loc(data: Any, loc: tuple[int | str, ...]) -> tuple[FieldPath, bool]:
    """The data path a pydantic ``loc`` points at, and whether its last item is in the data.

    ``loc`` may hold items that are not in the data (union tags, ``[key]``, a missing key);
    the best reading consumes the last item and as many others as possible (on a tie, the one
    that consumes earlier items). Each item is either consumed or skipped, so the readings are
    found by dynamic programming over (position in ``loc``, data node), not by trying them all.
    """
    levels = [[data]]  # levels[k]: the nodes a reading of loc[:k] can reach
    for part in loc:
        reached = {id(node): node for node in levels[-1]}
        for node in levels[-1]:
            child = _child(node, part)
            if child is not _ABSENT:
                reached.setdefault(id(child), child)
        levels.append(list(reached.values()))
    # ``levels`` keeps every node alive, so the ids in ``best`` stay unique.
    best: dict[tuple[int, int], tuple[bool, FieldPath]] = {}
    for start in range(len(loc), -1, -1):
        for node in levels[start]:
            best[(start, id(node))] = _best_reading(node, loc, start, best)
    last, path = best[(0, id(data))]
    return path, last


def _best_reading(
    node: Any,
    loc: tuple[int | str, ...],
    start: int,
    best: dict[tuple[int, int], tuple[bool, FieldPath]],
) -> tuple[bool, FieldPath]:
    if start == len(loc):
        return False, ()
    head = loc[start]
    skipped = best[(start + 1, id(node))]
    child = _child(node, head)
    if child is _ABSENT:
        return skipped
    last, path = best[(start + 1, id(child))]
    consumed = (last or start + 1 == len(loc), (head, *path))
    return consumed if (consumed[0], len(consumed[1])) >= (skipped[0], len(skipped[1])) else skipped


_ABSENT = object()


def _child(node: Any, part: int | str) -> Any:
    if isinstance(node, dict) and isinstance(part, str) and part in node:
        return node[part]
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return _ABSENT


def _dotted(path: FieldPath) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


# --- reasons ----------------------------------------------------------------------------------

_MESSAGES = {
    "string_type": "expected a string, got {got}",
    "int_type": "expected an integer, got {got}",
    "int_from_float": "expected an integer, got {got}",
    "float_type": "expected a number, got {got}",
    "bool_type": "expected true or false, got {got}",
    "dict_type": "expected a mapping, got {got}",
    "model_type": "expected a mapping, got {got}",
    "model_attributes_type": "expected a mapping, got {got}",
    "list_type": "expected a list, got {got}",
    "tuple_type": "expected a list, got {got}",
    "greater_than_equal": "must be at least {ge}, got {got}",
    "less_than_equal": "must be at most {le}, got {got}",
    "greater_than": "must be greater than {gt}, got {got}",
    "less_than": "must be less than {lt}, got {got}",
    "finite_number": "expected a finite number, got {got}",
    "too_short": "needs at least {min_length} item(s), got {actual_length}",
    "string_too_long": "must be at most {max_length} characters long",
    "string_too_short": "needs at least {min_length} character(s), got {got}",
    "timezone_aware": "needs a timezone, such as 2026-01-01T00:05:00Z",
    "datetime_type": "expected an ISO-8601 date-time with a timezone, got {got}",
    "datetime_parsing": "expected an ISO-8601 date-time with a timezone, got {got}",
    "datetime_from_date_parsing": "expected an ISO-8601 date-time with a timezone, got {got}",
}
_PATTERN_HINTS = {
    SCENARIO_NAME_PATTERN: "use lowercase letters, digits, '.', '_' and '-', "
    "starting with a letter or digit",
    IDENTIFIER_PATTERN: "use letters, digits, '_' and '-' (at most 64), "
    "starting with a letter or '_'",
    INVARIANT_NAME_PATTERN: "use lowercase snake_case",
    BUILDER_REFERENCE_PATTERN: "write 'package.module:function', a dotted module name, a colon "
    "and the function that returns the AgentBuilder",
}
_FIELD_REASONS = {
    "metric": "is not a metric: write rate, pass^K or pass@K with K a whole number from 1 (no "
    "sign, no leading zero, no blanks), e.g. pass^4",
    "api_key_env": "is not an environment variable's name: use letters, digits and '_', not "
    "starting with a digit",
    "adapter": "is not a valid name: write 'package.module:function', a dotted module name, a "
    "colon and the function that takes the conversation and returns the agent's reply",
}


def _reason(
    error: ErrorDetails, shown: FieldPath, root: type[BaseModel]
) -> tuple[str, tuple[str, ...]]:
    kind, value, ctx = error["type"], error["input"], error.get("ctx", {})
    if kind in ("literal_error", "enum"):
        valid = tuple(re.findall(r"'([^']*)'", str(ctx.get("expected", ""))))
        return f"{_show(value)} is not one of: {', '.join(valid)}{_suggest(value, valid)}", valid
    if kind == "extra_forbidden":
        return _unknown_key(shown, root)
    if kind == "missing":
        return f"missing required key {shown[-1]!r}" if shown else "missing required key", ()
    if kind == "string_pattern_mismatch":
        pattern, key = str(ctx.get("pattern")), shown[-1] if shown else None
        if key in _FIELD_REASONS:  # a live scenario's key; its pattern lives with the live keys
            return f"{_show(value)} {_FIELD_REASONS[key]}", ()
        hint = _PATTERN_HINTS.get(pattern, f"it must match {pattern}")
        return f"{_show(value)} is not a valid name: {hint}", ()
    if kind == "model_type" and ctx.get("class_name") == "TextMatch":
        # A text check takes a bare text too: say so, and why ``yes`` was not one.
        reason = f"expected a text or a mapping with one of equals, contains, regex, empty, got {_describe(value)}"
        return reason + _hint("string_type", value), ()
    if kind in _MESSAGES:
        return _MESSAGES[kind].format(got=_describe(value), **ctx) + _hint(kind, value), ()
    return error["msg"].removeprefix("Value error, "), ()


def _unknown_key(shown: FieldPath, root: type[BaseModel]) -> tuple[str, tuple[str, ...]]:
    key = str(shown[-1]) if shown else ""
    valid = _allowed_keys(shown[:-1], root)
    allowed = f"; allowed keys: {', '.join(valid)}" if valid else ""
    return f"unknown key {key!r}{_suggest(key, valid)}{allowed}", valid


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return _describe(value)


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None or isinstance(value, bool):
        return "null" if value is None else f"the boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, dict | list):
        return "a mapping" if isinstance(value, dict) else "a list"
    return f"the {type(value).__name__} {value}"


def _hint(kind: str, value: Any) -> str:
    if kind != "string_type" or not isinstance(value, bool | int | float):
        return ""
    if isinstance(value, bool):
        return " (YAML reads yes, no, on, off, true and false as booleans: quote the text)"
    return " (quote it to make it text)"


def _suggest(value: Any, valid: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, valid, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _allowed_keys(path: FieldPath, root: type[BaseModel]) -> tuple[str, ...]:
    annotation: Any = root
    for part in path:
        annotation = _step(annotation, part)
    model = next((option for option in _options(annotation) if _is_model(option)), None)
    if model is None:
        return ()
    return tuple(field.alias or name for name, field in model.model_fields.items())


def _step(annotation: Any, part: int | str) -> Any:
    """The type found at ``part`` inside a value of type ``annotation`` (None if none)."""
    for option in _options(annotation):
        origin = get_origin(option)
        if _is_model(option) and isinstance(part, str):
            fields = {field.alias or name: field for name, field in option.model_fields.items()}
            if part in fields:
                return fields[part].annotation
        elif origin is dict and isinstance(part, str):
            return get_args(option)[1]
        elif origin in (tuple, list) and isinstance(part, int):
            return get_args(option)[0]
    return None


def _options(annotation: Any) -> list[Any]:
    """The plain types an annotation allows, through ``Annotated`` and unions."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _options(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return [option for arg in get_args(annotation) for option in _options(arg)]
    return [annotation]


def _is_model(option: Any) -> bool:
    return isinstance(option, type) and issubclass(option, BaseModel)
