"""Tool-call trajectory matching: compare the calls an agent made with the expected ones.

Modes (a name registry of small functions): ``strict`` (same calls, same order), ``unordered``
(same calls, any order), ``subset`` (every actual call is expected), ``superset`` (every expected
call was made). Arguments match ``exact``\\ly or ``partial``\\ly (the expected keys only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrig._model import json_equal
from agentrig.errors import InvalidInputError


@dataclass(frozen=True)
class Call:
    """A tool call reduced to what trajectories compare: name and arguments."""

    name: str
    args: Mapping[str, Any]

    def __str__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.args.items())
        return f"{self.name}({args})"


ArgsMatcher = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
TrajectoryMatcher = Callable[[Sequence[Call], Sequence[Call], ArgsMatcher], str | None]


def exact_args(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Arguments are equal."""
    return json_equal(dict(expected), dict(actual))


def partial_args(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Every expected argument is present with the same value."""
    return all(key in actual and json_equal(value, actual[key]) for key, value in expected.items())


def _same(expected: Call, actual: Call, args: ArgsMatcher) -> bool:
    return expected.name == actual.name and args(expected.args, actual.args)


def _unmatched(wanted: Sequence[Call], pool: Sequence[Call], args: ArgsMatcher) -> list[Call]:
    """Calls of ``wanted`` left over by a maximum pairing of each with a distinct call of ``pool``.

    With partial arguments one expected call can match several actual ones, so pairing greedily
    in order is not enough: ``[weather(), weather(city=Paris)]`` must match
    ``[weather(city=Paris), weather(city=Oslo)]``. Augmenting paths (Kuhn) find the best pairing.
    """
    candidates = [
        [p for p, other in enumerate(pool) if _same(call, other, args)] for call in wanted
    ]
    owner: dict[int, int] = {}  # pool index -> index in wanted
    partner: dict[int, int] = {}  # index in wanted -> pool index
    for root in range(len(wanted)):
        reached_from: dict[int, int] = {}  # pool index -> the wanted index that reached it
        queue: list[int] = [root]
        free: int | None = None
        for current in queue:  # breadth-first search for an augmenting path (no recursion)
            for p in candidates[current]:
                if p in reached_from:
                    continue
                reached_from[p] = current
                if p not in owner:
                    free = p
                    break
                queue.append(owner[p])
            if free is not None:
                break
        while free is not None:  # flip the path: each wanted call on it takes the next pool call
            taker = reached_from[free]
            previous = partner.get(taker)
            owner[free], partner[taker] = taker, free
            free = previous  # None once the path reaches the root, which had no partner yet
    return [call for w, call in enumerate(wanted) if w not in partner]


def strict(expected: Sequence[Call], actual: Sequence[Call], args: ArgsMatcher) -> str | None:
    """The same calls in the same order."""
    for index in range(min(len(expected), len(actual))):
        want, got = expected[index], actual[index]
        if not _same(want, got, args):
            return f"call {index + 1}: expected {want}, got {got}"
    if len(expected) != len(actual):
        return f"expected {len(expected)} call(s), got {len(actual)}"
    return None


def unordered(expected: Sequence[Call], actual: Sequence[Call], args: ArgsMatcher) -> str | None:
    """The same calls in any order."""
    parts = []
    missing = _unmatched(expected, actual, args)
    if missing:
        parts.append(_missing(missing))
    extra = _unmatched(actual, expected, lambda a, e: args(e, a))
    if extra:
        parts.append(_unexpected(extra))
    return "; ".join(parts) or None


def subset(expected: Sequence[Call], actual: Sequence[Call], args: ArgsMatcher) -> str | None:
    """Every actual call is among the expected ones."""
    extra = _unmatched(actual, expected, lambda a, e: args(e, a))
    return _unexpected(extra) if extra else None


def superset(expected: Sequence[Call], actual: Sequence[Call], args: ArgsMatcher) -> str | None:
    """Every expected call was made."""
    missing = _unmatched(expected, actual, args)
    return _missing(missing) if missing else None


def _missing(calls: Sequence[Call]) -> str:
    return "missing " + ", ".join(str(call) for call in calls)


def _unexpected(calls: Sequence[Call]) -> str:
    return "unexpected " + ", ".join(str(call) for call in calls)


TRAJECTORY_MODES: dict[str, TrajectoryMatcher] = {
    "strict": strict,
    "unordered": unordered,
    "subset": subset,
    "superset": superset,
}
ARGS_MODES: dict[str, ArgsMatcher] = {"exact": exact_args, "partial": partial_args}


def compare_trajectory(
    expected: Sequence[Call], actual: Sequence[Call], *, mode: str = "strict", args: str = "exact"
) -> str | None:
    """None when ``actual`` matches ``expected``, else what differs."""
    matcher = TRAJECTORY_MODES.get(mode)
    args_matcher = ARGS_MODES.get(args)
    if matcher is None or args_matcher is None:
        reason = (
            f"unknown trajectory mode {mode!r} or args mode {args!r}; modes: "
            f"{', '.join(TRAJECTORY_MODES)}; args: {', '.join(ARGS_MODES)}"
        )
        field = "mode" if matcher is None else "args"
        raise InvalidInputError("trajectory comparison", [(field, reason)])
    return matcher(expected, actual, args_matcher)
